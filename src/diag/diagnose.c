// diagnose.c: outlier diagnostics (see diagnose.h): built-in prompts, Jaccard stability and CV
// (spec/calibration.md section 6), Table 1/8 printing, diagnose.json and the three figures.
#include "diag/diagnose.h"

#include <math.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "calib/calib_source.h"
#include "model/config.h"
#include "model/model.h"
#include "results/plot_xy.h"
#include "results/results.h"
#include "tokenizer/tokenizer.h"

// ---- built-in prompts (Appendix E: diverse genres; plain ASCII so every tokenizer takes them) ----
static const char *const prompt_name[DIAG_N_PROMPTS] = {"code", "math", "qa", "dialogue",
                                                        "narrative", "news", "technical", "data"};
static const char *const prompt_text[DIAG_N_PROMPTS] = {
    // code
    "def merge_sorted(a, b):\n"
    "    \"\"\"Merge two sorted lists into one sorted list.\"\"\"\n"
    "    i, j, out = 0, 0, []\n"
    "    while i < len(a) and j < len(b):\n"
    "        if a[i] <= b[j]:\n"
    "            out.append(a[i]); i += 1\n"
    "        else:\n"
    "            out.append(b[j]); j += 1\n"
    "    out.extend(a[i:]); out.extend(b[j:])\n"
    "    return out\n\n"
    "print(merge_sorted([1, 4, 9], [2, 3, 10, 11]))\n",
    // math
    "Problem: A train leaves the station at 9:15 and travels 180 km at an average speed of 72 km/h. "
    "When does it arrive?\n"
    "Solution: The travel time is 180 / 72 = 2.5 hours, that is 2 hours and 30 minutes. "
    "Adding this to 9:15 gives 11:45. Check: 72 * 2.5 = 180, so the distance matches. "
    "Next, solve x^2 - 5x + 6 = 0: the roots are x = 2 and x = 3 because (x - 2)(x - 3) = 0.",
    // question answering
    "Question: Why is the sky blue during the day but red at sunset?\n"
    "Answer: Sunlight is scattered by the molecules of the air, and short wavelengths such as blue "
    "are scattered much more strongly than long ones (Rayleigh scattering). At noon we see this "
    "scattered blue light from every direction. At sunset the light crosses far more air, most of "
    "the blue is scattered away before it reaches us, and the remaining light looks orange and red.",
    // dialogue
    "Customer: Hi, I ordered a pair of running shoes last week but the box arrived empty.\n"
    "Agent: I am very sorry to hear that. Could you give me your order number, please?\n"
    "Customer: Sure, it is 48213-B.\n"
    "Agent: Thank you. I can see the order here. I will send a new pair today at no cost, and you "
    "do not need to return anything.\n"
    "Customer: That is great, thanks a lot for the quick help!\n"
    "Agent: You are welcome. Have a nice day.",
    // narrative
    "Once upon a time, in a small village at the edge of a dark forest, there lived an old baker "
    "named Tom. Every morning before sunrise he lit his oven and sang while the bread was rising. "
    "One winter night a little fox knocked on his door, cold and hungry. Tom gave it a warm roll "
    "and a place by the fire. From that day on, the fox followed him everywhere, and the children "
    "of the village called them the best friends in the world.",
    // news
    "GENEVA, March 3 - Officials from twelve countries agreed on Tuesday to expand a joint program "
    "that monitors glaciers in the Alps, after new measurements showed the ice lost about 4 percent "
    "of its volume last year. The program will add 40 automatic stations and share its data openly. "
    "\"We need better numbers to plan for water shortages,\" said the head of the project, adding "
    "that funding is secured until 2030.",
    // technical instructions
    "To replace the filter, first switch off the pump and close both valves. Unscrew the housing "
    "counterclockwise and remove the old cartridge. Rinse the housing with clean water; do not use "
    "soap or solvents. Insert the new cartridge with the arrow pointing toward the outlet, check "
    "that the O-ring sits in its groove, and tighten the housing by hand. Open the valves slowly "
    "and let the system run for five minutes before use.",
    // structured data
    "{\"id\": 1042, \"name\": \"Ada Lovelace\", \"born\": 1815, \"fields\": [\"mathematics\", "
    "\"computing\"], \"works\": [{\"title\": \"Notes on the Analytical Engine\", \"year\": 1843}]}\n"
    "city,country,population,area_km2\n"
    "Tokyo,Japan,13960000,2194\n"
    "Lagos,Nigeria,15388000,1171\n"
    "Lima,Peru,9751000,2672\n"
    "Oslo,Norway,709000,454\n"
    "Quito,Ecuador,2800000,372\n",
};

const char *diag_prompt(int i, const char **name) {
    if (i < 0 || i >= DIAG_N_PROMPTS) return NULL;
    if (name) *name = prompt_name[i];
    return prompt_text[i];
}

