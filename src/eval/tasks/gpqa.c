// gpqa.c: GPQA diamond (198 questions), lm-evaluation-harness "gpqa_diamond_zeroshot" protocol
// (spec/tasks.md section 2). The data is not shipped (its authors ask that it not be
// redistributed in plain text): the loader reads gpqa/gpqa_diamond.csv (or
// gpqa/dataset/gpqa_diamond.csv, the layout of the authors' zip) under a data root, or --task-file.
// CSV with a header row; columns found by name: Question, Correct Answer, Incorrect Answer 1-3,
// and Record ID (optional, used as item id; else the 0-based row index).
// Options: [pre(Incorrect 1), pre(Incorrect 2), pre(Incorrect 3), pre(Correct)] (lm-eval's
// gpqa preprocess = the HellaSwag pre()), then a Fisher-Yates shuffle driven by splitmix64
// seeded from (seed, row index), so an item's order does not depend on other rows or --limit.
// Context "What is the correct answer to this question:" + Question + "\nChoices:\n(A) " + c1
// + ... + "\nAnswer:"; choices "(A)".."(D)"; gold = where the correct answer landed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/tasks/task.h"

static const char *const k_cols[5] = {"Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2",
                                      "Incorrect Answer 3"};
static const char *const k_letters[4] = {"(A)", "(B)", "(C)", "(D)"};

// The permutation for row `row` under `seed`: perm[k] = which original option sits at k
// (original order: incorrect 1-3 then correct = index 3).
void task_gpqa_perm(int perm[4], uint64_t seed, int row) {
    uint64_t st = seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(row + 1));
    for (int k = 0; k < 4; k++) perm[k] = k;
    for (int k = 3; k > 0; k--) {
        int j = (int)(task_rng_next(&st) % (uint64_t)(k + 1));
        int t = perm[k]; perm[k] = perm[j]; perm[j] = t;
    }
}

int task_load_gpqa_diamond(struct task_set *s, const struct task_opts *o, struct err *e) {
    task_set_begin(s, "gpqa_diamond", TASK_METRIC_ACC | TASK_METRIC_ACC_NORM, "lmeval-gpqa-zeroshot-v1", o);
    static const char *const rels[2] = {"gpqa/gpqa_diamond.csv", "gpqa/dataset/gpqa_diamond.csv"};
    char path[4096];
    int rc;
    if (o->file) {
        if (!file_exists(o->file)) return err_set(e, ERR_NOTFOUND, "gpqa_diamond: --task-file %s: no such file", o->file);
        snprintf(path, sizeof path, "%s", o->file);
    } else if (!task_data_try(path, sizeof path, o, rels[0], 0) && !task_data_try(path, sizeof path, o, rels[1], 0)) {
        int rc2 = task_data_missing(e, o, "gpqa_diamond", rels, 2);
        size_t k = strlen(e ? e->msg : "");
        if (e && k + 1 < sizeof e->msg)
            snprintf(e->msg + k, sizeof e->msg - k, " (GPQA is not redistributed: the download needs the "
                     "password of the authors' zip, github.com/idavidrein/gpqa)");
        return rc2;
    }
    char *buf = NULL;
    size_t len = 0;
    if ((rc = task_read_text(path, &buf, &len, e))) return rc;
    size_t off = (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) ? 3 : 0;  // UTF-8 BOM
    struct csv_reader r;
    csv_init(&r, buf + off, len - off, path);
    int line = 0, col[5], col_id = -1;
    rc = csv_next(&r, &line, e);
    if (rc == 0) rc = err_set(e, ERR_FORMAT, "%s: empty file (expected a header row)", path);
    if (rc > 0) {
        rc = 0;
        for (int k = 0; k < 5 && !rc; k++) {
            col[k] = -1;
            for (int f = 0; f < r.n_fields; f++)
                if (strcmp(r.fields[f], k_cols[k]) == 0) col[k] = f;
            if (col[k] < 0) rc = err_set(e, ERR_FORMAT, "%s:%d: header has no column '%s'", path, line, k_cols[k]);
        }
        for (int f = 0; f < r.n_fields; f++)
            if (strcmp(r.fields[f], "Record ID") == 0) col_id = f;
    }
    int row = 0;
    while (!rc) {
        rc = csv_next(&r, &line, e);
        if (rc <= 0) break;
        rc = 0;
        int need = 0;
        for (int k = 0; k < 5; k++) need = col[k] > need ? col[k] : need;
        if (r.n_fields <= need || (col_id >= 0 && r.n_fields <= col_id)) {
            rc = task_bad_row(s, o, e, path, line, "%d fields, header has more", r.n_fields);
            row++;
            continue;
        }
        char *opt[4] = {0};
        int ok = 1;
        for (int k = 0; k < 4 && ok; k++) ok = (opt[k] = task_hellaswag_pre(r.fields[col[k < 3 ? k + 2 : 1]])) != NULL;
        int perm[4];
        task_gpqa_perm(perm, o->seed, row);
        struct sbuf b = {0};
        int gold = -1;
        if (ok) ok = !sb_printf(&b, "What is the correct answer to this question:%s\nChoices:", r.fields[col[0]]);
        for (int k = 0; k < 4 && ok; k++) {
            ok = !sb_printf(&b, "\n%s %s", k_letters[k], opt[perm[k]]);
            if (perm[k] == 3) gold = k;
        }
        if (ok) ok = !sb_puts(&b, "\nAnswer:");
        char id[256];
        if (col_id >= 0 && r.fields[col_id][0]) snprintf(id, sizeof id, "%s", r.fields[col_id]);
        else snprintf(id, sizeof id, "%d", row);
        if (!ok) free(b.p);
        if (!ok || task_push_item_own(s, id, NULL, b.p, k_letters, 4, gold))
            rc = err_set(e, ERR_NOMEM, "%s:%d: out of memory", path, line);
        for (int k = 0; k < 4; k++) free(opt[k]);
        row++;
    }
    csv_free(&r);
    free(buf);
    if (rc < 0) return rc;
    task_source_add(s, "%s (GPQA CSV; options shuffled with seed %llu)", path, (unsigned long long)o->seed);
    task_apply_limit(s, o);
    return 0;
}
