// generate.h: greedy decoding (niah's generation form, paper Table 4). With a cache
// each step computes only the rows after the last aligned cached position and stores the rows
// that became final (the decoding paragraph of model.h's cache rule), so a step's logits - and
// the decoded tokens - are bit-identical to recomputing the whole sequence every step, which is
// what the function does without a cache (the reference, `--no-prefix-cache`).
#ifndef HIFA4_GENERATE_H
#define HIFA4_GENERATE_H

#include <stdint.h>

#include "base/common.h"
#include "eval/cached.h"
#include "model/model.h"

struct gen_stats {
    int64_t tokens;  // positions computed (every row of every forward call)
    int64_t stored;  // of those, stored in the cache
    int64_t calls;   // forward calls
    int64_t steps;   // tokens decoded
    double prefill_s; // wall seconds up to the first decoded token (the context's forward)
    double decode_s;  // wall seconds of the steps after it (steps - 1 tokens: decoding speed)
};

// A decoding request: the context tokens tok[0..n), up to max_new tokens to decode, stopping
// after eos_id (>= 0; -1: none).
struct gen_req {
    const int32_t *tok;
    int n, max_new, eos_id;
};

// Greedy-decodes up to q->max_new tokens after the context under the model and attention
// context of g: each token the argmax of the last row's binary32 logits (ties: the lowest id);
// stops after eos_id is decoded or when the sequence reaches the model's window. g->kv NULL:
// each step is one model_forward over the whole sequence (needs n + max_new - 1 <= max_tokens);
// else the cache's rows [0, ...) are overwritten (it needs floor_A(n + max_new) rows) and
// contexts longer than max_tokens are prefilled in aligned chunks. out: [max_new]; *n_out
// tokens decoded. Errors: an empty context or one longer than the model's window (ERR_RANGE
// naming both), logits that are not finite (ERR_RANGE), a cache too small (ERR_RANGE).
int gen_greedy(const struct cached_model *g, const struct gen_req *q, int32_t *out, int *n_out, struct gen_stats *st,
               struct err *e);

// What the cache holds after a gen_greedy_after call: the tokens of the last sequence decoded
// (context + decoded tokens) and how many of its positions are stored. Zero it to start (and
// again whenever the cache's rows are overwritten by anything else, e.g. another mode).
struct gen_prev {
    int32_t *tok; // owned; free with gen_prev_free
    int n, stored;
};
void gen_prev_free(struct gen_prev *p);

// gen_greedy that reuses the cached rows of the previous sequence (prev) its context shares:
// positions [0, p) with p = the longest common prefix of the two sequences, floored to the
// attention alignment, capped at what prev stored and at n - 1 (the last row is always
// computed). Those rows depend only on tokens [0, p) (model.h's cache rule), so the decoded
// tokens are bit-identical to gen_greedy's. niah's depths share their haystack up to the needle.
// g->kv NULL or prev NULL: gen_greedy. On success prev describes this sequence.
int gen_greedy_after(const struct cached_model *g, struct gen_prev *prev, const struct gen_req *q, int32_t *out,
                     int *n_out, struct gen_stats *st, struct err *e);

#endif