// ---- stability helpers ----
int diag_top_count(int Hkv, int d) {
    int64_t n = (int64_t)Hkv * d;
    int64_t k = (n * 5 + 99) / 100; // ceil(0.05 n) in integers
    return k < 1 ? 1 : (int)k;
}

struct ranked { float v; int i; };
// value descending (NaN last), then index ascending: a total order, so qsort is deterministic
static int cmp_desc(const void *pa, const void *pb) {
    const struct ranked *a = pa, *b = pb;
    int xn = isnan(a->v), yn = isnan(b->v);
    if (xn != yn) return xn ? 1 : -1;
    if (!xn && a->v != b->v) return a->v > b->v ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

int diag_top_n(int *idx, const float *v, int n, int k) {
    if (k > n) k = n;
    if (k <= 0) return 0;
    struct ranked *all = malloc((size_t)n * sizeof *all);
    if (!all) return -1;
    for (int i = 0; i < n; i++) all[i] = (struct ranked){v[i], i};
    qsort(all, (size_t)n, sizeof *all, cmp_desc);
    for (int i = 0; i < k; i++) idx[i] = all[i].i;
    free(all);
    return k;
}

double diag_jaccard(const int *a, int na, const int *b, int nb) {
    if (na == 0 && nb == 0) return 1;
    int inter = 0;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (a[i] == b[j]) { inter++; break; }
    return (double)inter / (double)(na + nb - inter);
}

void diag_stability_free(struct diag_stability *s) {
    if (!s) return;
    free(s->top);
    free(s->jaccard);
    free(s->cv_idx);
    free(s->cv_mean);
    free(s->cv);
    memset(s, 0, sizeof *s);
}

int diag_stability_compute(struct diag_stability *out, const struct calib_stats *s, struct err *e) {
    memset(out, 0, sizeof *out);
    const int P = s->n_samples, n = s->Hkv * s->d, N = diag_top_count(s->Hkv, s->d);
    if (P < 1) return err_set(e, ERR_RANGE, "diagnose: no samples for the stability statistics");
    out->n_samples = P;
    out->top_n = N > n ? n : N;
    out->top = malloc((size_t)P * out->top_n * sizeof *out->top);
    out->jaccard = malloc((size_t)P * P * sizeof *out->jaccard);
    out->cv_idx = malloc((size_t)out->top_n * sizeof *out->cv_idx);
    out->cv_mean = malloc((size_t)out->top_n * sizeof *out->cv_mean);
    out->cv = malloc((size_t)out->top_n * sizeof *out->cv);
    float *mean = malloc((size_t)n * sizeof *mean);
    if (!out->top || !out->jaccard || !out->cv_idx || !out->cv_mean || !out->cv || !mean) goto oom;
    const size_t stride = (size_t)s->n_layers * n; // one sample's kmax block; layer 0 first
    for (int p = 0; p < P; p++)
        if (diag_top_n(out->top + (size_t)p * out->top_n, s->kmax + p * stride, n, out->top_n) < 0) goto oom;
    double sum = 0;
    for (int a = 0; a < P; a++)
        for (int b = 0; b < P; b++) {
            double j = diag_jaccard(out->top + (size_t)a * out->top_n, out->top_n, out->top + (size_t)b * out->top_n,
                                    out->top_n);
            out->jaccard[(size_t)a * P + b] = j;
            if (a < b) sum += j;
        }
    out->jaccard_mean = P >= 2 ? sum / ((double)P * (P - 1) / 2) : NAN;
    // top channels by mean Kmax_s (binary64 mean, rounded to float only for the ranking)
    for (int i = 0; i < n; i++) {
        double m = 0;
        for (int p = 0; p < P; p++) m += s->kmax[p * stride + i];
        mean[i] = (float)(m / P);
    }
    if (diag_top_n(out->cv_idx, mean, n, out->top_n) < 0) goto oom;
    out->cv_avg = 0;
    out->cv_max = 0;
    for (int k = 0; k < out->top_n; k++) {
        int i = out->cv_idx[k];
        double m = 0, v = 0;
        for (int p = 0; p < P; p++) m += s->kmax[p * stride + i];
        m /= P;
        for (int p = 0; p < P; p++) v += (s->kmax[p * stride + i] - m) * (s->kmax[p * stride + i] - m);
        v /= P;
        out->cv_mean[k] = m;
        out->cv[k] = m > 0 ? sqrt(v) / m : 0;
        out->cv_avg += out->cv[k];
        if (out->cv[k] > out->cv_max) out->cv_max = out->cv[k];
    }
    out->cv_avg /= out->top_n;
    free(mean);
    return 0;
oom:
    free(mean);
    diag_stability_free(out);
    return err_set(e, ERR_NOMEM, "diagnose: out of memory");
}

// ---- running ----
void diag_opts_default(struct diag_opts *o) {
    memset(o, 0, sizeof *o);
    o->calib = NULL;
    calib_run_opts_default(&o->run);
    o->run.samples = 1024;
    o->run.len = 512;
}

void diag_free(struct diagnose *d) {
    if (!d) return;
    calib_run_free(&d->stats);
    calib_run_free(&d->prompts);
    calib_result_free(&d->s05);
    diag_stability_free(&d->stab);
    free(d->heat);
    qk_gains_free(&d->gains);
    k_source_free(&d->ksrc);
    memset(d, 0, sizeof *d);
}

const struct calib_stats *diag_prompt_stats(const struct diagnose *d) {
    return d->from_prompts ? &d->stats.stats : &d->prompts.stats;
}

// Everything that follows the forward passes: alpha-0.5 scales, stability, heat map, q/k gains,
// the k_proj bias's share of the K outliers.
static int finish(struct diagnose *d, const char *model_dir, const struct diag_opts *o, struct err *e) {
    snprintf(d->model_id, sizeof d->model_id, "%s", d->stats.model_id);
    snprintf(d->model_hash, sizeof d->model_hash, "%s", d->stats.model_hash);
    d->gate = o->run.gate;
    struct calib_gate_opts g05 = o->run.gate;
    g05.alpha_forced = 0.5;
    int rc = calib_compute(&d->s05, &d->stats.stats, o->run.agg, &g05, e);
    if (rc) return rc;
    if ((rc = diag_stability_compute(&d->stab, diag_prompt_stats(d), e))) return rc;
    const struct calib_stats *s = &d->stats.stats;
    const size_t n = (size_t)s->Hkv * s->d, stride = (size_t)s->n_layers * n;
    d->heat = calloc(n, sizeof *d->heat);
    if (!d->heat) return err_set(e, ERR_NOMEM, "diagnose: out of memory");
    for (int p = 0; p < s->n_samples; p++)
        for (size_t i = 0; i < n; i++) d->heat[i] = fmax(d->heat[i], s->kmax[p * stride + i]);
    // the q/k norm gains and the k_proj biases: one open reads both (nothing packed)
    struct model *m = NULL;
    if ((rc = model_open_bound(&m, model_dir, e))) return err_prefix(e, "q/k norm gains and k_proj bias");
    if (!(rc = qk_gains_load(&d->gains, m, e))) rc = k_source_compute(&d->ksrc, m, s, e);
    model_free(m);
    return rc;
}

int diag_run_ids(struct diagnose *d, const char *model_dir, struct diag_seqs prompts, struct diag_seqs stat,
                 const char *stat_desc, const struct diag_opts *o, struct err *e) {
    memset(d, 0, sizeof *d);
    const int32_t *prompt_ids = prompts.ids, *stat_ids = stat.ids;
    const int *prompt_lens = prompts.lens, *stat_lens = stat.lens, n_prompts = prompts.n, n_stat = stat.n;
    if (n_prompts < 2 || n_prompts > DIAG_N_PROMPTS)
        return err_set(e, ERR_RANGE, "diagnose: %d prompts (2..%d)", n_prompts, DIAG_N_PROMPTS);
    d->n_prompts = n_prompts;
    for (int i = 0; i < n_prompts; i++) {
        d->prompt_tokens[i] = prompt_lens[i];
        snprintf(d->prompt_names[i], sizeof d->prompt_names[i], "sample%d", i);
    }
    int rc;
    struct calib_run_opts po = o->run; // the prompts' run only feeds the stability: no measured gate
    po.measure = 0;
    if (stat_ids) {
        if ((rc = calib_run_seqs(&d->stats, model_dir, stat_ids, stat_lens, n_stat, &o->run, e))) goto fail;
        if ((rc = calib_run_seqs(&d->prompts, model_dir, prompt_ids, prompt_lens, n_prompts, &po, e))) goto fail;
        snprintf(d->source, sizeof d->source, "%s", stat_desc ? stat_desc : "explicit samples");
    } else {
        if ((rc = calib_run_seqs(&d->stats, model_dir, prompt_ids, prompt_lens, n_prompts, &o->run, e))) goto fail;
        d->from_prompts = 1;
        snprintf(d->source, sizeof d->source, "%s", stat_desc ? stat_desc : "the built-in prompts");
    }
    if ((rc = finish(d, model_dir, o, e))) goto fail;
    return 0;
fail:
    diag_free(d);
    return rc;
}

int diag_run(struct diagnose *d, const char *model_dir, const char *tok_dir, const struct diag_opts *o,
             struct err *e) {
    memset(d, 0, sizeof *d);
    struct model_config cfg;
    struct tokenizer *tok = NULL;
    int32_t *ids = NULL;
    int lens[DIAG_N_PROMPTS], n_ids = 0, rc;
    if ((rc = cfg_load(&cfg, model_dir, e))) return rc;
    if ((rc = tok_load(&tok, tok_dir ? tok_dir : model_dir, e))) return rc;
    if (tok_vocab_size(tok) > cfg.vocab_size) {
        rc = err_set(e, ERR_MISMATCH, "tokenizer of %s has %d tokens but the model's vocabulary is %d",
                     tok_dir ? tok_dir : model_dir, tok_vocab_size(tok), cfg.vocab_size);
        tok_free(tok);
        return rc;
    }
    int bos = tok_adds_bos(tok) ? tok_bos_id(tok) : -1;
    for (int i = 0; i < DIAG_N_PROMPTS; i++) {
        int32_t *p = NULL;
        int np = 0;
        if ((rc = tok_encode(tok, prompt_text[i], strlen(prompt_text[i]), 0, &p, &np, e))) {
            err_prefix(e, "diagnose: prompt '%s'", prompt_name[i]);
            goto done;
        }
        int len = np + (bos >= 0);
        if (len > cfg.max_seq) len = cfg.max_seq;
        int32_t *nb = realloc(ids, ((size_t)n_ids + (size_t)len) * sizeof *ids);
        if (!nb) { free(p); rc = err_set(e, ERR_NOMEM, "diagnose: out of memory"); goto done; }
        ids = nb;
        int k = 0;
        if (bos >= 0) ids[n_ids + k++] = bos;
        for (int j = 0; k < len; j++) ids[n_ids + k++] = p[j];
        lens[i] = len;
        n_ids += len;
        free(p);
    }
    int total = n_ids;
    char desc[1100];
    if (!o->calib) {
        snprintf(desc, sizeof desc, "the %d built-in prompts (%d tokens)", DIAG_N_PROMPTS, total);
        rc = diag_run_ids(d, model_dir, (struct diag_seqs){ids, lens, DIAG_N_PROMPTS}, (struct diag_seqs){0}, desc, o, e);
        if (!rc)
            for (int i = 0; i < DIAG_N_PROMPTS; i++) snprintf(d->prompt_names[i], sizeof d->prompt_names[i], "%s", prompt_name[i]);
        goto done;
    }
    // statistics from the calibration source (calib_run_source cuts and runs the samples),
    // stability from the prompts
    memset(d, 0, sizeof *d);
    d->n_prompts = DIAG_N_PROMPTS;
    for (int i = 0; i < DIAG_N_PROMPTS; i++) {
        d->prompt_tokens[i] = lens[i];
        snprintf(d->prompt_names[i], sizeof d->prompt_names[i], "%s", prompt_name[i]);
    }
    if ((rc = calib_run_source(&d->stats, model_dir, o->calib, &o->run, e))) goto fail;
    struct calib_run_opts po = o->run; // the prompts' run only feeds the stability: no measured gate
    po.measure = 0;
    if ((rc = calib_run_seqs(&d->prompts, model_dir, ids, lens, DIAG_N_PROMPTS, &po, e))) goto fail;
    snprintf(d->source, sizeof d->source, "%s", d->stats.source_desc);
    if ((rc = finish(d, model_dir, o, e))) goto fail;
    goto done;
fail:
    diag_free(d);
done:
    free(ids);
    tok_free(tok);
    return rc;
}

// ---- printing ----
static float min_scale(const struct calib_result *r, int l) {
    const float *s = r->scales + (size_t)l * r->Hkv * r->d;
    float v = s[0];
    for (int i = 1; i < r->Hkv * r->d; i++) v = s[i] < v ? s[i] : v;
    return v;
}

static void max_scale(const struct calib_result *r, int l, float *v, int *h, int *c) {
    const float *s = r->scales + (size_t)l * r->Hkv * r->d;
    int at = 0;
    for (int i = 1; i < r->Hkv * r->d; i++)
        if (s[i] > s[at]) at = i;
    *v = s[at];
    *h = at / r->d;
    *c = at % r->d;
}

// Why the paper's rule decides branch b: its condition on rho_K and T_KQ with the thresholds used.
static void paper_reason(char *out, size_t n, int b, const struct calib_result *r, const struct calib_gate_opts *g) {
    if (b == CALIB_STRONG)
        snprintf(out, n, "rho_K %.3g >= %g and T_KQ %.3g > %g", r->rho_k, g->rho_min, r->t_kq, g->t_strong);
    else if (b == CALIB_MILD)
        snprintf(out, n, "rho_K %.3g >= %g and %g <= T_KQ %.3g <= %g", r->rho_k, g->rho_min, g->t_mild, r->t_kq,
                 g->t_strong);
    else if (r->rho_k < g->rho_min)
        snprintf(out, n, "rho_K %.3g < %g (no dominant K outlier channel)", r->rho_k, g->rho_min);
    else
        snprintf(out, n, "rho_K %.3g >= %g but T_KQ %.3g < %g (Q is as wide as K)", r->rho_k, g->rho_min, r->t_kq,
                 g->t_mild);
}

// Why the rule that made the scales decided r->branch: the paper's condition, or the measured
// rule's error ratio at its best alpha against the threshold of "helps".
static void gate_reason(char *out, size_t n, const struct calib_result *r, const struct calib_gate_opts *g) {
    const struct gate_result *m = &r->gate;
    if (r->rule != CALIB_RULE_MEASURED || !m->layer) { paper_reason(out, n, r->branch, r, g); return; }
    snprintf(out, n, "measured rule: attention-output error ratio %.3f at alpha %g [%.3f, %.3f] %s ratio <= %g with "
             "95%% upper bound < 1", m->ratio[m->best], m->alpha[m->best], m->lo, m->hi, m->smooth ? "meets" : "fails",
             m->max_ratio);
}
void diag_print(FILE *f, const struct diagnose *d) {
    const struct calib_result *r = &d->stats.result;
    fprintf(f, "diagnose: %s (model hash %.12s)\nstatistics: %s; aggregator %s over %d samples\n\n", d->model_id,
            d->model_hash, d->source, calib_agg_name(r->agg), r->n_samples);
    fprintf(f, "Table 1 (model level: max over layers)\n");
    fprintf(f, "%-24s %8s %8s %10s  %s\n", "model", "rho_K", "T_K/Q", "Jaccard", "gate");
    fprintf(f, "%-24.24s %8.3f %8.3f %10.3f  %s (alpha %.2f)\n", d->model_id, r->rho_k, r->t_kq, d->stab.jaccard_mean,
            calib_branch_name(r->branch), r->alpha);
    fprintf(f, "  (rho_K at layer %d, T_K/Q at layer %d; Jaccard: mean of %d off-diagonal pairs, layer 0, top %d)\n\n",
            r->rho_layer, r->t_layer, d->stab.n_samples * (d->stab.n_samples - 1) / 2, d->stab.top_n);
    fprintf(f, "Table 8 (per layer)\n");
    fprintf(f, "%5s %10s %9s %8s %8s %10s  %-17s %-17s\n", "layer", "MaxAbs_K", "P99_K", "rho_K", "T_KQ", "MaxAbs_Q",
            "max s (h,c)", "max s@0.5 (h,c)");
    for (int l = 0; l < r->n_layers; l++) {
        const struct calib_layer_stats *ls = &r->layer[l];
        float s, s5;
        int h, c, h5, c5;
        max_scale(r, l, &s, &h, &c);
        max_scale(&d->s05, l, &s5, &h5, &c5);
        char a[40], b[40];
        snprintf(a, sizeof a, "%.4g (%d,%d)", s, h, c);
        snprintf(b, sizeof b, "%.4g (%d,%d)", s5, h5, c5);
        fprintf(f, "%5d %10.4g %9.4g %8.3f %8.3f %10.4g  %-17s %-17s\n", l, ls->maxabs_k, ls->kp99, ls->rho_k, ls->t_kq,
                ls->maxabs_q, a, b);
    }
    fputc('\n', f);
    qk_gains_print(f, &d->gains);
    fputc('\n', f);
    k_source_print(f, &d->ksrc);
    const struct diag_stability *st = &d->stab;
    const struct calib_stats *ps = diag_prompt_stats(d);
    fprintf(f, "\nOutlier-channel stability (Appendix E): layer 0, top N = ceil(5%% of %d x %d) = %d pairs per prompt\n",
            ps->Hkv, ps->d, st->top_n);
    fprintf(f, "%-10s", "Jaccard");
    for (int b = 0; b < st->n_samples; b++) fprintf(f, " %9.9s", d->prompt_names[b]);
    fputc('\n', f);
    for (int a = 0; a < st->n_samples; a++) {
        fprintf(f, "%-10.10s", d->prompt_names[a]);
        for (int b = 0; b < st->n_samples; b++) fprintf(f, " %9.3f", st->jaccard[(size_t)a * st->n_samples + b]);
        fprintf(f, "   (%d tokens)\n", d->prompt_tokens[a]);
    }
    fprintf(f, "mean off-diagonal Jaccard (%d pairs): %.3f\n", st->n_samples * (st->n_samples - 1) / 2,
            st->jaccard_mean);
    fprintf(f, "inter-sample CV of Kmax_s over the %d prompts, top %d pairs by mean Kmax_s: mean %.1f%%, max %.1f%%\n",
            st->n_samples, st->top_n, 100 * st->cv_avg, 100 * st->cv_max);
    int show = st->top_n < 10 ? st->top_n : 10;
    for (int k = 0; k < show; k++)
        fprintf(f, "  (h %d, c %3d)  mean Kmax_s %9.4g  CV %5.1f%%\n", st->cv_idx[k] / ps->d, st->cv_idx[k] % ps->d,
                st->cv_mean[k], 100 * st->cv[k]);
    if (show < st->top_n) fprintf(f, "  ... (%d more in diagnose.json)\n", st->top_n - show);
    char why[256];
    gate_reason(why, sizeof why, r, &d->gate);
    fprintf(f, "\ngate: %s, because %s", calib_branch_name(r->branch), why);
    if (d->gate.alpha_forced >= 0) fprintf(f, " (alpha forced to %.2f)", d->gate.alpha_forced);
    fprintf(f, "; largest rho_K at layer %d\n", r->rho_layer);
    if (r->rule == CALIB_RULE_MEASURED && r->gate.layer) {
        paper_reason(why, sizeof why, r->paper_branch, r, &d->gate);
        fprintf(f, "paper rule: %s, because %s\n", calib_branch_name(r->paper_branch), why);
    }
}

// ---- figures ----
int diag_svgs(const struct diagnose *d, char **fig3, char **fig4, char **fig6, struct err *e) {
    *fig3 = *fig4 = *fig6 = NULL;
    const struct calib_result *r = &d->stats.result;
    const int L = r->n_layers;
    char title[512];
    int rc;
    // Fig. 3: layer-0 heat map
    snprintf(title, sizeof title, "%s: layer 0 max |K| per (kv head, channel)", d->model_id);
    const struct plot_grid heat = {d->heat, r->Hkv, r->d};
    if ((rc = plot_heatmap_svg(fig3, title, "channel", "kv head", "max |K|", heat, e))) return rc;
    // Fig. 4: layer-wise statistics
    double *buf = malloc((size_t)L * 5 * sizeof *buf);
    if (!buf) { rc = err_set(e, ERR_NOMEM, "diagnose: out of memory"); goto fail; }
    double *x = buf, *ymax = buf + L, *y999 = buf + 2 * L, *y99 = buf + 3 * L, *ystd = buf + 4 * L;
    for (int l = 0; l < L; l++) {
        x[l] = l;
        ymax[l] = r->layer[l].maxabs_k;
        y999[l] = r->layer[l].kp999;
        y99[l] = r->layer[l].kp99;
        ystd[l] = r->layer[l].kstd;
    }
    struct plot_xy_series s4[4] = {{"max |K|", x, ymax, L, 1}, {"p99.9 |K|", x, y999, L, 1},
                                   {"p99 |K|", x, y99, L, 1}, {"std K", x, ystd, L, 1}};
    struct plot_axis xa = {"layer", L > 1 ? 0 : -1, L > 1 ? L - 1 : 1, 0}, ya = {"K statistic (aggregated)", 0, 0, 1};
    snprintf(title, sizeof title, "%s: layer-wise K statistics (%s over samples)", d->model_id, calib_agg_name(r->agg));
    rc = plot_line_svg(fig4, title, &xa, &ya, s4, 4, e);
    free(buf);
    if (rc) goto fail;
    // Fig. 6: gate plane with the paper's reference models (Table 1)
    const struct calib_gate_opts *g = &d->gate;
    struct plot_region reg[4] = {
        {-INFINITY, g->rho_min, -INFINITY, INFINITY, "Bypass", "#eeeeee"},
        {g->rho_min, INFINITY, -INFINITY, g->t_mild, NULL, "#eeeeee"},
        {g->rho_min, INFINITY, g->t_mild, g->t_strong, "Mild", "#fdf2d0"},
        {g->rho_min, INFINITY, g->t_strong, INFINITY, "Strong", "#d9f0d9"},
    };
    char me[300];
    snprintf(me, sizeof me, "%s (%.2f, %.2f)", d->model_id, r->rho_k, r->t_kq);
    struct plot_point pts[6] = {
        {14.15, 14.47, "Qwen3-8B", 0}, {8.11, 2.17, "Gemma2-9B", 0}, {4.78, 2.70, "LLaMA3.1-8B", 0},
        {3.56, 1.63, "Mistral-7B", 0}, {3.69, 1.50, "Phi-4", 0},     {r->rho_k, r->t_kq, me, 1},
    };
    int big = r->rho_k > 60 || r->t_kq > 60; // a linear plane would squash the references
    struct plot_axis px = {"rho_K = MaxAbs_K / P99_K (max over layers)", 0, 0, big},
                     py = {"T_KQ = MaxAbs_K / MaxAbs_Q (max over layers)", 0, 0, big};
    snprintf(title, sizeof title, "Smooth-QK gate: %s -> %s", d->model_id, calib_branch_name(r->branch));
    if ((rc = plot_plane_svg(fig6, title, &px, &py, &(struct plot_plane){reg, 4, pts, 6}, e))) goto fail;
    return 0;
fail:
    free(*fig3); free(*fig4); free(*fig6);
    *fig3 = *fig4 = *fig6 = NULL;
    return rc;
}

// ---- diagnose.json ----
static cJSON *num_array(const double *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static cJSON *to_json(const struct diagnose *d) {
    const struct calib_result *r = &d->stats.result;
    const struct calib_stats *ps = diag_prompt_stats(d);
    cJSON *j = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(j, "model");
    cJSON_AddStringToObject(m, "id", d->model_id);
    cJSON_AddStringToObject(m, "hash", d->model_hash);
    cJSON *st = cJSON_AddObjectToObject(j, "statistics");
    cJSON_AddStringToObject(st, "source", d->source);
    cJSON_AddBoolToObject(st, "from_builtin_prompts", d->from_prompts);
    cJSON_AddNumberToObject(st, "samples", r->n_samples);
    cJSON_AddStringToObject(st, "aggregator", calib_agg_name(r->agg));
    cJSON_AddStringToObject(st, "attention_mode", "bf16");
    cJSON_AddStringToObject(st, "activations", "f32");
    cJSON *g = cJSON_AddObjectToObject(j, "gate_options");
    cJSON_AddNumberToObject(g, "rho_min", d->gate.rho_min);
    cJSON_AddNumberToObject(g, "t_strong", d->gate.t_strong);
    cJSON_AddNumberToObject(g, "t_mild", d->gate.t_mild);
    cJSON_AddStringToObject(g, "mode", d->gate.mode == CALIB_GATE_LAYER ? "layer" : "model");
    if (d->gate.alpha_forced >= 0) cJSON_AddNumberToObject(g, "alpha_forced", d->gate.alpha_forced);
    else cJSON_AddNullToObject(g, "alpha_forced");
    cJSON *t1 = cJSON_AddObjectToObject(j, "table1");
    cJSON_AddNumberToObject(t1, "rho_K", r->rho_k);
    cJSON_AddNumberToObject(t1, "rho_K_layer", r->rho_layer);
    cJSON_AddNumberToObject(t1, "T_KQ", r->t_kq);
    cJSON_AddNumberToObject(t1, "T_KQ_layer", r->t_layer);
    cJSON_AddNumberToObject(t1, "jaccard", d->stab.jaccard_mean);
    cJSON_AddStringToObject(t1, "gate", calib_branch_name(r->branch));
    cJSON_AddNumberToObject(t1, "alpha", r->alpha);
    char why[256];
    gate_reason(why, sizeof why, r, &d->gate);
    cJSON_AddStringToObject(t1, "reason", why);
    cJSON_AddStringToObject(t1, "rule", calib_rule_name(r->rule));
    paper_reason(why, sizeof why, r->paper_branch, r, &d->gate);
    cJSON_AddStringToObject(t1, "paper_gate", calib_branch_name(r->paper_branch));
    cJSON_AddStringToObject(t1, "paper_reason", why);
    cJSON *t8 = cJSON_AddArrayToObject(j, "table8");
    for (int l = 0; l < r->n_layers; l++) {
        const struct calib_layer_stats *ls = &r->layer[l];
        cJSON *o = cJSON_CreateObject();
        float s, s5;
        int h, c, h5, c5;
        max_scale(r, l, &s, &h, &c);
        max_scale(&d->s05, l, &s5, &h5, &c5);
        cJSON_AddNumberToObject(o, "layer", l);
        cJSON_AddNumberToObject(o, "MaxAbs_K", ls->maxabs_k);
        cJSON_AddNumberToObject(o, "P99_K", ls->kp99);
        cJSON_AddNumberToObject(o, "P999_K", ls->kp999);
        cJSON_AddNumberToObject(o, "std_K", ls->kstd);
        cJSON_AddNumberToObject(o, "MaxAbs_Q", ls->maxabs_q);
        cJSON_AddNumberToObject(o, "P99_Q", ls->qp99);
        cJSON_AddNumberToObject(o, "rho_K", ls->rho_k);
        cJSON_AddNumberToObject(o, "T_KQ", ls->t_kq);
        cJSON_AddStringToObject(o, "branch", calib_branch_name(ls->branch));
        cJSON_AddNumberToObject(o, "alpha", ls->alpha);
        cJSON_AddNumberToObject(o, "max_scale", s);
        cJSON_AddNumberToObject(o, "max_scale_kv_head", h);
        cJSON_AddNumberToObject(o, "max_scale_channel", c);
        cJSON_AddNumberToObject(o, "min_scale", min_scale(r, l)); // with max_scale: Table 8's Q expansion range
        cJSON_AddNumberToObject(o, "max_scale_alpha05", s5);
        cJSON_AddNumberToObject(o, "max_scale_alpha05_kv_head", h5);
        cJSON_AddNumberToObject(o, "max_scale_alpha05_channel", c5);
        cJSON_AddItemToArray(t8, o);
    }
    cJSON_AddItemToObject(j, "fig2_qk_gains", qk_gains_json(&d->gains));
    cJSON_AddItemToObject(j, "k_source", k_source_json(&d->ksrc));
    cJSON *pr = cJSON_AddArrayToObject(j, "prompts");
    for (int i = 0; i < d->n_prompts; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", d->prompt_names[i]);
        cJSON_AddNumberToObject(o, "tokens", d->prompt_tokens[i]);
        cJSON_AddItemToArray(pr, o);
    }
    const struct diag_stability *sb = &d->stab;
    cJSON *sj = cJSON_AddObjectToObject(j, "stability");
    cJSON_AddNumberToObject(sj, "layer", 0);
    cJSON_AddNumberToObject(sj, "pairs", ps->Hkv * ps->d);
    cJSON_AddNumberToObject(sj, "top_n", sb->top_n);
    cJSON *tops = cJSON_AddArrayToObject(sj, "top");
    for (int p = 0; p < sb->n_samples; p++) {
        cJSON *a = cJSON_CreateArray();
        for (int k = 0; k < sb->top_n; k++) {
            int i = sb->top[(size_t)p * sb->top_n + k];
            cJSON *hc = cJSON_CreateArray();
            cJSON_AddItemToArray(hc, cJSON_CreateNumber(i / ps->d));
            cJSON_AddItemToArray(hc, cJSON_CreateNumber(i % ps->d));
            cJSON_AddItemToArray(a, hc);
        }
        cJSON_AddItemToArray(tops, a);
    }
    cJSON *jm = cJSON_AddArrayToObject(sj, "jaccard");
    for (int a = 0; a < sb->n_samples; a++)
        cJSON_AddItemToArray(jm, num_array(sb->jaccard + (size_t)a * sb->n_samples, sb->n_samples));
    cJSON_AddNumberToObject(sj, "jaccard_mean", sb->jaccard_mean);
    cJSON *cv = cJSON_AddArrayToObject(sj, "cv");
    for (int k = 0; k < sb->top_n; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "kv_head", sb->cv_idx[k] / ps->d);
        cJSON_AddNumberToObject(o, "channel", sb->cv_idx[k] % ps->d);
        cJSON_AddNumberToObject(o, "mean_kmax", sb->cv_mean[k]);
        cJSON_AddNumberToObject(o, "cv", sb->cv[k]);
        cJSON_AddItemToArray(cv, o);
    }
    cJSON_AddNumberToObject(sj, "cv_mean", sb->cv_avg);
    cJSON_AddNumberToObject(sj, "cv_max", sb->cv_max);
    cJSON *hm = cJSON_AddObjectToObject(j, "heatmap_layer0");
    cJSON_AddStringToObject(hm, "value", "max |K| over every token of the statistics set");
    cJSON *rows = cJSON_AddArrayToObject(hm, "max_abs");
    for (int h = 0; h < r->Hkv; h++) cJSON_AddItemToArray(rows, num_array(d->heat + (size_t)h * r->d, r->d));
    cJSON *figs = cJSON_AddArrayToObject(j, "figures");
    if (d->gains.n_layers) cJSON_AddItemToArray(figs, cJSON_CreateString("fig2_k_norm_gains.svg"));
    cJSON_AddItemToArray(figs, cJSON_CreateString("fig3_layer0_heatmap.svg"));
    cJSON_AddItemToArray(figs, cJSON_CreateString("fig4_layer_k_stats.svg"));
    cJSON_AddItemToArray(figs, cJSON_CreateString("fig6_gate_plane.svg"));
    return j;
}

int diag_write(const struct diagnose *d, const char *out_dir, struct err *e) {
    int rc = mkdir_p(out_dir, e);
    if (rc) return rc;
    char *f3, *f4, *f6, path[4096];
    if ((rc = diag_svgs(d, &f3, &f4, &f6, e))) return rc;
    const char *names[3] = {"fig3_layer0_heatmap.svg", "fig4_layer_k_stats.svg", "fig6_gate_plane.svg"};
    char *svgs[3] = {f3, f4, f6};
    for (int i = 0; i < 3 && !rc; i++) {
        if (!(rc = path_join(path, sizeof path, out_dir, names[i], e))) rc = file_write_atomic(path, svgs[i], strlen(svgs[i]), e);
    }
    free(f3); free(f4); free(f6);
    if (rc) return rc;
    if (d->gains.n_layers) { // Fig. 2, for a model with q/k norm
        char *f2;
        if ((rc = qk_gains_svg(&f2, &d->gains, d->model_id, e))) return rc;
        if (!(rc = path_join(path, sizeof path, out_dir, "fig2_k_norm_gains.svg", e))) rc = file_write_atomic(path, f2, strlen(f2), e);
        free(f2);
        if (rc) return rc;
    }
    cJSON *j = to_json(d);
    if (!j) return err_set(e, ERR_NOMEM, "diagnose: out of memory");
    if (!(rc = path_join(path, sizeof path, out_dir, "diagnose.json", e))) rc = results_write_json(path, j, e);
    cJSON_Delete(j);
    return rc;
}
