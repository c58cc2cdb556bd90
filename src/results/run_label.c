// run_label.c: the recorded options that tell runs apart, and their two views (run_label.h).
#include "results/run_label.h"

#include <stdio.h>
#include <math.h>
#include <string.h>

enum field { F_LIMIT, F_TILE, F_FORMAT, F_QMEAN, F_VGROUP, F_QDQ_SKIP, F_ACT, F_SUBJECTS, F_SEED, F_MODEL, F_SCALES, F_TOKENIZER, N_RUN_FIELDS };
static const char *const g_labels[N_RUN_FIELDS] = {"limit", "tile", "format", "Q-Mean", "v-group", "qdq-skip",
                                                   "act", "subjects", "seed", "model", "scales", "tokenizer"};

static void str_text(char *v, size_t n, const char *s, int hash) {
    if (s) snprintf(v, n, "%.*s", hash ? 8 : (int)(n - 1), s);
    else snprintf(v, n, "-");
}

// Field i of a run as text; hashes cut to their first 8 hex digits, "-" when absent.
static void field_text(char *v, size_t n, const struct run_rec *run, int i) {
    switch ((enum field)i) {
    case F_LIMIT:
        if (run->limit == 0) snprintf(v, n, "all");
        else if (run->limit > 0) snprintf(v, n, "%d", run->limit);
        else snprintf(v, n, "-");
        return;
    case F_TILE:
        if (run->attention.tile >= 0) snprintf(v, n, "%d", run->attention.tile);
        else snprintf(v, n, "-");
        return;
    case F_SEED:
        if (!isnan(run->seed)) snprintf(v, n, "%.17g", run->seed);
        else snprintf(v, n, "-");
        return;
    case F_FORMAT: str_text(v, n, run->attention.qformat, 0); return;
    case F_QMEAN: str_text(v, n, run->attention.qmean, 0); return;
    case F_VGROUP: str_text(v, n, run->attention.v_group, 0); return;
    case F_QDQ_SKIP: str_text(v, n, run->attention.qdq_skip, 0); return;
    case F_ACT: str_text(v, n, run->model.act, 0); return;
    case F_SUBJECTS: str_text(v, n, run->subjects, 0); return;
    case F_MODEL: str_text(v, n, run->model.hash, 1); return;
    case F_SCALES: str_text(v, n, run->scales.sha256, 1); return;
    case F_TOKENIZER: str_text(v, n, run->tokenizer.hash, 1); return;
    case N_RUN_FIELDS: break;
    }
    snprintf(v, n, "-");
}

// Appends "label text" (", " between items) when it fits; k: the length so far.
static size_t append(char *out, size_t n, size_t k, const char *label, const char *text) {
    if (k + strlen(label) + strlen(text) + 4 >= n) return k;
    return k + (size_t)snprintf(out + k, n - k, "%s%s %s", k ? ", " : "", label, text);
}

void run_label_differences(char *out, size_t n, const struct run_rec *a, const struct run_rec *b) {
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < N_RUN_FIELDS; i++) {
        char va[96], vb[96], both[200];
        field_text(va, sizeof va, a, i);
        field_text(vb, sizeof vb, b, i);
        snprintf(both, sizeof both, "%s vs %s", va, vb);
        if (strcmp(va, vb)) k = append(out, n, k, g_labels[i], both);
    }
}

void run_label_in_group(char *out, size_t n, const struct run_rec *run, const struct run_rec *const *group, int n_group) {
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < N_RUN_FIELDS; i++) {
        char v[96], w[96];
        field_text(v, sizeof v, run, i);
        int varies = 0;
        for (int g = 0; g < n_group && !varies; g++) {
            field_text(w, sizeof w, group[g], i);
            varies = strcmp(v, w) != 0;
        }
        if (varies) k = append(out, n, k, g_labels[i], v);
    }
}
