// eval.h: request building and option-likelihood scoring (spec/tasks.md section 1). Turns the
// items of a task into packed token sequences, runs them through a forward function in large
// batches and scores every option in binary64. Knows no model, tokenizer or file format: the
// caller supplies an encode function and runs the packed batches through its model (the
// batch layout is model_forward's), so tests drive it with synthetic ones.
// Batch size and thread count never change a result: every number depends on one item only.
#ifndef HIFA4_EVAL_H
#define HIFA4_EVAL_H

#include <stdint.h>

#include "base/common.h"

// One multiple-choice item as eval sees it (a view of struct task_item; nothing is copied).
struct eval_item {
    const char *id;            // for error messages
    const char *context;       // exact prompt (may be "")
    int n_choices;
    char *const *choices;      // without the target delimiter
    int gold;
};

// Encodes text WITHOUT special tokens into a malloc'd id array (caller frees *ids); must be
// thread-safe (called from several pool threads at once, base/pool.h).
typedef int (*eval_encode_fn)(void *user, const char *text, size_t len, int32_t **ids, int *n,
                              struct err *e);
enum eval_bos { EVAL_BOS_AUTO = 0, EVAL_BOS_ON = 1, EVAL_BOS_OFF = 2 };

struct eval_plan_opts {
    const char *delim;   // target delimiter put before every choice (" " when NULL)
    int add_bos;         // 1: prepend bos_id to every encoding (the resolved --bos policy)
    int bos_id, eos_id;  // empty context -> [bos_id] (or [eos_id] when bos_id < 0)
    int window;          // context window: inputs keep their last `window` tokens
    int n_threads;       // pool threads for tokenization (<= 0: all of the pool)
};

// One (item, choice) request (spec/tasks.md section 1).
struct eval_req {
    int seq;          // sequence of the plan that carries its input
    int n_cont;       // continuation tokens
    int32_t *cont;    // [n_cont], owned by the plan
    int *row;         // [n_cont] global logits row (plan numbering) predicting cont[k]
    int n_chars;      // UTF-8 code points of the choice (without the delimiter)
};

// One distinct model input. Requests of an item with identical inputs share it (MMLU's single
// token options: one sequence, one logits row per item).
struct eval_seq {
    int32_t *tok;     // [n] owned by the plan
    int n;
    int row0, n_rows; // global rows [row0, row0 + n_rows) = positions pos[0..n_rows)
    int *pos;         // [n_rows] ascending positions in this sequence whose logits are scored
};

struct eval_plan {
    int n_items;
    int *item_req;   // [n_items + 1]: requests of item i are [item_req[i], item_req[i+1])
    int *item_seq;   // [n_items + 1]: sequences of item i
    int *gold;       // [n_items]
    struct eval_req *req;
    struct eval_seq *seq;
    int n_req, n_seq, n_rows;
    int64_t n_tokens;    // sum of sequence lengths (forward work per mode)
    int n_truncated;     // requests whose input was left-truncated to the window
    int max_seq_len;     // longest sequence
    int max_item_tokens; // most tokens of one item (a batch holds at least one item)
    int max_item_rows;   // most logits rows of one item
};

// Builds the requests of items [0, n_items). Errors name the item id and choice (a
// continuation without tokens; a continuation longer than the window). *out freed with
// eval_plan_free (safe on a zeroed or half-built plan).
int eval_plan_build(struct eval_plan *out, const struct eval_item *items, int n_items,
                    const struct eval_plan_opts *o, eval_encode_fn enc, void *enc_user,
                    struct err *e);
void eval_plan_free(struct eval_plan *p);

// Perplexity windows (spec/tasks.md section 2 `ppl`; lm-eval's rolling log-likelihood with
// non-overlapping windows): tok[0..n) is cut into windows of `ctx` predicted tokens; window k
// predicts tok[k*ctx, min((k+1)*ctx, n)) from the input [prefix_id] + tok[0, ctx-1) (k = 0) or
// tok[k*ctx-1, end-1) (k > 0), i.e. each window sees only its own tokens plus one. Every input
// position is scored. Each window is one item with one "choice" (gold 0); max_windows > 0 keeps
// the first max_windows windows. Errors: ctx < 1, n < 1, prefix_id < 0.
int eval_plan_build_ppl(struct eval_plan *out, const int32_t *tok, int n, int ctx, int prefix_id,
                        int max_windows, struct err *e);

