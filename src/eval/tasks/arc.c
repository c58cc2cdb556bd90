// arc.c: ARC-Challenge (test, 1,172) and ARC-Easy (test, 2,376), lm-evaluation-harness
// protocol (spec/tasks.md section 2): context "Question: " + stem + "\nAnswer:", choices the
// choice texts, gold the index of answerKey among the labels (labels may be digits "1"-"4";
// 3-5 choices). Reads AI2 JSONL; the files that make the full sets are given by
// datasets/arc/SOURCE.md:
//  - arc_easy: arc/genmc/arc_easy/official/test.jsonl (complete; its `para` fields ignored);
//  - arc_challenge: arc/ai2-subset/ARC-Challenge-Test.jsonl (1,150) plus the 22 items of
//    arc/genmc/arc_challenge/official/test.jsonl whose answerKey is a digit, merged into the
//    original file order (both files are subsequences of it).
// --task-file FILE reads one complete AI2 JSONL instead. Item id = the AI2 id.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/json_util.h"
#include "eval/tasks/task.h"

struct arc_row {
    char *id;
    char *context;
    int n;
    char **choices;
    int gold;
    int digit_key;
};

struct arc_file { struct arc_row *rows; int n; };

static void row_free(struct arc_row *r) {
    free(r->id);
    free(r->context);
    for (int c = 0; c < r->n; c++) free(r->choices[c]);
    free(r->choices);
    memset(r, 0, sizeof *r);
}

static void arc_file_free(struct arc_file *f) {
    for (int i = 0; i < f->n; i++) row_free(&f->rows[i]);
    free(f->rows);
    memset(f, 0, sizeof *f);
}

// Parses one AI2 line into r (strings malloc'd). Returns 0, or ERR_FORMAT in le / ERR_NOMEM.
static int parse_row(struct arc_row *r, const char *lp, size_t ll, const char *ctx, struct err *le) {
    memset(r, 0, sizeof *r);
    cJSON *obj = NULL;
    const char *id = NULL, *stem = NULL, *key = NULL;
    const cJSON *q = NULL, *chs = NULL;
    int rc = task_jsonl_parse(&obj, lp, ll, ctx, le);
    if (!rc && !cJSON_IsObject(obj)) rc = err_set(le, ERR_FORMAT, "%s: not a JSON object", ctx);
    if (!rc) rc = json_need_str(obj, "id", &id, ctx, le);
    if (!rc) rc = json_need_obj(obj, "question", &q, ctx, le);
    if (!rc) rc = json_need_str(q, "stem", &stem, ctx, le);
    if (!rc) rc = json_need_arr(q, "choices", &chs, ctx, le);
    if (!rc) rc = json_need_str(obj, "answerKey", &key, ctx, le);
    int n = rc ? 0 : cJSON_GetArraySize(chs);
    if (!rc && (n < 2 || n > 26)) rc = err_set(le, ERR_FORMAT, "%s: id %s: %d choices (expected 2-26)", ctx, id, n);
    if (!rc) {
        r->choices = calloc((size_t)n, sizeof *r->choices);
        if (!r->choices) rc = ERR_NOMEM;
    }
    r->gold = -1;
    for (int c = 0; c < n && !rc; c++) {
        const cJSON *ch = cJSON_GetArrayItem(chs, c);
        const char *text = NULL, *label = NULL;
        char cctx[700];
        snprintf(cctx, sizeof cctx, "%s: choices[%d]", ctx, c);
        if (!cJSON_IsObject(ch)) { rc = err_set(le, ERR_FORMAT, "%s: not an object", cctx); break; }
        if ((rc = json_need_str(ch, "text", &text, cctx, le)) || (rc = json_need_str(ch, "label", &label, cctx, le))) break;
        if (strcmp(label, key) == 0) {
            if (r->gold >= 0) { rc = err_set(le, ERR_FORMAT, "%s: id %s: label '%s' appears twice", ctx, id, label); break; }
            r->gold = c;
        }
        if (!(r->choices[c] = str_dup(text))) rc = ERR_NOMEM;
        r->n = c + 1;
    }
    if (!rc && r->gold < 0) rc = err_set(le, ERR_FORMAT, "%s: id %s: answerKey '%s' is not one of the choice labels", ctx, id, key);
    if (!rc) {
        struct sbuf b = {0};
        if (sb_printf(&b, "Question: %s\nAnswer:", stem)) rc = ERR_NOMEM;
        r->context = b.p;
        r->id = str_dup(id);
        if (!r->id) rc = ERR_NOMEM;
        r->digit_key = key[0] >= '0' && key[0] <= '9';
    }
    cJSON_Delete(obj);
    if (rc) row_free(r);
    return rc;
}

static int read_arc(struct arc_file *f, struct task_set *s, const char *path, const struct task_opts *o,
                    struct err *e) {
    memset(f, 0, sizeof *f);
    char *buf = NULL;
    size_t len = 0;
    int rc = task_read_text(path, &buf, &len, e);
    if (rc) return rc;
    struct task_lines it;
    task_lines_init(&it, buf, len);
    const char *lp;
    size_t ll;
    int cap = 0;
    while (!rc && task_lines_next(&it, &lp, &ll)) {
        char ctx[600];
        snprintf(ctx, sizeof ctx, "%.500s:%d", path, it.lineno);
        struct arc_row r;
        struct err le = {0};
        int r1 = parse_row(&r, lp, ll, ctx, &le);
        if (r1 == ERR_NOMEM || (r1 && !le.code)) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", ctx); break; }
        if (r1) {
            if (o->skip_bad_rows) { s->n_bad_rows++; log_warn("%s (row skipped, --skip-bad-rows)", le.msg); continue; }
            rc = err_set(e, ERR_FORMAT, "%s (--skip-bad-rows skips such rows)", le.msg);
            break;
        }
        if (f->n == cap) {
            cap = cap ? cap * 2 : 1024;
            struct arc_row *nr = realloc(f->rows, (size_t)cap * sizeof *nr);
            if (!nr) { row_free(&r); rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); break; }
            f->rows = nr;
        }
        f->rows[f->n++] = r;
    }
    free(buf);
    if (rc) arc_file_free(f);
    return rc;
}

