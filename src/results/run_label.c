// run_label.c: the recorded options that tell runs apart, and their two views (run_label.h).
#include "results/run_label.h"

#include <stdio.h>
#include <string.h>

static const struct { const char *obj, *key, *label; } g_run_fields[] = {
    {NULL, "limit", "limit"},         {"attention", "tile", "tile"},       {"attention", "qformat", "format"},
    {"attention", "qmean", "Q-Mean"}, {"attention", "v_group", "v-group"}, {"attention", "qdq_skip", "qdq-skip"},
    {"model", "act", "act"},          {NULL, "subjects", "subjects"},      {NULL, "seed", "seed"},
    {"model", "hash", "model"},       {"scales", "sha256", "scales"},      {"tokenizer", "hash", "tokenizer"}};
#define N_RUN_FIELDS (sizeof g_run_fields / sizeof g_run_fields[0])

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

// Field i of a run.json as text; hashes cut to their first 8 hex digits, "-" when absent.
static void field_text(char *v, size_t n, const cJSON *run, size_t i) {
    const cJSON *o = g_run_fields[i].obj ? get(run, g_run_fields[i].obj) : run, *x = o ? get(o, g_run_fields[i].key) : NULL;
    const int hash = !strcmp(g_run_fields[i].key, "hash") || !strcmp(g_run_fields[i].key, "sha256");
    if (cJSON_IsString(x)) snprintf(v, n, "%.*s", hash ? 8 : (int)(n - 1), x->valuestring);
    else if (cJSON_IsNumber(x) && !strcmp(g_run_fields[i].key, "limit") && x->valuedouble == 0) snprintf(v, n, "all");
    else if (cJSON_IsNumber(x)) snprintf(v, n, "%.17g", x->valuedouble);
    else snprintf(v, n, "-");
}

// Appends "label text" (", " between items) when it fits; k: the length so far.
static size_t append(char *out, size_t n, size_t k, const char *label, const char *text) {
    if (k + strlen(label) + strlen(text) + 4 >= n) return k;
    return k + (size_t)snprintf(out + k, n - k, "%s%s %s", k ? ", " : "", label, text);
}

void run_label_differences(char *out, size_t n, const cJSON *a, const cJSON *b) {
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; i < N_RUN_FIELDS; i++) {
        char va[96], vb[96], both[200];
        field_text(va, sizeof va, a, i);
        field_text(vb, sizeof vb, b, i);
        snprintf(both, sizeof both, "%s vs %s", va, vb);
        if (strcmp(va, vb)) k = append(out, n, k, g_run_fields[i].label, both);
    }
}

void run_label_in_group(char *out, size_t n, const cJSON *run, const cJSON *const *group, int n_group) {
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; i < N_RUN_FIELDS; i++) {
        char v[96], w[96];
        field_text(v, sizeof v, run, i);
        int varies = 0;
        for (int g = 0; g < n_group && !varies; g++) {
            field_text(w, sizeof w, group[g], i);
            varies = strcmp(v, w) != 0;
        }
        if (varies) k = append(out, n, k, g_run_fields[i].label, v);
    }
}
