// run_calib.c: a run's Smooth-QK scales when none were given (see run_calib.h): calibrate's
// default file, else a calibration here first on the default source, written where the next
// run finds it and recorded in run.json.
#include "runplan/run_calib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attn.h"
#include "attention/scales.h"
#include "base/paths.h"
#include "io/safetensors.h"
#include "base/pool.h"
#include "base/sha256.h"
#include "calib/calib.h"
#include "calib/calib_run.h"
#include "eval/tasks/task.h"
#include "model/config.h"
#include "net/fetch.h"

// Measured speed of the calibration forward (bf16 attention, f32 activations) in multiply-adds
// per CPU-second on this project's GEMM (an AVX-512 machine: SmolLM2-135M, 64 x 512
// tokens, 58 CPU-s; docs/design/calibration.md), rounded down. The wall time is this over the threads
// on an idle machine, more on a busy one.
#define CALIB_MACS_PER_CPU_S 5.0e10
// The measured gate's error pass (calib/gate_err.c) in multiply-adds per CPU-second: SmolLM2-135M,
// 32 x 256 tokens, 46 CPU-s beyond its forward for 145 G multiply-adds (docs/results/gate.md), rounded down.
#define GATE_MACS_PER_CPU_S 3.0e9

int run_calib_needed(const struct run_opts *o) {
    for (int i = 0; i < o->n_modes; i++) {
        const struct attn_mode *m = attn_mode_find(o->modes[i]);
        if (m && (m->flags & ATTN_F_SQK)) return 1;
    }
    return 0;
}

void run_calib_drop_modes(struct run_opts *o, const char *why) {
    int w = 0;
    char dropped[256] = "";
    for (int i = 0; i < o->n_modes; i++) {
        const struct attn_mode *m = attn_mode_find(o->modes[i]);
        if (i > 0 && m && (m->flags & ATTN_F_SQK)) {
            size_t l = strlen(dropped);
            snprintf(dropped + l, sizeof dropped - l, "%s%s", l ? "," : "", o->modes[i]);
            continue;
        }
        o->modes[w++] = o->modes[i];
    }
    o->n_modes = w;
    if (dropped[0]) log_warn("run: skipping %s: %s", dropped, why);
}

// Multiply-adds per token of the forward pass (the linear layers and the LM head; attention's
// share is small at calibration lengths).
static double macs_per_token(const struct model_config *c) {
    double q = (double)c->n_heads * c->head_dim, kv = (double)c->n_kv_heads * c->head_dim;
    double layer = (double)c->dim * (2 * q + 2 * kv) + 3.0 * c->dim * c->hidden_dim;
    return c->n_layers * layer + (double)c->dim * c->vocab_size;
}

int run_calib_text(char *path, size_t n, const char *data_dir, int offline, struct err *e) {
    struct task_opts to = {.data_dir = data_dir};
    if (task_data_try(path, n, &to, RUN_CALIB_REL, 0)) return 0;
    // offline, the fetcher would only say (in its own words, for the project's data) what the
    // caller's one message says
    if (offline) { path[0] = 0; return err_set(e, ERR_NOTFOUND, "offline: %s is under no data root", RUN_CALIB_REL); }
    char root[4096];
    int rc = fetch_task_data(RUN_CALIB_SOURCE, offline, root, sizeof root, e);
    if (rc) { path[0] = 0; return rc; }
    if (snprintf(path, n, "%s/%s", root, RUN_CALIB_REL) >= (int)n) return err_set(e, ERR_RANGE, "path too long");
    return 0;
}

static cJSON *record_of(const struct calib_run *cr, const char *text, int user_text, const char *scales, double seconds) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "by", "run (no --scales and no scales file for this model)");
    cJSON_AddStringToObject(j, "source", user_text ? "--calib" : RUN_CALIB_SOURCE);
    cJSON_AddStringToObject(j, "text", text);
    cJSON_AddStringToObject(j, "source_desc", cr->source_desc);
    cJSON_AddNumberToObject(j, "samples", cr->result.n_samples);
    cJSON_AddNumberToObject(j, "length", RUN_CALIB_LEN);
    cJSON_AddStringToObject(j, "file", scales);
    cJSON_AddStringToObject(j, "gate", calib_branch_name(cr->result.branch));
    cJSON_AddNumberToObject(j, "alpha", cr->result.alpha);
    cJSON_AddStringToObject(j, "gate_rule", calib_rule_name(cr->result.rule));
    cJSON_AddNumberToObject(j, "seconds", seconds);
    return j;
}

