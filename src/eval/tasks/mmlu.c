// mmlu.c: MMLU test (Hendrycks et al.), zero-shot, lm-evaluation-harness "mmlu" template
// (spec/tasks.md section 2). Reads the 57 headerless per-subject CSVs `<subject>_test.csv`
// (question,A,B,C,D,answer letter) from mmlu/data/test/ under a data root (or the directory
// given with --task-file), or one JSONL file {subject, question, choices[4], answer 0-3} given with
// --task-file. Items are ordered by subject name, then file row; item id "<subject>/<row>" (0-based).
// Task accuracy is the micro-average over items (eval's job); subject is kept per item.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/json_util.h"
#include "eval/tasks/task.h"

static const char *const k_subjects[57] = {
    "abstract_algebra", "anatomy", "astronomy", "business_ethics", "clinical_knowledge",
    "college_biology", "college_chemistry", "college_computer_science", "college_mathematics",
    "college_medicine", "college_physics", "computer_security", "conceptual_physics", "econometrics",
    "electrical_engineering", "elementary_mathematics", "formal_logic", "global_facts",
    "high_school_biology", "high_school_chemistry", "high_school_computer_science",
    "high_school_european_history", "high_school_geography", "high_school_government_and_politics",
    "high_school_macroeconomics", "high_school_mathematics", "high_school_microeconomics",
    "high_school_physics", "high_school_psychology", "high_school_statistics",
    "high_school_us_history", "high_school_world_history", "human_aging", "human_sexuality",
    "international_law", "jurisprudence", "logical_fallacies", "machine_learning", "management",
    "marketing", "medical_genetics", "miscellaneous", "moral_disputes", "moral_scenarios", "nutrition",
    "philosophy", "prehistory", "professional_accounting", "professional_law", "professional_medicine",
    "professional_psychology", "public_relations", "security_studies", "sociology",
    "us_foreign_policy", "virology", "world_religions",
};

static void human_subject(char *out, size_t n, const char *subject) {
    snprintf(out, n, "%s", subject);
    for (char *p = out; *p; p++)
        if (*p == '_') *p = ' ';
}

int task_mmlu_subject_count(void) { return 57; }
const char *task_mmlu_subject_name(int i) { return i >= 0 && i < 57 ? k_subjects[i] : NULL; }

static int push_mmlu(struct task_set *s, const char *subject, int row, const char *q,
                     const char *const ch[4], int gold) {
    char hs[256], id[320];
    human_subject(hs, sizeof hs, subject);
    snprintf(id, sizeof id, "%s/%d", subject, row);
    char *ctx = task_mmlu_prompt(hs, q, ch, 4);
    return task_push_item_own(s, id, subject, ctx, NULL, 4, gold);
}

static int load_csv(struct task_set *s, const char *path, const char *subject, const struct task_opts *o,
                    struct err *e) {
    char *buf = NULL;
    size_t len = 0;
    int rc = task_read_text(path, &buf, &len, e);
    if (rc) return rc;
    struct csv_reader r;
    csv_init(&r, buf, len, path);
    int row = 0, line = 0;
    for (;;) {
        rc = csv_next(&r, &line, e);
        if (rc <= 0) break;
        const char *bad = NULL;
        if (r.n_fields != 6) bad = "expected 6 fields question,A,B,C,D,answer";
        else if (strlen(r.fields[5]) != 1 || r.fields[5][0] < 'A' || r.fields[5][0] > 'D') bad = "answer is not A-D";
        if (bad) {
            rc = task_bad_row(s, o, e, path, line, "%s (got %d fields%s%s)", bad, r.n_fields,
                              r.n_fields == 6 ? ", answer " : "", r.n_fields == 6 ? r.fields[5] : "");
            if (rc) break;
            row++;
            continue;
        }
        const char *ch[4] = {r.fields[1], r.fields[2], r.fields[3], r.fields[4]};
        rc = push_mmlu(s, subject, row, r.fields[0], ch, r.fields[5][0] - 'A');
        if (rc) { rc = err_set(e, rc, "%s:%d: out of memory", path, line); break; }
        row++;
    }
    csv_free(&r);
    free(buf);
    return rc < 0 ? rc : 0;
}

// JSONL: rows are grouped by subject (stable), subjects sorted by name.
struct jrow { const char *subject; int line, row; cJSON *obj; };

