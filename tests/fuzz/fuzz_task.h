// fuzz_task.h: loading one task from a fuzzed file and checking what the scorer relies on:
// every item has an id, a context, 1..26+ non-NULL choices and a gold index among them; a ppl
// task has its text. A broken invariant aborts (the fuzzer reports it as a crash).
#ifndef HIFA4_FUZZ_TASK_H
#define HIFA4_FUZZ_TASK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/tasks/task.h"

// niah sizes its haystack in tokens; a fuzz run has no tokenizer: one token per 4 bytes
static int fz_count_tokens(void *ctx, const char *s, size_t n) {
    (void)ctx; (void)s;
    return (int)(n / 4);
}

static inline void fz_check_set(const struct task_set *s) {
    if (s->is_ppl) {
        if (s->text_len && !s->text) abort();
        return;
    }
    if (s->n_items < 0 || (s->n_items && !s->items)) abort();
    for (int i = 0; i < s->n_items; i++) {
        const struct task_item *it = &s->items[i];
        if (!it->id || !it->context || it->n_choices < 1 || !it->choices || it->gold < 0 || it->gold >= it->n_choices) {
            fprintf(stderr, "task %s item %d breaks the item invariants\n", s->name, i);
            abort();
        }
        for (int c = 0; c < it->n_choices; c++)
            if (!it->choices[c]) abort();
    }
}

static inline void fz_load_task(const char *name, const char *file, int skip_bad) {
    struct task_opts o = {.file = file, .skip_bad_rows = skip_bad, .seed = 1234, .limit = 0,
                          .count_tokens = fz_count_tokens, .niah_lengths = "16,64", .niah_per_cell = 1};
    struct task_set s;
    struct err e = {0};
    if (task_load(name, &s, &o, &e)) return;
    fz_check_set(&s);
    // a limit must keep the invariants too (mmlu and bbh limit per subject), applied as
    // task_load applies it, without reading the files again
    o.limit = 1;
    if (!strcmp(name, "mmlu") || !strcmp(name, "bbh")) task_apply_limit_per_subject(&s, &o);
    else if (!s.is_ppl) task_apply_limit(&s, &o);
    fz_check_set(&s);
    task_set_free(&s);
}

#endif
