// prompts.c: `hifa4-eval prompts --task T` - loads a task exactly as a run would and prints
// its items as JSONL (id, subject, context = the prompt, choices, gold), so the prompts can be
// inspected or diffed against another harness. No model involved (niah, which sizes its
// haystack in tokens, takes --tokenizer DIR). --summary prints only the counts and the data
// source; with no --task it lists the built-in tasks.
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "eval/tasks/task.h"
#include "tokenizer/tokenizer.h"

// task_count_tokens_fn for niah: tokens of s without BOS, as a run counts them
static int count_tokens(void *ctx, const char *s, size_t n) {
    int32_t *ids = NULL;
    int k = 0;
    struct err e = {0};
    int rc = tok_encode(ctx, s, n, 0, &ids, &k, &e);
    free(ids);
    return rc ? rc : k;
}

int cmd_prompts(int argc, char **argv, struct err *e) {
    int help = 0, skip = 0, summary = 0, limit = 0;
    int64_t seed = 0;
    const char *task = NULL, *data_dir = NULL, *file = NULL, *subject = NULL, *subjects = NULL, *tokenizer = NULL, *niah_lengths = NULL;
    int niah_per_cell = 0;
    struct cli_opt opts[] = {
        {"help", CLI_FLAG, &help, "show this help"},
        {"task", CLI_STR, &task, "NAME: task to load (omit to list tasks)"},
        {"data-dir", CLI_STR, &data_dir, "DIR: data root (layout of ../shared/datasets)"},
        {"task-file", CLI_STR, &file, "PATH: data file/dir (mc_jsonl's questions, ppl's text, exam's pool; as in run)"},
        {"subject", CLI_STR, &subject, "TEXT: subject for mc_jsonl"},
        {"subjects", CLI_STR, &subjects, "a,b: only these subjects / subtasks (as in run)"},
        {"tokenizer", CLI_STR, &tokenizer, "DIR: tokenizer that sizes niah's haystack (a model directory)"},
        {"niah-lengths", CLI_STR, &niah_lengths, "T1,T2: niah haystack sizes in tokens (default 1024,2048,4096)"},
        {"niah-per-cell", CLI_INT, &niah_per_cell, "N: niah items per (length, depth) cell (default 4)"},
        {"limit", CLI_INT, &limit, "N: first N items only"},
        {"seed", CLI_I64, &seed, "N: seed (gpqa_diamond option shuffle)"},
        {"skip-bad-rows", CLI_FLAG, &skip, "skip malformed rows (counted) instead of failing"},
        {"summary", CLI_FLAG, &summary, "print only counts and source"},
    };
    int n_opts = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse(argc, argv, opts, n_opts, e);
    if (rc) return rc;
    if (help) { cli_usage("prompts", "[--task NAME] [options]", opts, n_opts); return 0; }
    if (!task) {
        for (int i = 0; i < task_count(); i++) printf("%-16s %s\n", task_at(i)->name, task_at(i)->desc);
        return 0;
    }
    if (limit < 0) return err_set(e, ERR_USAGE, "--limit must be >= 0, got %d", limit);
    if (niah_per_cell < 0) return err_set(e, ERR_USAGE, "--niah-per-cell must be >= 0, got %d", niah_per_cell);
    struct task_opts o = {.data_dir = data_dir, .file = file, .subject = subject, .subjects = subjects, .skip_bad_rows = skip,
                          .seed = (uint64_t)seed, .limit = limit, .niah_lengths = niah_lengths,
                          .niah_per_cell = niah_per_cell};
    struct tokenizer *tok = NULL;
    if (tokenizer) {
        if ((rc = tok_load(&tok, tokenizer, e))) return rc;
        o.count_tokens = count_tokens;
        o.count_ctx = tok;
    }
    struct task_set s;
    rc = task_load(task, &s, &o, e);
    tok_free(tok);
    if (rc) return rc;
    for (int i = 0; i < s.n_items && !summary; i++) {
        const struct task_item *it = &s.items[i];
        cJSON *j = cJSON_CreateObject(), *ch = cJSON_CreateArray();
        if (!j || !ch) { cJSON_Delete(j); cJSON_Delete(ch); task_set_free(&s); return err_set(e, ERR_NOMEM, "prompts: out of memory"); }
        cJSON_AddStringToObject(j, "id", it->id);
        if (it->subject) cJSON_AddStringToObject(j, "subject", it->subject);
        cJSON_AddStringToObject(j, "context", it->context);
        for (int c = 0; c < it->n_choices; c++) cJSON_AddItemToArray(ch, cJSON_CreateString(it->choices[c]));
        cJSON_AddItemToObject(j, "choices", ch);
        cJSON_AddNumberToObject(j, "gold", it->gold);
        char *txt = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        if (!txt) { task_set_free(&s); return err_set(e, ERR_NOMEM, "prompts: out of memory"); }
        puts(txt);
        free(txt);
    }
    fprintf(summary ? stdout : stderr, "task %s: %d items%s, %d bad rows skipped, template %s, seed %llu\nsource: %s\n",
            s.name, s.is_ppl ? 0 : s.n_items, s.is_ppl ? " (text task)" : "", s.n_bad_rows, s.template_version,
            (unsigned long long)s.seed, s.source);
    if (s.is_ppl) fprintf(summary ? stdout : stderr, "text: %zu bytes\n", s.text_len);
    task_set_free(&s);
    return 0;
}
