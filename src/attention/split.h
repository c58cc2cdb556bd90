// split.h: how attn_forward cuts one layer call of a packed batch into pool tasks. Internal to
// src/attention/ (attn.c and the tests). A task computes the rows [r0, r1) of the query heads
// [h0, h1) - all inside one kv head's group - of one sequence. No split changes a bit: rows
// are independent (spec/attention.md section 2), every task cuts key tiles and query tiles at
// the multiples of Bc the whole call would use, and range edges sit on query-tile starts (so a
// channel-form mean is always over its whole tile and V's groups are whole).
#ifndef HIFA4_ATTN_SPLIT_H
#define HIFA4_ATTN_SPLIT_H

#include "attention/attn.h"

struct attn_task {
    int s, h0, h1, r0, r1;
    double work; // estimated cost (for the largest-first order)
};

struct attn_split_in {
    const int *seq_len;
    const struct attn_past *past; // may be NULL
    int n_seq, H, Hkv, d, tile, window, n_threads;
};

// Many (sequence, kv head) pairs (at least 4 per thread): returns 0 and the caller runs one task
// per pair, t -> sequence t / Hkv, kv head t % Hkv, all its query heads and rows (nothing is
// computed twice). Otherwise fills tasks[] (room for attn_split_cap entries), sorted largest
// first, and returns their count: a sequence whose new rows span two or more query tiles is cut
// into row ranges of about equal causal work on tile starts (each task prepares K and V of keys
// [0, r1) once for its whole group of query heads); a sequence within one tile (decoding) splits
// its group's query heads instead, as many ways as needed to give every thread work.
int attn_split(struct attn_task *tasks, const struct attn_split_in *in);
// Room attn_split may need for n_threads threads and g query heads per kv head.
int attn_split_cap(int n_threads, int g);
// Estimated work of the call (visible (row, key) pairs x H x d, plus preparing K and V): below a
// threshold attn_forward runs on the calling thread.
double attn_split_work(const struct attn_split_in *in);

#endif
