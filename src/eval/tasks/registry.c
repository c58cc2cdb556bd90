// registry.c: the table of built-in tasks, task_set lifetime, and the item-building helpers
// every loader uses (MMLU template, bad-row policy, --limit, provenance string).
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/tasks/task.h"

#define TASK(name) int task_load_##name(struct task_set *out, const struct task_opts *o, struct err *e);
TASK(mmlu)
TASK(hellaswag)
TASK(arc_challenge)
TASK(arc_easy)
TASK(truthfulqa_mc1)
TASK(gpqa_diamond)
TASK(bbh)
TASK(exam)
TASK(wordnet)
TASK(mc_jsonl)
TASK(ppl)
TASK(niah)
#undef TASK

static const struct task_def g_tasks[] = {
    {"mmlu", "MMLU test, 57 subjects, 14,042 items, zero-shot (acc)", task_load_mmlu},
    {"hellaswag", "HellaSwag validation, 10,042 items (acc, acc_norm)", task_load_hellaswag},
    {"arc_challenge", "ARC-Challenge test, 1,172 items (acc, acc_norm)", task_load_arc_challenge},
    {"arc_easy", "ARC-Easy test, 2,376 items (acc, acc_norm)", task_load_arc_easy},
    {"truthfulqa_mc1", "TruthfulQA MC1 validation, 817 items (acc)", task_load_truthfulqa_mc1},
    {"gpqa_diamond", "GPQA diamond, 198 items, seeded option shuffle (acc, acc_norm); data not shipped",
     task_load_gpqa_diamond},
    {"bbh", "BIG-Bench Hard likelihood variant, 24 subtasks, 3-shot (acc_norm)", task_load_bbh},
    {"exam", "US amateur-radio and FCC commercial licence exam pools (Debian hamexam/fccexam) (acc)",
     task_load_exam},
    {"wordnet", "WordNet 3.0 noun definitions, 1,031 items, offline (Debian wordnet-base) (acc, acc_norm)",
     task_load_wordnet},
    {"mc_jsonl", "custom multiple-choice JSONL {question, choices[], answer} via --task-file (acc)",
     task_load_mc_jsonl},
    {"ppl", "perplexity on plain text (default WikiText-2 test raw) or --task-file", task_load_ppl},
    {"niah", "needle in a haystack: likelihood of the magic number among 10, or greedy decoding (--niah-form generate; needs the tokenizer)", task_load_niah},
};

int task_count(void) { return (int)(sizeof g_tasks / sizeof g_tasks[0]); }

const struct task_def *task_at(int i) {
    return i >= 0 && i < task_count() ? &g_tasks[i] : NULL;
}

const struct task_def *task_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < task_count(); i++)
        if (strcmp(g_tasks[i].name, name) == 0) return &g_tasks[i];
    return NULL;
}

