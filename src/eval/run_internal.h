// run_internal.h: the state of one run, shared by run_open.c (opening and checks), run.c
// (scoring and finish) and run_record.c (run.json). Not a public API: only src/eval/run*.c
// include it.
#ifndef HIFA4_RUN_INTERNAL_H
#define HIFA4_RUN_INTERNAL_H

#include "attention/cost.h"
#include "eval/cached.h"
#include "eval/eval.h"
#include "eval/run.h"
#include "results/results.h"
#include "tokenizer/tokenizer.h"

// The run's modes are indices into run_opts.modes; the first is the reference every other
// mode is compared against (KL, flips).
enum { RUN_REF_MODE = 0 };

struct run_mode_acc {              // per mode, over this invocation
    double forward_s;
    int64_t nonfinite;             // items with a non-finite log-likelihood (--nonfinite count)
    int64_t calls, tokens;         // attention calls (sequence x layer x head) and their rows
    int64_t calls_per_layer[ATTN_MAX_LAYERS];
    struct cost_counts cost;       // emulated Ascend work counts (spec/cost.md section 1)
    int64_t tokens_input;          // positions of the scored sequences (what an uncached run computes)
    int64_t rows_scored;           // logits rows scored
    struct cached_stats cached;    // with the prefix cache: positions computed, stored, calls
    int64_t gen_items, gen_tokens; // greedy decoding: contexts decoded from, tokens decoded
    double prefill_s, decode_s;    // their wall seconds: up to each first token, and after it
};

struct run {
    struct run_opts o;
    double t_start, t_load;
    // read before the weights (run_open.c): every check a user can fail comes first
    struct model_config cfg;       // config.json
    char model_hex[65];            // checkpoint fingerprint (st_fingerprint = model_hash)
    char weights_hex[65];          // every byte of the checkpoint (io/fingerprint.h, version 2): the identity's
    cJSON *ckpt_meta;              // the checkpoint's safetensors __metadata__ (provenance), or NULL
    cJSON *old;                    // run.json already in out_dir (--resume), until run_record_open
    // model and tokenizer
    struct model *model;
    struct model_opts mo;          // as opened (max_tokens may grow for a long item)
    struct attn_ctx *attn[RUN_MAX_MODES]; // one attention context per mode, made once at open
    struct model_kv *kv;           // the prefix cache (NULL: --no-prefix-cache or not applicable)
    struct tokenizer *tok;
    char tok_hex[65];
    int vocab, add_bos;
    float *scales;                 // [n_layers][Hkv][head_dim] or NULL
    char scales_hex[65];
    // tasks: sets[t] holds the items, plans[t] their requests (this shard's items only)
    struct task_set *sets;
    struct eval_plan *plans;
    int *item_lo;                  // first item of each task in this shard
    double *tok_s;                 // tokenization seconds per task
    int ppl_ctx, ppl_half;
    int max_items;
    // batches
    int max_tokens, max_out, out_cap;
    struct eval_batch batch;
    struct eval_score *scores;     // [max_items]
    float *logits_ref, *logits_q;  // [out_cap][vocab] each (q only with several modes)
    double *lse_ref, *lse_q;       // [out_cap] their rows' log-sum-exp (eval_batch_score's lg.lse; q as above)
    // the run directory
    char out_dir[4096], json_path[4096];
    int lock_fd;                   // results_lock of out_dir, held until run_free (-1: none)
    int continued;                 // --resume found a run.json to continue (else: a new run)
    int made_dir;                  // out_dir did not exist: removed again if the run fails before run.json
    int json_written;              // run.json of this run is on disk
    cJSON *json;                   // run.json as being written
    cJSON *carry;                  // --resume of a complete run: its measurements, kept
    struct results_writer writers[RUN_MAX_MODES];
    struct results_buf *sink;      // run_task_score_lines: lines go here ([n_modes]), not to writers
    struct run_mode_acc acc[RUN_MAX_MODES];
    // replicas (run_set_replica): the current one; replica 0's accumulators while others run
    int rep;
    int acc0_saved;
    struct run_mode_acc acc0[RUN_MAX_MODES];
    // progress
    int next;                      // next item of the task being scored
    int64_t done, total, resumed, processed;
    run_progress_fn progress;
    void *progress_user;
};

// Adds the counts and seconds of a to *to (a distributed run sums its ranks' work); a count
// that would overflow is ERR_RANGE (cost_add).
int run_acc_add(struct run_mode_acc *to, const struct run_mode_acc *a, struct err *e);

// The samples file of mode m in the current replica (r->rep) of task t, and (st not NULL) the
// stamp it carries (results/stamp.h).
struct results_stamp;
int run_samples_file(char *out, size_t n, struct results_stamp *st, const struct run *r, int t, int m, struct err *e);

// run.c, for run_generate.c: the attention calls just run under mode m (from its context's
// statistics, then reset); the emulated cost counts of the current batch's sequences under
// mode m (scoring only); the batch's samples under mode m.
void run_count_calls(struct run *r, int m);
int run_count_cost(struct run *r, int m, struct err *e);
// 1 if mode m may continue cached prefixes; 0 for modes with no exact cached prefix (NVFP4 with
// Q, K or V quantized, sage3: attn.h ATTN_ALIGN_NONE), which score every sequence whole.
int run_mode_reuses(const struct run *r, int m);
int run_write_samples(struct run *r, int t, int m, struct err *e);
// The current batch of a task scored by greedy decoding (task_set.generate: niah's generation
// form) under every mode, into r->scores and the samples files (run_generate.c).
int run_generate_batch(struct run *r, int t, struct err *e);

// run.json of a new run (run_record.c): everything needed to reproduce it, with "resume_key"
// and "complete": false; checks an old run.json for --resume (ERR_MISMATCH if the key
// differs; keeps the measurements of a complete one in r->carry).
int run_record_open(struct run *r, cJSON *old, struct err *e);
// Adds timings, hook coverage and cost counts (or the carried ones when nothing was scored).
void run_record_finish(struct run *r);

#endif
