// mc_jsonl.c: any custom multiple-choice set as JSONL (--task-file), one object per line:
// {question, choices[2..26], answer (0-based index)} with optional subject and id. Scored with
// the MMLU template (spec/tasks.md section 2), choices the letters "A".., gold = answer.
// Subject: --subject, else the row's subject ('_' shown as ' '), else the template's header
// without " about <subject>" ("The following are multiple choice questions (with answers).").
// Item id: the row's id (string or integer) or the 0-based row number; order = file order.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/json_util.h"
#include "eval/tasks/task.h"

static int row_item(struct task_set *s, const cJSON *obj, int row, const char *subj_opt, const char *ctx,
                    struct err *le) {
    const char *q = NULL, *subj = NULL;
    const cJSON *chs = NULL;
    int ans = -1, rc;
    if (!cJSON_IsObject(obj)) return err_set(le, ERR_FORMAT, "%s: not a JSON object", ctx);
    if ((rc = json_need_str(obj, "question", &q, ctx, le)) || (rc = json_need_arr(obj, "choices", &chs, ctx, le)) ||
        (rc = json_need_int(obj, "answer", &ans, ctx, le)) || (rc = json_opt_str(obj, "subject", &subj, NULL, ctx, le)))
        return rc;
    int n = cJSON_GetArraySize(chs);
    if (n < 2 || n > 26) return err_set(le, ERR_FORMAT, "%s: 'choices' has %d entries (expected 2-26)", ctx, n);
    const char *ch[26];
    for (int c = 0; c < n; c++) {
        const cJSON *t = cJSON_GetArrayItem(chs, c);
        if (!cJSON_IsString(t)) return err_set(le, ERR_FORMAT, "%s: choices[%d] is not a string", ctx, c);
        ch[c] = t->valuestring;
    }
    if (ans < 0 || ans >= n) return err_set(le, ERR_FORMAT, "%s: 'answer' %d is not a choice index 0-%d", ctx, ans, n - 1);
    char hs[256], id[256];
    const char *use = subj_opt ? subj_opt : subj;
    if (use) {
        snprintf(hs, sizeof hs, "%s", use);
        for (char *p = hs; *p; p++)
            if (*p == '_') *p = ' ';
    }
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(obj, "id");
    if (cJSON_IsString(jid)) snprintf(id, sizeof id, "%s", jid->valuestring);
    else if (cJSON_IsNumber(jid)) snprintf(id, sizeof id, "%.0f", jid->valuedouble);
    else snprintf(id, sizeof id, "%d", row);
    return task_push_item_own(s, id, use, task_mmlu_prompt(use ? hs : NULL, q, ch, n), NULL, n, ans);
}

int task_load_mc_jsonl(struct task_set *s, const struct task_opts *o, struct err *e) {
    task_set_begin(s, "mc_jsonl", TASK_METRIC_ACC, "mmlu-template-v1", o);
    if (!o->file) return err_set(e, ERR_USAGE, "mc_jsonl: pass the question file with --task-file FILE.jsonl");
    if (!file_exists(o->file))
        return err_set(e, ERR_NOTFOUND, "mc_jsonl: --task-file %s: no such file", o->file);
    char *buf = NULL;
    size_t len = 0;
    int rc = task_read_text(o->file, &buf, &len, e);
    if (rc) return rc;
    struct task_lines it;
    task_lines_init(&it, buf, len);
    const char *lp;
    size_t ll;
    int row = 0;
    while (!rc && task_lines_next(&it, &lp, &ll)) {
        char ctx[600];
        snprintf(ctx, sizeof ctx, "%.500s:%d", o->file, it.lineno);
        struct err le = {0};
        cJSON *obj = NULL;
        int r1 = task_jsonl_parse(&obj, lp, ll, ctx, &le);
        if (!r1) r1 = row_item(s, obj, row, o->subject, ctx, &le);
        cJSON_Delete(obj);
        row++;
        if (!r1) continue;
        if (r1 == ERR_NOMEM || !le.code) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", ctx); break; }
        if (o->skip_bad_rows) { s->n_bad_rows++; log_warn("%s (row skipped, --skip-bad-rows)", le.msg); continue; }
        rc = err_set(e, ERR_FORMAT, "%s (--skip-bad-rows skips such rows)", le.msg);
    }
    free(buf);
    if (rc) return rc;
    task_source_add(s, "%s (JSONL%s%s)", o->file, o->subject ? ", subject " : "", o->subject ? o->subject : "");
    task_apply_limit(s, o);
    return 0;
}
