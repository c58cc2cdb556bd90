// bbh.c: BIG-Bench Hard, likelihood variant (spec/tasks.md section 2): 24 subtasks with a
// closed answer set, 3-shot. The 3 free-form subtasks without one (word_sorting,
// dyck_languages, multistep_arithmetic_two: every target nearly unique) are left out;
// object_counting's set is its distinct targets (numbers 0..18), sorted numerically.
// Prompt: the subtask description + "\n\n" + 3 fixed examples "Q: {input}\nA: {target}\n\n" +
// "Q: " + input + "\nA:". The fixed examples are the first 3 examples of the subtask file: the
// BBH chain-of-thought prompt files are not shipped (datasets/bbh/SOURCE.md), so the shots come
// from the data and those 3 examples are not scored (items = file examples 3..n-1).
// Choices: the option letters "(A)".. found in the item's input for multiple-choice subtasks
// (SOURCE.md), else the subtask's label set. Three upstream defects whose target is no option
// (movie_recommendation #163, ruin_names #99 and #144) and snarks #88 (input cut off after
// option (A)) are dropped and listed in the source.
// Items ordered by subtask name then file index; id "<subtask>/<index>"; subject = subtask.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/json_util.h"
#include "eval/tasks/task.h"

#define BBH_SHOTS 3

enum { KIND_MC, KIND_SET, KIND_COUNT };

struct bbh_sub {
    const char *name;
    int kind;
    const char *set[2];  // KIND_SET labels
    const char *desc;    // the BBH task description (first line of the upstream prompt files)
};

static const struct bbh_sub k_subs[] = {
    {"boolean_expressions", KIND_SET, {"True", "False"}, "Evaluate the result of a random Boolean expression."},
    {"causal_judgement", KIND_SET, {"Yes", "No"}, "Answer questions about causal attribution."},
    {"date_understanding", KIND_MC, {0}, "Infer the date from context."},
    {"disambiguation_qa", KIND_MC, {0}, "Clarify the meaning of sentences with ambiguous pronouns."},
    {"formal_fallacies", KIND_SET, {"valid", "invalid"}, "Distinguish deductively valid arguments from formal fallacies."},
    {"geometric_shapes", KIND_MC, {0}, "Name geometric shapes from their SVG paths."},
    {"hyperbaton", KIND_MC, {0}, "Order adjectives correctly in English sentences."},
    {"logical_deduction_five_objects", KIND_MC, {0}, "A logical deduction task which requires deducing the order of a sequence of objects."},
    {"logical_deduction_seven_objects", KIND_MC, {0}, "A logical deduction task which requires deducing the order of a sequence of objects."},
    {"logical_deduction_three_objects", KIND_MC, {0}, "A logical deduction task which requires deducing the order of a sequence of objects."},
    {"movie_recommendation", KIND_MC, {0}, "Recommend movies similar to the given list of movies."},
    {"navigate", KIND_SET, {"Yes", "No"}, "Given a series of navigation instructions, determine whether one would end up back at the starting point."},
    {"object_counting", KIND_COUNT, {0}, "Questions that involve enumerating objects and asking the model to count them."},
    {"penguins_in_a_table", KIND_MC, {0}, "Answer questions about a table of penguins and their attributes."},
    {"reasoning_about_colored_objects", KIND_MC, {0}, "Answer extremely simple questions about the colors of objects on a surface."},
    {"ruin_names", KIND_MC, {0}, "Select the humorous edit that 'ruins' the input movie or musical artist name."},
    {"salient_translation_error_detection", KIND_MC, {0}, "Detect the type of error in an English translation of a German source sentence."},
    {"snarks", KIND_MC, {0}, "Determine which of two sentences is sarcastic."},
    {"sports_understanding", KIND_SET, {"yes", "no"}, "Determine whether an artificially constructed sentence relating to sports is plausible or not."},
    {"temporal_sequences", KIND_MC, {0}, "Answer questions about which times certain events could have occurred."},
    {"tracking_shuffled_objects_five_objects", KIND_MC, {0}, "A task requiring determining the final positions of a set of objects given their initial positions and a description of a sequence of swaps."},
    {"tracking_shuffled_objects_seven_objects", KIND_MC, {0}, "A task requiring determining the final positions of a set of objects given their initial positions and a description of a sequence of swaps."},
    {"tracking_shuffled_objects_three_objects", KIND_MC, {0}, "A task requiring determining the final positions of a set of objects given their initial positions and a description of a sequence of swaps."},
    {"web_of_lies", KIND_SET, {"Yes", "No"}, "Evaluate a random boolean function expressed as a word problem."},
};
#define N_SUBS ((int)(sizeof k_subs / sizeof k_subs[0]))

