// gate_plane.c: the gate planes of several models under both rules (gate_plane.h).
#include "diag/gate_plane.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "io/safetensors.h"
#include "results/plot_xy.h"

#define PLANE_MAX 32

struct plane_model {
    char label[160], text[320];
    double rho, t, ratio, max_ratio, alpha;
    int smooth;
    char paper[16];
};

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static int read_model(struct plane_model *m, const char *file, const char *label, struct err *e) {
    struct safetensors st;
    int rc = st_open(&st, file, e);
    if (rc) return rc;
    const char *meta = st_meta(&st, "smooth_qk"), *id = st_meta(&st, "model_id");
    cJSON *j = meta ? cJSON_Parse(meta) : NULL;
    const cJSON *me = cJSON_GetObjectItem(j, "measured"), *pd = cJSON_GetObjectItem(j, "paper_decision");
    const cJSON *ratio = cJSON_GetObjectItem(me, "ratio"), *alphas = cJSON_GetObjectItem(me, "alphas");
    const cJSON *dec = cJSON_GetObjectItem(me, "decision");
    if (!cJSON_IsObject(me) || !cJSON_IsArray(ratio) || !cJSON_IsArray(alphas) || !cJSON_IsString(pd) ||
        !cJSON_IsString(dec)) {
        rc = err_set(e, ERR_FORMAT, "%s: metadata smooth_qk has no measured gate statistics (calibrate it with this "
                     "version: every calibration measures)", file);
        goto done;
    }
    snprintf(m->label, sizeof m->label, "%s", label ? label : id ? id : file);
    m->rho = num(j, "rho_K");
    m->t = num(j, "T_KQ");
    m->max_ratio = num(me, "max_ratio");
    double best = num(me, "best_alpha");
    m->ratio = NAN;
    for (int c = 0; c < cJSON_GetArraySize(alphas) && c < cJSON_GetArraySize(ratio); c++)
        if (cJSON_GetArrayItem(alphas, c)->valuedouble == best) m->ratio = cJSON_GetArrayItem(ratio, c)->valuedouble;
    m->smooth = !strcmp(dec->valuestring, "smooth");
    m->alpha = num(me, "alpha");
    snprintf(m->paper, sizeof m->paper, "%s", pd->valuestring);
    if (m->smooth) snprintf(m->text, sizeof m->text, "%.100s: paper %s, measured smooth %g (%.2f)", m->label, m->paper, m->alpha, m->ratio);
    else snprintf(m->text, sizeof m->text, "%.100s: paper %s, measured bypass (%.2f)", m->label, m->paper, m->ratio);
    if (!isfinite(m->rho) || !isfinite(m->t) || !isfinite(m->ratio) || !isfinite(m->max_ratio))
        rc = err_set(e, ERR_FORMAT, "%s: metadata smooth_qk: rho_K, T_KQ or the measured ratio is missing", file);
done:
    cJSON_Delete(j);
    st_close(&st);
    return rc;
}

static int write_svg(const char *dir, const char *name, const char *svg, struct err *e) {
    char path[4096];
    int rc = path_join(path, sizeof path, dir, name, e);
    return rc ? rc : file_write_atomic(path, svg, strlen(svg), e);
}

int gate_plane_write(const char *const *files, const char *const *labels, int n, const char *out_dir, struct err *e) {
    if (n < 1 || n > PLANE_MAX) return err_set(e, ERR_USAGE, "gate plane: %d scales files (1 to %d)", n, PLANE_MAX);
    struct plane_model m[PLANE_MAX];
    struct plot_point pp[PLANE_MAX], pm[PLANE_MAX];
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) rc = read_model(&m[i], files[i], labels ? labels[i] : NULL, e);
    if (rc || (rc = mkdir_p(out_dir, e))) return rc;
    double max_ratio = m[0].max_ratio;
    for (int i = 0; i < n; i++) {
        pp[i] = (struct plot_point){m[i].rho, m[i].t, m[i].text, m[i].smooth};
        pm[i] = (struct plot_point){m[i].t, m[i].ratio, m[i].text, m[i].smooth};
    }
    // the paper's regions at its thresholds (spec/calibration.md section 5)
    const struct plot_region rp[4] = {
        {-INFINITY, 6, -INFINITY, INFINITY, "Bypass", "#eeeeee"},
        {6, INFINITY, -INFINITY, 2, NULL, "#eeeeee"},
        {6, INFINITY, 2, 3, "Mild", "#fdf2d0"},
        {6, INFINITY, 3, INFINITY, "Strong", "#d9f0d9"},
    };
    const struct plot_region rm[2] = {
        {-INFINITY, INFINITY, -INFINITY, max_ratio, "smooth (ratio <= max_ratio, upper bound < 1)", "#d9f0d9"},
        {-INFINITY, INFINITY, max_ratio, INFINITY, "bypass", "#eeeeee"},
    };
    struct plot_axis px = {"rho_K = MaxAbs_K / P99_K (max over layers)", 0, 0, 0},
                     py = {"T_KQ = MaxAbs_K / MaxAbs_Q (max over layers)", 0, 0, 0},
                     mx = {"T_KQ (max over layers)", 0, 0, 0},
                     my = {"measured error ratio to bypass at the best alpha (mean over layers)", 0, 0, 0};
    char *svg = NULL;
    if (!(rc = plot_plane_svg(&svg, "Smooth-QK gate, paper rule (red: the measured rule smooths)", &px, &py,
                              &(struct plot_plane){rp, 4, pp, n}, e)))
        rc = write_svg(out_dir, "fig6_gate_plane_paper.svg", svg, e);
    free(svg);
    svg = NULL;
    if (!rc && !(rc = plot_plane_svg(&svg, "Smooth-QK gate, measured rule (red: smooth)", &mx, &my,
                                     &(struct plot_plane){rm, 2, pm, n}, e)))
        rc = write_svg(out_dir, "fig6_gate_plane_measured.svg", svg, e);
    free(svg);
    return rc;
}