// llama-perplexity's windows (`--ppl-score second-half`): L = [bos_id] + tok (no BOS when
// bos_id < 0) is cut into floor(|L| / ctx) windows of exactly ctx tokens; window k is
// L[k*ctx, (k+1)*ctx) with its first token replaced by bos_id (when >= 0), and only its second
// half is scored: the logits at positions [ctx/2, ctx-1) predict its tokens [ctx/2+1, ctx),
// ctx - 1 - ctx/2 per window; the first half is context only, and no logits are computed for it.
// Tokens after the last whole window are not scored. Errors: ctx < 4, |L| < ctx.
int eval_plan_build_ppl_half(struct eval_plan *out, const int32_t *tok, int n, int ctx, int bos_id,
                             int max_windows, struct err *e);

// The tokens of one request: the model input and the continuation (both malloc'd, caller
// frees); truncated = 1 when the input was cut to the context window.
struct eval_req_tokens {
    int32_t *inp;  // (n_inp)
    int n_inp;
    int32_t *cont; // (n_cont)
    int n_cont;
    int truncated;
};
// Splits one request exactly as spec/tasks.md section 1 (exposed for tests): context and
// choice -> *out (zeroed on error).
int eval_request_tokens(const char *context, const char *choice, const struct eval_plan_opts *o,
                        eval_encode_fn enc, void *enc_user, struct eval_req_tokens *out, struct err *e);

// ---- batches ----
// A run of consecutive items [item0, item1) packed into one forward call. Buffers are owned by
// the batch and reused by eval_batch_next; free with eval_batch_free.
struct eval_batch {
    int item0, item1;
    int n_seq, n_tok, n_out;
    int row_base;       // global row of logits row 0
    int32_t *tok;       // [n_tok]
    int *seq_len;       // [n_seq]
    int *out_pos;       // [n_out] packed row indices
    int cap_tok, cap_seq, cap_out;
};
// Takes items from item0 on, before item_end (clipped to the plan's items), while the batch
// stays within max_tokens tokens and max_out logits rows (always at least one item, so size
// buffers for max(max_out, max_item_rows)). Returns 0; b->item1 == item0 only at the end.
int eval_batch_next(struct eval_batch *b, const struct eval_plan *p, int item0, int item_end, int max_tokens,
                    int max_out, struct err *e);
void eval_batch_free(struct eval_batch *b);

// ---- scores ----
// One item under one mode. Arrays are malloc'd by eval_batch_score; eval_score_free releases.
struct eval_score {
    int n_choices, gold;
    double *ll;        // [n_choices] sum of binary64 log-softmax over continuation tokens
    int *n_tok;        // [n_choices] continuation tokens
    int *n_chars;      // [n_choices]
    int *greedy;       // [n_choices] every continuation token is the argmax (ties: lowest id)
    int pred;          // argmax ll (ties: lowest index; metrics_argmax)
    int pred_norm;     // argmax ll / n_chars
    double margin;     // top-1 minus top-2 of ll (NAN with one choice; metrics_margin)
    // token level vs the reference mode (eval_batch_compare); n_kl = 0 for the reference
    int n_kl;          // scored rows of this item
    double *kl;        // [n_kl] KL(ref || this) per row (metrics_kl_logits)
    int top1_same;     // rows whose argmax equals the reference's
    char *generated;   // niah's generation form: the decoded text (eval/run_generate.c), else NULL
};
void eval_score_free(struct eval_score *s);

// Scores the items of batch b from logits [b->n_out][vocab] (binary32) into out[item1-item0]
// (previous contents freed). Threads over items; results independent of thread count.
struct eval_logits {
    const float *v; // [b->n_out][vocab] binary32
    int vocab;
    double *lse;    // NULL, or receives each row's metrics_lse [b->n_out] for eval_batch_compare
};
int eval_batch_score(struct eval_score *out, const struct eval_plan *p, const struct eval_batch *b,
                     struct eval_logits lg, int n_threads, struct err *e);
// The logits of one batch under the reference mode and under the mode compared with it.
struct eval_logit_pair {
    const float *ref, *q;          // [b->n_out][vocab] each
    int vocab;
    const double *lse_ref, *lse_q; // [b->n_out] their rows' lse from eval_batch_score, or NULL
};
// Token-level comparison of this mode's logits lg.q with the reference's lg.ref (same batch):
// fills kl / n_kl / top1_same of out[item1-item0].
int eval_batch_compare(struct eval_score *out, const struct eval_plan *p, const struct eval_batch *b,
                       struct eval_logit_pair lg, int n_threads, struct err *e);

// Binary64 log-softmax of one binary32 row at token tok; *is_max = tok is the argmax.
double eval_logprob(const float *row, int vocab, int tok, int *is_max);

#endif