// Upstream defects: the 3 of datasets/bbh/SOURCE.md whose target is not an option letter, and
// snarks #88, whose input is cut off after its first option (one candidate only).
static int known_defect(const char *sub, int idx) {
    return (strcmp(sub, "movie_recommendation") == 0 && idx == 163) ||
           (strcmp(sub, "ruin_names") == 0 && (idx == 99 || idx == 144)) ||
           (strcmp(sub, "snarks") == 0 && idx == 88);  // input cut off after "(A) The NB"
}

int task_bbh_subtask_count(void) { return N_SUBS; }
const char *task_bbh_subtask_name(int i) { return i >= 0 && i < N_SUBS ? k_subs[i].name : NULL; }

// Option letters "(A)".. listed in input as lines "(X) ..." (in order, starting at A).
static int mc_options(const char *in, char opts[26][4]) {
    int n = 0;
    for (const char *p = in; *p; p++) {
        if ((p == in || p[-1] == '\n') && p[0] == '(' && p[1] == 'A' + n && p[2] == ')' && p[3] == ' ' && n < 26) {
            snprintf(opts[n], 4, "(%c)", 'A' + n);
            n++;
        }
    }
    return n;
}

static int cmp_num(const void *a, const void *b) {
    long x = strtol(*(const char *const *)a, NULL, 10), y = strtol(*(const char *const *)b, NULL, 10);
    return (x > y) - (x < y);
}

