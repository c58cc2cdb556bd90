// hellaswag.c: HellaSwag validation (10,042 items), lm-evaluation-harness protocol
// (spec/tasks.md section 2). Two forms:
//  - JSONL {activity_label, ctx_a, ctx_b, endings[4], label}: context
//    pre(activity_label + ": " + ctx_a + " " + cap(ctx_b)), choices pre(ending_i);
//  - the llama.cpp 6-line text form (hellaswag/hellaswag_val_full.txt.zst, the only form in
//    ../shared): line 1 the already preprocessed context, line 2 the gold index, lines 3-6 the
//    endings, all used as they are. Its extractor's tag stripping differs slightly from pre()
//    (datasets/hellaswag/SOURCE.md), so the form read is recorded in task_set.source.
// The JSONL form is preferred when present. Item id = 0-based index in file order (same in
// both forms). Metrics acc and acc_norm.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <utf8proc.h>

#include "base/json_util.h"
#include "eval/tasks/task.h"

// ---- preprocessing (lm-eval hellaswag utils.preprocess / str.capitalize) ----
char *task_hellaswag_pre(const char *in) {
    char *s = task_strip(in, strlen(in));
    if (!s) return NULL;
    struct sbuf a = {0}, b = {0};
    int rc = 0;
    // " [title]" -> ". "
    for (const char *p = s; *p && !rc;) {
        if (strncmp(p, " [title]", 8) == 0) { rc = sb_puts(&a, ". "); p += 8; }
        else { rc = sb_putn(&a, p, 1); p++; }
    }
    // delete every "[...]": regex \[.*?\] ('.' does not match a newline)
    const char *t = a.p ? a.p : "";
    for (const char *p = t; *p && !rc;) {
        if (*p == '[') {
            const char *q = p + 1;
            while (*q && *q != ']' && *q != '\n') q++;
            if (*q == ']') { p = q + 1; continue; }
        }
        rc = sb_putn(&b, p, 1);
        p++;
    }
    // "  " -> " " (one left-to-right pass, like str.replace)
    struct sbuf c = {0};
    t = b.p ? b.p : "";
    for (const char *p = t; *p && !rc;) {
        if (p[0] == ' ' && p[1] == ' ') { rc = sb_putn(&c, " ", 1); p += 2; }
        else { rc = sb_putn(&c, p, 1); p++; }
    }
    free(s);
    free(a.p);
    free(b.p);
    if (rc) { free(c.p); return NULL; }
    return sb_take(&c);
}

// Python str.capitalize() (3.8+): first code point to title case, the rest to lower case.
// Uses utf8proc's simple case mappings (Python applies the full SpecialCasing mappings, which
// differ only for a few characters such as U+0130 and final sigma); invalid UTF-8 is copied.
char *task_py_capitalize(const char *in) {
    struct sbuf b = {0};
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)in;
    utf8proc_ssize_t n = (utf8proc_ssize_t)strlen(in), i = 0;
    int first = 1, rc = 0;
    while (i < n && !rc) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate(p + i, n - i, &c);
        if (k <= 0) { rc = sb_putn(&b, in + i, 1); i++; first = 0; continue; }
        c = first ? utf8proc_totitle(c) : utf8proc_tolower(c);
        first = 0;
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t m = utf8proc_encode_char(c, enc);
        rc = sb_putn(&b, (const char *)enc, (size_t)m);
        i += k;
    }
    if (rc) { free(b.p); return NULL; }
    return sb_take(&b);
}

// ---- text form ----
static int load_text(struct task_set *s, const char *path, const struct task_opts *o, struct err *e) {
    char *buf = NULL;
    size_t len = 0;
    int rc = task_read_text(path, &buf, &len, e);
    if (rc) return rc;
    const char *p = buf, *end = buf + len;
    int line = 0, idx = 0;
    while (p < end && !rc) {
        char *l[6] = {0};
        int first = line + 1, got = 0;
        for (; got < 6 && p < end; got++) {
            size_t n = task_line_len(p, end);
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            l[got] = malloc(n + 1);
            if (!l[got]) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); break; }
            memcpy(l[got], p, n);
            l[got][n] = 0;
            line++;
            p = nl ? nl + 1 : end;
        }
        if (!rc && got < 6) {
            rc = err_set(e, ERR_FORMAT, "%s:%d: truncated task: %d of 6 lines (context, gold 0-3, 4 endings)",
                         path, first, got);
        } else if (!rc) {
            int gold = (strlen(l[1]) == 1 && l[1][0] >= '0' && l[1][0] <= '3') ? l[1][0] - '0' : -1;
            if (gold < 0) {
                rc = task_bad_row(s, o, e, path, first + 1, "gold label must be 0-3, got '%.40s'", l[1]);
            } else {
                char id[32];
                snprintf(id, sizeof id, "%d", idx);
                const char *ch[4] = {l[2], l[3], l[4], l[5]};
                if (task_push_item(s, id, NULL, l[0], ch, 4, gold))
                    rc = err_set(e, ERR_NOMEM, "%s:%d: out of memory", path, first);
            }
            idx++;
        }
        for (int k = 0; k < 6; k++) free(l[k]);
    }
    free(buf);
    return rc;
}