// Item ids name items in samples files, diff and resume: two items with one id are an error
// naming both (duplicate ids were accepted), found through a sorted index.
struct id_ref {
    const char *id;
    int i;
};
static int by_id(const void *a, const void *b) {
    const struct id_ref *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

static int unique_ids(const struct task_set *s, struct err *e) {
    if (s->is_ppl || s->n_items < 2) return 0;
    struct id_ref *ix = malloc(sizeof *ix * (size_t)s->n_items);
    if (!ix) return err_set(e, ERR_NOMEM, "task %s: out of memory", s->name);
    for (int i = 0; i < s->n_items; i++) ix[i] = (struct id_ref){s->items[i].id, i};
    qsort(ix, (size_t)s->n_items, sizeof *ix, by_id);
    int rc = 0;
    for (int i = 1; i < s->n_items && !rc; i++)
        if (!strcmp(ix[i - 1].id, ix[i].id))
            rc = err_set(e, ERR_FORMAT, "task %s: item id '%s' is used by items %d and %d (0-based, file order) of %s: "
                         "ids must be unique", s->name, ix[i].id, ix[i - 1].i, ix[i].i, s->source[0] ? s->source : "its data");
    free(ix);
    return rc;
}

// Items whose options are empty or blank, or equal to another option (the real MMLU test set
// has 9 with equal options). lm-eval scores them as any item - an empty option is the
// continuation " ", equal options get equal log-likelihoods and argmax takes the first - and
// so does this tool; they are counted and named in the report, not refused, so the standard
// data sets stay scorable and comparable. (A gold index outside the options is refused by
// each loader, naming file:line.)
static void count_odd_choices(struct task_set *s, const char *name) {
    for (int i = 0; i < s->n_items; i++) {
        const struct task_item *it = &s->items[i];
        char why[96] = "";
        for (int c = 0; c < it->n_choices && !why[0]; c++) {
            const char *p = it->choices[c];
            while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
            if (!*p) snprintf(why, sizeof why, "option %d is %s", c, it->choices[c][0] ? "blank" : "empty");
            for (int k = 0; k < c && !why[0]; k++)
                if (!strcmp(it->choices[k], it->choices[c])) snprintf(why, sizeof why, "options %d and %d are equal", k, c);
        }
        if (!why[0]) continue;
        if (!s->n_odd_choices++) snprintf(s->odd_first, sizeof s->odd_first, "id '%.40s': %s", it->id, why);
    }
    if (s->n_odd_choices)
        log_warn("task %s: %d item%s with an empty or repeated option (first: %s), scored as lm-eval scores them", name,
                 s->n_odd_choices, s->n_odd_choices == 1 ? "" : "s", s->odd_first);
}

int task_load(const char *name, struct task_set *out, const struct task_opts *o, struct err *e) {
    const struct task_def *d = task_find(name);
    if (!d) {
        char list[512] = "";
        size_t k = 0;
        for (int i = 0; i < task_count() && k < sizeof list; i++)
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", g_tasks[i].name);
        memset(out, 0, sizeof *out);
        return err_set(e, ERR_NOTFOUND, "unknown task '%s' (known: %s)", name ? name : "(null)", list);
    }
    static const struct task_opts none = {0};
    memset(out, 0, sizeof *out); // a loader may fail before task_set_begin (niah without a tokenizer)
    int rc = d->load(out, o ? o : &none, e);
    if (!rc && o && o->subjects) rc = task_keep_subjects(out, o->subjects, e);
    if (!rc) rc = unique_ids(out, e);
    if (!rc) count_odd_choices(out, name);
    // an empty task would be "scored" (0 items, accuracy undefined) and fail late, after every
    // other task, in code that never expected it: refuse it here, naming the task and its data
    if (!rc && (out->is_ppl ? out->text_len == 0 : out->n_items == 0)) {
        if (out->n_bad_rows)
            rc = err_set(e, ERR_FORMAT, "task %s: no usable items in %s: all %d rows are malformed (skipped by "
                         "--skip-bad-rows)", name, out->source[0] ? out->source : "its data", out->n_bad_rows);
        else
            rc = err_set(e, ERR_FORMAT, "task %s: no %s in %s: the data is empty", name, out->is_ppl ? "text" : "items",
                         out->source[0] ? out->source : "its data file");
    }
    if (rc) task_set_free(out);
    if (rc && e && !strstr(e->msg, name)) err_prefix(e, "task %s", name); // every error names its task
    return rc;
}

const char *const *task_data_paths(const char *name) {
    static const char *const mmlu[] = {"mmlu/data/test/", NULL};
    static const char *const hs[] = {"hellaswag/hellaswag_val.jsonl", "hellaswag/hellaswag_val.jsonl.zst",
                                     "hellaswag/hellaswag_val_full.txt.zst", "hellaswag/hellaswag_val_full.txt", NULL};
    static const char *const arc_c[] = {"arc/ai2-subset/ARC-Challenge-Test.jsonl",
                                        "arc/genmc/arc_challenge/official/test.jsonl", NULL};
    static const char *const arc_e[] = {"arc/genmc/arc_easy/official/test.jsonl", NULL};
    static const char *const tqa[] = {"truthfulqa/data/v1/mc_task.json", NULL};
    static const char *const gpqa[] = {"gpqa/gpqa_diamond.csv", "gpqa/dataset/gpqa_diamond.csv", NULL};
    static const char *const bbh[] = {"bbh/bbh/", NULL};
    static const char *const ppl[] = {"wikitext2/raw/wiki.test.raw", "wikitext2/tokens/test.txt", NULL};
    static const char *const exam[] = {"exam/hamexam/", "exam/fccexam/", NULL};
    static const char *const wn[] = {"wordnet/", NULL};
    static const char *const none[] = {NULL};
    static const struct { const char *name; const char *const *paths; } t[] = {
        {"mmlu", mmlu}, {"hellaswag", hs}, {"arc_challenge", arc_c}, {"arc_easy", arc_e},
        {"truthfulqa_mc1", tqa}, {"gpqa_diamond", gpqa}, {"bbh", bbh}, {"exam", exam}, {"wordnet", wn},
        {"mc_jsonl", none}, {"ppl", ppl}, {"niah", ppl}};
    for (size_t i = 0; name && i < sizeof t / sizeof t[0]; i++)
        if (strcmp(t[i].name, name) == 0) return t[i].paths;
    return NULL;
}

static void item_free(struct task_item *it) {
    free(it->id);
    free(it->subject);
    free(it->context);
    for (int c = 0; c < it->n_choices; c++) free(it->choices ? it->choices[c] : NULL);
    free(it->choices);
    memset(it, 0, sizeof *it);
}

void task_set_free(struct task_set *s) {
    if (!s) return;
    for (int i = 0; i < s->n_items; i++) item_free(&s->items[i]);
    free(s->items);
    free(s->text);
    memset(s, 0, sizeof *s);
}

void task_set_begin(struct task_set *s, const char *name, unsigned metrics, const char *tmpl_version,
                    const struct task_opts *o) {
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->delim = " ";
    s->metrics = metrics;
    snprintf(s->template_version, sizeof s->template_version, "%s", tmpl_version);
    s->seed = o ? o->seed : 0;
}

void task_source_add(struct task_set *s, const char *fmt, ...) {
    size_t k = strlen(s->source), cap = sizeof s->source;
    if (k + 8 >= cap) return;
    if (k) { memcpy(s->source + k, "; ", 3); k += 2; }
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(s->source + k, cap - k, fmt, ap);
    va_end(ap);
    if (r >= 0 && (size_t)r >= cap - k) memcpy(s->source + cap - 4, "...", 4);
}

static const char *const k_letters[26] = {"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M",
                                          "N", "O", "P", "Q", "R", "S", "T", "U", "V", "W", "X", "Y", "Z"};

int task_push_item_own(struct task_set *s, const char *id, const char *subject, char *context,
                       const char *const *choices, int n_choices, int gold) {
    if (!context) return ERR_NOMEM;
    if (n_choices < 1 || gold < 0 || gold >= n_choices || (!choices && n_choices > 26)) {
        free(context);
        return ERR_INTERNAL;
    }
    if ((s->n_items & (s->n_items - 1)) == 0) {  // capacity is max(16, next power of two)
        size_t nc = s->n_items >= 8 ? (size_t)s->n_items * 2 : 16;
        struct task_item *ni = realloc(s->items, nc * sizeof *ni);
        if (!ni) { free(context); return ERR_NOMEM; }
        s->items = ni;
    }
    struct task_item *it = &s->items[s->n_items];
    memset(it, 0, sizeof *it);
    it->context = context;
    it->id = str_dup(id);
    it->subject = subject ? str_dup(subject) : NULL;
    it->choices = calloc((size_t)n_choices, sizeof *it->choices);
    int bad = !it->id || (subject && !it->subject) || !it->choices;
    if (!bad) {
        it->n_choices = n_choices;
        for (int c = 0; c < n_choices; c++) {
            it->choices[c] = str_dup(choices ? choices[c] : k_letters[c]);
            if (!it->choices[c]) bad = 1;
        }
    }
    if (bad) { item_free(it); return ERR_NOMEM; }
    it->gold = gold;
    s->n_items++;
    return 0;
}

int task_push_item(struct task_set *s, const char *id, const char *subject, const char *context,
                   const char *const *choices, int n_choices, int gold) {
    char *c = str_dup(context);
    if (!c) return ERR_NOMEM;
    return task_push_item_own(s, id, subject, c, choices, n_choices, gold);
}

int task_bad_row(struct task_set *s, const struct task_opts *o, struct err *e, const char *path,
                 int line, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char where[600];
    if (line > 0) snprintf(where, sizeof where, "%.500s:%d", path, line);
    else snprintf(where, sizeof where, "%.500s", path);  // no line (e.g. an entry of a JSON array)
    if (o && o->skip_bad_rows) {
        s->n_bad_rows++;
        log_warn("%s: %s (row skipped, --skip-bad-rows)", where, msg);
        return 0;
    }
    return err_set(e, ERR_FORMAT, "%s: %s (--skip-bad-rows skips such rows)", where, msg);
}

void task_apply_limit(struct task_set *s, const struct task_opts *o) {
    if (!o || o->limit <= 0 || o->limit >= s->n_items) return;
    for (int i = o->limit; i < s->n_items; i++) item_free(&s->items[i]);
    s->n_items = o->limit;
}

void task_keep_if(struct task_set *s, int (*keep)(const struct task_item *it, const void *ctx), const void *ctx) {
    int kept = 0;
    for (int i = 0; i < s->n_items; i++) {
        if (keep(&s->items[i], ctx)) s->items[kept++] = s->items[i];
        else item_free(&s->items[i]);
    }
    s->n_items = kept;
}

void task_apply_limit_per_subject(struct task_set *s, const struct task_opts *o) {
    if (!o || o->limit <= 0) return;
    int kept = 0, run = 0; // run: items kept of the current subject
    for (int i = 0; i < s->n_items; i++) {
        // compare with the last kept item: earlier ones of this subject may already be freed
        const char *a = s->items[i].subject, *b = kept ? s->items[kept - 1].subject : NULL;
        int same = kept && ((a && b && !strcmp(a, b)) || (!a && !b));
        if (!same) run = 0;
        if (run < o->limit) {
            s->items[kept++] = s->items[i];
            run++;
        } else {
            item_free(&s->items[i]);
        }
    }
    s->n_items = kept;
}

char *task_mmlu_prompt(const char *subject, const char *question, const char *const *choices, int n) {
    if (n < 1 || n > 26) return NULL;
    struct sbuf b = {0};
    int rc = subject ? sb_printf(&b, "The following are multiple choice questions (with answers) about %s.\n\n", subject)
                     : sb_puts(&b, "The following are multiple choice questions (with answers).\n\n");
    char *q = task_strip(question, strlen(question));
    if (!q) rc = ERR_NOMEM;
    if (!rc) rc = sb_puts(&b, q);
    free(q);
    for (int i = 0; i < n && !rc; i++) rc = sb_printf(&b, "\n%c. %s", 'A' + i, choices[i]);
    if (!rc) rc = sb_puts(&b, "\nAnswer:");
    if (rc) { free(b.p); return NULL; }
    return sb_take(&b);
}

uint64_t task_rng_next(uint64_t *state) {  // splitmix64 (Steele, Lea, Flood 2014)
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