static int load_sub(struct task_set *s, const struct bbh_sub *sub, const char *path, const struct task_opts *o,
                    int *n_defects, struct err *e) {
    cJSON *root = NULL;
    const cJSON *ex = NULL;
    char *buf = NULL;
    size_t len = 0;
    int rc = task_read_text(path, &buf, &len, e);
    if (!rc) rc = json_parse(&root, buf, len, path, e);
    free(buf);
    if (!rc) rc = json_need_arr(root, "examples", &ex, path, e);
    int n = rc ? 0 : cJSON_GetArraySize(ex);
    const char **in = NULL, **tg = NULL;
    if (!rc) {
        in = calloc((size_t)n + 1, sizeof *in);
        tg = calloc((size_t)n + 1, sizeof *tg);
        if (!in || !tg) rc = err_set(e, ERR_NOMEM, "%s: out of memory", path);
    }
    for (int i = 0; i < n && !rc; i++) {
        char ctx[600];
        snprintf(ctx, sizeof ctx, "%.500s: examples[%d]", path, i);
        const cJSON *it = cJSON_GetArrayItem(ex, i);
        if (!cJSON_IsObject(it)) { rc = err_set(e, ERR_FORMAT, "%s: not an object", ctx); break; }
        if ((rc = json_need_str(it, "input", &in[i], ctx, e)) || (rc = json_need_str(it, "target", &tg[i], ctx, e))) break;
    }
    if (!rc && n <= BBH_SHOTS) rc = err_set(e, ERR_FORMAT, "%s: %d examples; need more than %d (the first %d are the shots)", path, n, BBH_SHOTS, BBH_SHOTS);
    // answer set for object_counting: the distinct targets, numerically sorted
    const char *set[64];
    int n_set = 0;
    if (!rc && sub->kind == KIND_SET) { set[0] = sub->set[0]; set[1] = sub->set[1]; n_set = 2; }
    for (int i = 0; !rc && sub->kind == KIND_COUNT && i < n; i++) {
        char *endp;
        strtol(tg[i], &endp, 10);
        if (!tg[i][0] || *endp) { rc = err_set(e, ERR_FORMAT, "%s: examples[%d]: target '%.40s' is not a number", path, i, tg[i]); break; }
        int dup = 0;
        for (int k = 0; k < n_set; k++) dup |= strcmp(set[k], tg[i]) == 0;
        if (!dup) {
            if (n_set == 64) { rc = err_set(e, ERR_RANGE, "%s: more than 64 distinct targets", path); break; }
            set[n_set++] = tg[i];
        }
    }
    if (!rc && sub->kind == KIND_COUNT) qsort(set, (size_t)n_set, sizeof *set, cmp_num);
    struct sbuf pre = {0};
    if (!rc && sb_printf(&pre, "%s\n\n", sub->desc)) rc = err_set(e, ERR_NOMEM, "%s: out of memory", path);
    for (int i = 0; i < BBH_SHOTS && !rc; i++)
        if (sb_printf(&pre, "Q: %s\nA: %s\n\n", in[i], tg[i])) rc = err_set(e, ERR_NOMEM, "%s: out of memory", path);
    for (int i = BBH_SHOTS; i < n && !rc; i++) {
        char opts[26][4];
        const char *mc[26];
        const char *const *ch = set;
        int nc = n_set;
        if (sub->kind == KIND_MC) {
            nc = mc_options(in[i], opts);
            for (int k = 0; k < nc; k++) mc[k] = opts[k];
            ch = mc;
        }
        int gold = -1;
        for (int k = 0; k < nc; k++)
            if (strcmp(ch[k], tg[i]) == 0) gold = k;
        if (gold < 0 || nc < 2) {
            if (known_defect(sub->name, i)) { (*n_defects)++; continue; }
            char ctx[600];
            snprintf(ctx, sizeof ctx, "examples[%d]", i);
            rc = task_bad_row(s, o, e, path, 0, "%s: target '%.60s' is not in the answer set (%d candidates)", ctx, tg[i], nc);
            continue;
        }
        struct sbuf b = {0};
        char id[160];
        snprintf(id, sizeof id, "%s/%d", sub->name, i);
        if (sb_putn(&b, pre.p, pre.n) || sb_printf(&b, "Q: %s\nA:", in[i])) { free(b.p); rc = ERR_NOMEM; }
        else rc = task_push_item_own(s, id, sub->name, b.p, ch, nc, gold);
        if (rc) rc = err_set(e, ERR_NOMEM, "%s: out of memory", path);
    }
    free(pre.p);
    free(in);
    free(tg);
    cJSON_Delete(root);
    return rc;
}

int task_load_bbh(struct task_set *s, const struct task_opts *o, struct err *e) {
    task_set_begin(s, "bbh", TASK_METRIC_ACC_NORM, "bbh-ll-3shot-v1", o);
    char dir[4096];
    int rc;
    if (o->file) {
        if (!dir_exists(o->file)) return err_set(e, ERR_NOTFOUND, "bbh: --task-file %s: expected the directory of <subtask>.json files", o->file);
        snprintf(dir, sizeof dir, "%s", o->file);
    } else if ((rc = task_data_find(dir, sizeof dir, o, "bbh", "bbh/bbh", 1, e))) {
        return rc;
    }
    int n_defects = 0;
    for (int i = 0; i < N_SUBS; i++) {
        char name[128], path[4400];
        snprintf(name, sizeof name, "%s.json", k_subs[i].name);
        if ((rc = path_join(path, sizeof path, dir, name, e))) return rc;
        if (!file_exists(path))
            return err_set(e, ERR_NOTFOUND, "bbh: missing subtask file %s; run `hifa4-eval download --task bbh`", path);
        if ((rc = load_sub(s, &k_subs[i], path, o, &n_defects, e))) return rc;
    }
    task_source_add(s, "%s/<subtask>.json x%d (3-shot from each file's first 3 examples; %d upstream "
                    "defect items dropped: movie_recommendation/163, ruin_names/99, ruin_names/144, snarks/88)",
                    dir, N_SUBS, n_defects);
    task_apply_limit_per_subject(s, o);
    return 0;
}