static int cmp_jrow(const void *a, const void *b) {
    const struct jrow *x = a, *y = b;
    int c = strcmp(x->subject, y->subject);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

static int load_jsonl(struct task_set *s, const char *path, const struct task_opts *o, struct err *e) {
    char *buf = NULL;
    size_t len = 0;
    int rc = task_read_text(path, &buf, &len, e);
    if (rc) return rc;
    struct jrow *rows = NULL;
    int n = 0, cap = 0;
    struct task_lines it;
    task_lines_init(&it, buf, len);
    const char *lp;
    size_t ll;
    while (!rc && task_lines_next(&it, &lp, &ll)) {
        char ctx[600];
        snprintf(ctx, sizeof ctx, "%.500s:%d", path, it.lineno);
        cJSON *obj = NULL;
        struct err le = {0};
        const char *subj = NULL, *q = NULL;
        const cJSON *chs = NULL, *ans = NULL;
        int ok = task_jsonl_parse(&obj, lp, ll, ctx, &le) == 0 && cJSON_IsObject(obj) &&
                 json_need_str(obj, "subject", &subj, ctx, &le) == 0 &&
                 json_need_str(obj, "question", &q, ctx, &le) == 0 &&
                 json_need_arr(obj, "choices", &chs, ctx, &le) == 0;
        if (ok && cJSON_GetArraySize(chs) != 4) { ok = 0; err_set(&le, ERR_FORMAT, "%s: 'choices' must have 4 strings", ctx); }
        for (int c = 0; ok && c < 4; c++)
            if (!cJSON_IsString(cJSON_GetArrayItem(chs, c))) { ok = 0; err_set(&le, ERR_FORMAT, "%s: choices[%d] is not a string", ctx, c); }
        ans = ok ? cJSON_GetObjectItemCaseSensitive(obj, "answer") : NULL;
        if (ok && !(cJSON_IsNumber(ans) && ans->valuedouble >= 0 && ans->valuedouble <= 3 &&
                    ans->valuedouble == (int)ans->valuedouble) &&
            !(cJSON_IsString(ans) && strlen(ans->valuestring) == 1 && ans->valuestring[0] >= 'A' && ans->valuestring[0] <= 'D')) {
            ok = 0;
            err_set(&le, ERR_FORMAT, "%s: 'answer' must be 0-3 or A-D, got %s", ctx, json_brief(ans));
        }
        if (!ok) {
            if (!le.code) err_set(&le, ERR_FORMAT, "%s: not a JSON object", ctx);
            cJSON_Delete(obj);
            if (o->skip_bad_rows) { s->n_bad_rows++; log_warn("%s (row skipped, --skip-bad-rows)", le.msg); continue; }
            rc = err_set(e, ERR_FORMAT, "%s (--skip-bad-rows skips such rows)", le.msg);
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            struct jrow *nr = realloc(rows, (size_t)cap * sizeof *nr);
            if (!nr) { cJSON_Delete(obj); rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); break; }
            rows = nr;
        }
        rows[n++] = (struct jrow){subj, it.lineno, 0, obj};
    }
    if (!rc) {
        if (n > 1) qsort(rows, (size_t)n, sizeof *rows, cmp_jrow); // rows is NULL for an empty file (fuzz_task_jsonl)
        int row = 0;
        for (int i = 0; i < n && !rc; i++) {
            row = (i > 0 && strcmp(rows[i].subject, rows[i - 1].subject) == 0) ? row + 1 : 0;
            const cJSON *chs = cJSON_GetObjectItemCaseSensitive(rows[i].obj, "choices");
            const cJSON *ans = cJSON_GetObjectItemCaseSensitive(rows[i].obj, "answer");
            const char *ch[4];
            for (int c = 0; c < 4; c++) ch[c] = cJSON_GetArrayItem(chs, c)->valuestring;
            int gold = cJSON_IsNumber(ans) ? (int)ans->valuedouble : ans->valuestring[0] - 'A';
            const char *q = cJSON_GetObjectItemCaseSensitive(rows[i].obj, "question")->valuestring;
            if (push_mmlu(s, rows[i].subject, row, q, ch, gold))
                rc = err_set(e, ERR_NOMEM, "%s:%d: out of memory", path, rows[i].line);
        }
    }
    for (int i = 0; i < n; i++) cJSON_Delete(rows[i].obj);
    free(rows);
    free(buf);
    return rc;
}

int task_load_mmlu(struct task_set *s, const struct task_opts *o, struct err *e) {
    task_set_begin(s, "mmlu", TASK_METRIC_ACC, "lmeval-mmlu-v1", o);
    char dir[4096];
    int rc;
    if (o->file && (str_ends_with(o->file, ".jsonl") || str_ends_with(o->file, ".jsonl.zst"))) {
        if (!file_exists(o->file)) return err_set(e, ERR_NOTFOUND, "mmlu: --task-file %s: no such file", o->file);
        rc = load_jsonl(s, o->file, o, e);
        if (rc) return rc;
        task_source_add(s, "%s (JSONL)", o->file);
        task_apply_limit_per_subject(s, o);
        return 0;
    }
    if (o->file) {
        if (!dir_exists(o->file))
            return err_set(e, ERR_NOTFOUND, "mmlu: --task-file %s: expected a directory of <subject>_test.csv files or a .jsonl file", o->file);
        snprintf(dir, sizeof dir, "%s", o->file);
    } else if ((rc = task_data_find(dir, sizeof dir, o, "mmlu", "mmlu/data/test", 1, e))) {
        return rc;
    }
    for (int i = 0; i < 57; i++) {
        char name[256], path[4400];
        snprintf(name, sizeof name, "%s_test.csv", k_subjects[i]);
        if ((rc = path_join(path, sizeof path, dir, name, e))) return rc;
        if (!file_exists(path))
            return err_set(e, ERR_NOTFOUND, "mmlu: missing subject file %s (the test split needs all 57 "
                           "<subject>_test.csv files); run `hifa4-eval download --task mmlu`", path);
        if ((rc = load_csv(s, path, k_subjects[i], o, e))) return rc;
    }
    task_source_add(s, "%s/<subject>_test.csv x57 (CSV)", dir);
    task_apply_limit_per_subject(s, o);
    return 0;
}