// <cache>/scales/<scales id>-<weights fingerprint, 16 hex>[-text-<sha256 of the text, 12 hex>].safetensors
// (attn_scales_cache_path, plus the tag with --calib FILE: never taken for the default text's
// scales, and -measured for the measured gate rule's), and its directory
static int cache_scales(char *path, size_t n, const struct model_ref *m, const char *text, const char *rule,
                        struct err *e) {
    char tag[32] = "";
    int rc = attn_scales_cache_path(path, n, m->scales_id, m->dir, e);
    if (rc) return rc;
    if (text) {
        char *buf, th[65];
        size_t len;
        if ((rc = file_read_all(text, &buf, &len, e))) return err_prefix(e, "--calib");
        sha256_hex(buf, len, th);
        free(buf);
        snprintf(tag, sizeof tag, "-text-%.12s", th);
    }
    const size_t base = strlen(path) - strlen(".safetensors");
    if (snprintf(path + base, n - base, "%s%s.safetensors", strcmp(rule, "paper") ? "-measured" : "", tag) >= (int)(n - base))
        return err_set(e, ERR_RANGE, "scales path too long");
    return 0;
}

static int calibrate(char *scales, size_t n, cJSON **record, const struct model_ref *m, const char *text,
                     const struct run_calib_opts *o, struct err *e) {
    struct model_config cfg;
    int rc = cfg_load(&cfg, m->dir, e);
    if (rc) return rc;
    pool_set_threads(o->threads);
    double tokens = (double)RUN_CALIB_SAMPLES * RUN_CALIB_LEN;
    // the statistics forward, then the measured gate's: a second forward and the attention error
    // of the reference, bypass and each candidate alpha (QK^T and PV over half of each T x T
    // square per head)
    struct gate_opts go;
    gate_opts_default(&go);
    double gate = (double)RUN_CALIB_SAMPLES * cfg.n_layers * cfg.n_heads * RUN_CALIB_LEN * (RUN_CALIB_LEN / 2.0) *
                  2.0 * cfg.head_dim * (go.n_alpha + 2);
    double cpu = 2 * tokens * macs_per_token(&cfg) / CALIB_MACS_PER_CPU_S + gate / GATE_MACS_PER_CPU_S;
    double wall = cpu / pool_threads();
    log_info("run: no Smooth-QK scales for %s: calibrating first on %s (%s), %d samples x %d tokens, "
             "about %.0f CPU-s = %.0f s on %d idle thread%s (once: the next run reuses the scales)", m->name,
             o->calib_text ? "--calib" : RUN_CALIB_SOURCE " (Brown corpus)", text, RUN_CALIB_SAMPLES, RUN_CALIB_LEN, cpu < 1 ? 1 : cpu, wall < 1 ? 1 : wall,
             pool_threads(), pool_threads() == 1 ? "" : "s");
    struct calib_run_opts co;
    calib_run_opts_default(&co);
    co.ranks = CALIB_THIS_RANK; // under MPI: rank 0 alone, before the other ranks open the run
    co.samples = RUN_CALIB_SAMPLES;
    co.len = RUN_CALIB_LEN;
    co.threads = o->threads;
    struct calib_rule_args ra;
    calib_rule_args_default(&ra);
    ra.rule = o->gate_rule ? o->gate_rule : CALIB_RULE_DEFAULT;
    if (o->qmean) ra.qmean = o->qmean;
    if ((rc = calib_rule_args_apply(&ra, &co, e))) return rc;
    double t0 = time_now();
    struct calib_run cr;
    if ((rc = calib_run_source(&cr, m->dir, text, &co, e))) return err_prefix(e, "run: calibrating Smooth-QK");
    if (m->origin != MODEL_ORIGIN_PATH) snprintf(cr.model_id, sizeof cr.model_id, "%s", m->scales_id);
    char dir[4096];
    if (!(rc = cache_scales(scales, n, m, o->calib_text, ra.rule, e))) {
        snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(scales, '/') - scales), scales); // <cache>/scales
        rc = mkdir_p(dir, e);
    }
    struct calib_meta meta = {cr.model_id, cr.model_hash, cr.source_desc, cr.result.n_samples, RUN_CALIB_LEN, co.seed};
    if (!rc) rc = calib_write(scales, &cr.result, &meta, e);
    double secs = time_now() - t0;
    if (!rc) {
        log_info("run: calibrated in %.1f s: gate %s by the %s rule (paper: rho_K %.2f, T_KQ %.2f -> %s; measured: "
                 "error ratio %.3f at alpha %g -> %s), scales %s", secs, calib_branch_name(cr.result.branch),
                 calib_rule_name(cr.result.rule), cr.result.rho_k, cr.result.t_kq,
                 calib_branch_name(cr.result.paper_branch), cr.result.gate.ratio[cr.result.gate.best],
                 cr.result.gate.alpha[cr.result.gate.best], cr.result.gate.smooth ? "smooth" : "bypass", scales);
        if (calib_rules_disagree(&cr.result))
            log_warn("run: the Smooth-QK gate rules disagree on %s: paper %s, measured %s; the %s rule's scales are "
                     "used (--gate-rule chooses; docs/results/gate.md)", m->name, calib_branch_name(cr.result.paper_branch),
                     cr.result.gate.smooth ? "smooth" : "bypass", calib_rule_name(cr.result.rule));
        *record = record_of(&cr, text, o->calib_text != NULL, scales, secs);
    }
    calib_run_free(&cr);
    return rc;
}