// ---- JSONL form ----
static int load_jsonl(struct task_set *s, const char *path, const struct task_opts *o, struct err *e) {
    char *buf = NULL;
    size_t len = 0;
    int rc = task_read_text(path, &buf, &len, e);
    if (rc) return rc;
    struct task_lines it;
    task_lines_init(&it, buf, len);
    const char *lp;
    size_t ll;
    int idx = 0;
    while (!rc && task_lines_next(&it, &lp, &ll)) {
        char ctx[600];
        snprintf(ctx, sizeof ctx, "%.500s:%d", path, it.lineno);
        struct err le = {0};
        cJSON *obj = NULL;
        const char *act = NULL, *ca = NULL, *cb = NULL;
        const cJSON *ends = NULL;
        int ok = task_jsonl_parse(&obj, lp, ll, ctx, &le) == 0 && cJSON_IsObject(obj) &&
                 json_need_str(obj, "activity_label", &act, ctx, &le) == 0 &&
                 json_need_str(obj, "ctx_a", &ca, ctx, &le) == 0 &&
                 json_need_str(obj, "ctx_b", &cb, ctx, &le) == 0 &&
                 json_need_arr(obj, "endings", &ends, ctx, &le) == 0;
        if (ok && cJSON_GetArraySize(ends) != 4) { ok = 0; err_set(&le, ERR_FORMAT, "%s: 'endings' must have 4 strings", ctx); }
        for (int c = 0; ok && c < 4; c++)
            if (!cJSON_IsString(cJSON_GetArrayItem(ends, c))) { ok = 0; err_set(&le, ERR_FORMAT, "%s: endings[%d] is not a string", ctx, c); }
        int gold = -1;
        if (ok) {
            const cJSON *lab = cJSON_GetObjectItemCaseSensitive(obj, "label");
            if (cJSON_IsNumber(lab) && lab->valuedouble == (int)lab->valuedouble) gold = (int)lab->valuedouble;
            else if (cJSON_IsString(lab) && strlen(lab->valuestring) == 1) gold = lab->valuestring[0] - '0';
            if (gold < 0 || gold > 3) { ok = 0; err_set(&le, ERR_FORMAT, "%s: 'label' must be 0-3, got %s", ctx, json_brief(lab)); }
        }
        if (!ok) {
            if (!le.code) err_set(&le, ERR_FORMAT, "%s: not a JSON object", ctx);
            cJSON_Delete(obj);
            if (o->skip_bad_rows) { s->n_bad_rows++; log_warn("%s (row skipped, --skip-bad-rows)", le.msg); idx++; continue; }
            rc = err_set(e, ERR_FORMAT, "%s (--skip-bad-rows skips such rows)", le.msg);
            break;
        }
        struct sbuf raw = {0};
        char *capb = task_py_capitalize(cb);
        int r2 = !capb || sb_printf(&raw, "%s: %s %s", act, ca, capb);
        free(capb);
        char *ctxs = r2 ? NULL : task_hellaswag_pre(raw.p);
        free(raw.p);
        char *ch[4] = {0};
        int okc = ctxs != NULL;
        for (int c = 0; c < 4 && okc; c++) okc = (ch[c] = task_hellaswag_pre(cJSON_GetArrayItem(ends, c)->valuestring)) != NULL;
        char id[32];
        snprintf(id, sizeof id, "%d", idx++);
        if (!okc || task_push_item_own(s, id, NULL, ctxs, (const char *const *)ch, 4, gold)) {
            if (!okc) free(ctxs);
            rc = err_set(e, ERR_NOMEM, "%s: out of memory", ctx);
        }
        for (int c = 0; c < 4; c++) free(ch[c]);
        cJSON_Delete(obj);
    }
    free(buf);
    return rc;
}

static int is_jsonl(const char *p) { return str_ends_with(p, ".jsonl") || str_ends_with(p, ".jsonl.zst"); }

int task_load_hellaswag(struct task_set *s, const struct task_opts *o, struct err *e) {
    task_set_begin(s, "hellaswag", TASK_METRIC_ACC | TASK_METRIC_ACC_NORM, "lmeval-hellaswag-v1", o);
    static const char *const rels[] = {"hellaswag/hellaswag_val.jsonl", "hellaswag/hellaswag_val.jsonl.zst",
                                       "hellaswag/hellaswag_val_full.txt.zst", "hellaswag/hellaswag_val_full.txt"};
    char path[4096];
    int found = 0;
    if (o->file) {
        if (!file_exists(o->file)) return err_set(e, ERR_NOTFOUND, "hellaswag: --task-file %s: no such file", o->file);
        snprintf(path, sizeof path, "%s", o->file);
        found = 1;
    }
    for (int i = 0; i < 4 && !found; i++) found = task_data_try(path, sizeof path, o, rels[i], 0);
    if (!found) return task_data_missing(e, o, "hellaswag", rels, 4);
    int rc = is_jsonl(path) ? load_jsonl(s, path, o, e) : load_text(s, path, o, e);
    if (rc) return rc;
    task_source_add(s, "%s (%s)", path, is_jsonl(path) ? "JSONL form, pre()/cap() applied"
                                                     : "llama.cpp 6-line text form, used as is");
    task_apply_limit(s, o);
    return 0;
}
