// prefix.h: exact prefix sharing for option scoring. Turns the sequences of a batch
// of items into a schedule of packed forward calls over the KV cache of model.h: what runs once
// (a prefix shared by a group of items - BBH's fixed examples, few-shot prompts, a shared
// instruction - and each item's context shared by its options) and what runs once per
// sequence, under the cache rule for an alignment A (attn_ctx_align of the mode's context). Model-free: it reads
// token ids and the plan's scored positions only; cached.c runs the schedule.
//
// The plan (per batch [item0, item1)):
//  - item i: P_i = floor_A(min(LCP of its sequences, first scored position)): the positions its
//    sequences share and that need no logits (lm-eval's context/continuation split is the
//    plan's; only the tokens decide what is shared, so every sequence is computed exactly).
//  - groups: consecutive items whose P's share a long aligned prefix R (joined while the shared
//    part c of the next item with the group keeps 2c >= R, c > 0, and the next item shares no
//    more with the one after it than with the group - so BBH's subtasks and few-shot blocks
//    form groups and unrelated questions do not); a group of two or more items has a root
//    [0, R) computed once.
//  - an item with two or more sequences has a node [R, P_i) (R = 0 without a root);
//  - every sequence a leaf: its remaining positions, computed with their logits against the
//    root and the item node (rows [floor_A(context), context) are thus recomputed with every
//    continuation, the row predicting the first continuation token included). A leaf longer
//    than max_tokens first stores its own aligned prefix (a private node).
// Roots and nodes are stored in the cache (rows [0, store_rows)) and computed in aligned chunks
// of at most max_tokens positions (chunked prefill); items are processed in sub-batches whose
// stored rows fit the cache, a group's root staying resident while its items fill the rest.
// Each call holds pieces of one kind: stored pieces (no logits) or leaves, whose scored rows are
// a consecutive run of the batch's logits rows in plan order.
#ifndef HIFA4_PREFIX_H
#define HIFA4_PREFIX_H

#include <stdint.h>

#include "base/common.h"
#include "eval/eval.h"
#include "model/model.h"

struct prefix_piece {
    int call;                 // forward call that computes it (pieces are ordered by call)
    int seq;                  // plan sequence whose tokens [start, end) it computes
    int start, end;           // positions
    struct attn_past past;    // cached positions [0, start) (store rows)
    int save_row, save_n;     // stored rows (save_n = end - start), or 0 for a leaf
    int n_out;                // leaf: its scored positions (the sequence's pos[], all >= start)
    int out_row;              // leaf: batch logits row of its first scored position
};

struct prefix_sched {
    int n_pieces, n_calls;
    struct prefix_piece *pieces;
    int64_t tokens;           // positions computed (sum of end - start)
    int64_t stored;           // of those, positions stored (roots, nodes)
    int n_groups, n_sub;      // groups with a root; sub-batches
};

// The items a schedule covers: [item0, item1) of the plan, whose first scored row is batch
// logits row 0 at plan row row_base.
struct prefix_window {
    int item0, item1, row_base;
};
// What bounds it: the attention alignment, the cache's rows, the rows of one forward call.
struct prefix_limits {
    int align, store_rows, max_tokens;
};
// Builds the schedule of the window w of plan p. Errors: max_tokens below the alignment, a
// continuation that cannot fit max_tokens, a cache too small for one item (ERR_RANGE naming
// the item).
int prefix_schedule(struct prefix_sched *s, const struct eval_plan *p, const struct prefix_window *w,
                    const struct prefix_limits *lim, struct err *e);
void prefix_sched_free(struct prefix_sched *s); // safe on a zeroed schedule

// Cache rows the schedules of plan p need at most (any alignment up to align_max, any batch):
// the longest sequence (a root with one item's nodes) plus one batch of max_tokens stored
// positions, or more when one item's private nodes need more (leaves that go on for more than
// max_tokens after the item's shared context: an item of one long sequence, or options that
// part early).
int prefix_store_rows(const struct eval_plan *p, int max_tokens, int align_max);

#endif