// 1 when the cached file at path was made by the measured rule with other candidate alphas or
// another threshold than the rule's defaults now (gate_opts_default): an older default grid's
// decision is not today's, so it is made again (one log line says why). A file that cannot be
// read is not stale here: using it reports the problem.
static int stale_measured(const char *path) {
    struct safetensors st;
    struct err e = {0};
    if (st_open(&st, path, &e)) return 0;
    const char *rule = st_meta(&st, "gate_rule");
    cJSON *j = rule && !strcmp(rule, "measured") ? cJSON_Parse(st_meta(&st, "smooth_qk")) : NULL;
    st_close(&st);
    if (!j) return 0;
    struct gate_opts d;
    gate_opts_default(&d);
    const cJSON *me = cJSON_GetObjectItem(j, "measured"), *al = cJSON_GetObjectItem(me, "alphas");
    const cJSON *mr = cJSON_GetObjectItem(me, "max_ratio");
    int stale = cJSON_GetArraySize(al) != d.n_alpha + 1 || !cJSON_IsNumber(mr) || mr->valuedouble != d.max_ratio;
    char had[128] = "", now[128] = "";
    for (int c = 0; c < cJSON_GetArraySize(al); c++) {
        const cJSON *a = cJSON_GetArrayItem(al, c);
        stale |= !cJSON_IsNumber(a) || (c <= d.n_alpha && a->valuedouble != (c ? d.alpha[c - 1] : 0));
        snprintf(had + strlen(had), sizeof had - strlen(had), "%s%g", c ? "," : "", cJSON_IsNumber(a) ? a->valuedouble : -1);
    }
    for (int c = 0; c < d.n_alpha; c++) snprintf(now + strlen(now), sizeof now - strlen(now), ",%g", d.alpha[c]);
    if (stale)
        log_info("run: %s was measured with candidate alphas %s (max ratio %g); the measured rule's are now 0%s (%g): "
                 "calibrating again", path, had, cJSON_IsNumber(mr) ? mr->valuedouble : -1, now, d.max_ratio);
    cJSON_Delete(j);
    return stale;
}

// The one message for modes that need scales when none exist and none can be made: why, and
// the three ways out, each of which works from a clone of the repository.
static int no_scales(const struct model_ref *m, const struct run_calib_opts *o, struct err *e) {
    return err_set(e, ERR_NOTFOUND, "the modes asked for (hifa4 and every +sqk mode) need Smooth-QK scales; none exist "
                   "for %s and none can be made: the default calibration text (%s, %s under a data root) is not "
                   "installed%s. Three ways out: --calib FILE (calibrate first on any plain English text file, e.g. "
                   "/usr/share/common-licenses/GPL-3), --scales F (a scales file made by `hifa4-eval calibrate`), or "
                   "--scales none (run only the modes that need no scales)", m->name, RUN_CALIB_SOURCE, RUN_CALIB_REL,
                   o->offline ? " and --offline forbids fetching it" : " and could not be fetched");
}

int run_calib_default(char *scales, size_t n, cJSON **record, const struct model_ref *m,
                      const struct run_calib_opts *o, struct err *e) {
    *record = NULL;
    if (!o->calib_text && attn_scales_default(scales, n, m->scales_id, m->dir)) {
        log_info("run: using Smooth-QK scales %s (calibrate's default for this model; --scales overrides)", scales);
        return 0;
    }
    int rc = cache_scales(scales, n, m, o->calib_text, o->gate_rule ? o->gate_rule : CALIB_RULE_DEFAULT, e);
    if (rc) return rc;
    if (file_exists(scales) && !stale_measured(scales)) {
        log_info("run: using Smooth-QK scales %s (calibrated earlier for this model%s; --scales overrides)", scales,
                 o->calib_text ? " on this --calib text" : "");
        return 0;
    }
    if (o->calib_text) return calibrate(scales, n, record, m, o->calib_text, o, e);
    char text[4096];
    struct err why = {0};
    if (run_calib_text(text, sizeof text, o->data_dir, o->offline, &why)) {
        scales[0] = 0;
        return o->required ? no_scales(m, o, e) : 0;
    }
    return calibrate(scales, n, record, m, text, o, e);
}