static int push_row(struct task_set *s, const struct arc_row *r) {
    return task_push_item(s, r->id, NULL, r->context, (const char *const *)r->choices, r->n, r->gold);
}

static int find_id(const struct arc_file *f, const char *id) {
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->rows[i].id, id) == 0) return i;
    return -1;
}

static int load_one(struct task_set *s, const char *path, const struct task_opts *o, struct err *e) {
    struct arc_file f;
    int rc = read_arc(&f, s, path, o, e);
    for (int i = 0; i < f.n && !rc; i++)
        if (push_row(s, &f.rows[i])) rc = err_set(e, ERR_NOMEM, "%s: out of memory", path);
    arc_file_free(&f);
    return rc;
}

int task_load_arc_easy(struct task_set *s, const struct task_opts *o, struct err *e) {
    task_set_begin(s, "arc_easy", TASK_METRIC_ACC | TASK_METRIC_ACC_NORM, "lmeval-arc-v1", o);
    char path[4096];
    int rc;
    if (o->file) {
        if (!file_exists(o->file)) return err_set(e, ERR_NOTFOUND, "arc_easy: --task-file %s: no such file", o->file);
        snprintf(path, sizeof path, "%s", o->file);
    } else if ((rc = task_data_find(path, sizeof path, o, "arc_easy", "arc/genmc/arc_easy/official/test.jsonl", 0, e))) {
        return rc;
    }
    if ((rc = load_one(s, path, o, e))) return rc;
    task_source_add(s, "%s (AI2 JSONL)", path);
    task_apply_limit(s, o);
    return 0;
}

int task_load_arc_challenge(struct task_set *s, const struct task_opts *o, struct err *e) {
    task_set_begin(s, "arc_challenge", TASK_METRIC_ACC | TASK_METRIC_ACC_NORM, "lmeval-arc-v1", o);
    int rc;
    if (o->file) {
        if (!file_exists(o->file)) return err_set(e, ERR_NOTFOUND, "arc_challenge: --task-file %s: no such file", o->file);
        if ((rc = load_one(s, o->file, o, e))) return rc;
        task_source_add(s, "%s (AI2 JSONL)", o->file);
        task_apply_limit(s, o);
        return 0;
    }
    static const char *const rels[2] = {"arc/ai2-subset/ARC-Challenge-Test.jsonl",
                                        "arc/genmc/arc_challenge/official/test.jsonl"};
    char pa[4096], pg[4096];
    if (!task_data_try(pa, sizeof pa, o, rels[0], 0)) return task_data_missing(e, o, "arc_challenge", &rels[0], 1);
    if (!task_data_try(pg, sizeof pg, o, rels[1], 0)) return task_data_missing(e, o, "arc_challenge", &rels[1], 1);
    struct arc_file a, g;
    if ((rc = read_arc(&a, s, pa, o, e))) return rc;
    if ((rc = read_arc(&g, s, pg, o, e))) { arc_file_free(&a); return rc; }
    // Keep from genmc only the digit-key items absent from ai2-subset; then merge the two
    // subsequences of the original order: take a common id from both, else an ai2-only id, else
    // a genmc-only (digit) id.
    int *in_a = calloc((size_t)g.n + 1, sizeof *in_a);
    if (!in_a) rc = err_set(e, ERR_NOMEM, "arc_challenge: out of memory");
    for (int j = 0; j < g.n && !rc; j++) in_a[j] = find_id(&a, g.rows[j].id) >= 0;
    int i = 0, j = 0, n_digit = 0;
    while (!rc && (i < a.n || j < g.n)) {
        if (j >= g.n) {
            rc = push_row(s, &a.rows[i++]);
        } else if (!in_a[j]) {
            if (g.rows[j].digit_key) { rc = push_row(s, &g.rows[j]); n_digit++; }
            j++;  // a letter-key item missing from ai2-subset is not expected; never used
        } else if (i >= a.n) {
            j++;  // common item already emitted (only if the two orders disagree)
        } else if (strcmp(a.rows[i].id, g.rows[j].id) == 0) {
            rc = push_row(s, &a.rows[i++]);
            j++;
        } else {
            rc = push_row(s, &a.rows[i++]);  // ai2-only item, before the next common one
        }
        if (rc) rc = err_set(e, ERR_NOMEM, "arc_challenge: out of memory");
    }
    free(in_a);
    if (!rc) {
        task_source_add(s, "%s (AI2 JSONL, %d items)", pa, a.n);
        task_source_add(s, "%s (AI2 JSONL, the %d digit-label items only)", pg, n_digit);
    }
    arc_file_free(&a);
    arc_file_free(&g);
    if (rc) return rc;
    task_apply_limit(s, o);
    return 0;
}
