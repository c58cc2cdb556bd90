// gate_err.c: attention-output error of QK quantization per candidate scale set (gate_err.h).
// gate_err_seq_ref is the literal formula; gate_err_seq the same arithmetic reorganized: K
// transposed so a row's scores are computed with the keys in the lanes, each lane adding its
// products in channel order (the reference's order), and heads as pool tasks.
#include "calib/gate_err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention/hif4.h"
#include "base/pool.h"

static const char *qmean_names[] = {"none", "token", "channel"};
const char *gate_qmean_name(int q) { return q >= 0 && q < 3 ? qmean_names[q] : "?"; }
int gate_qmean_parse(const char *s, int *out) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, qmean_names[i])) { *out = i; return 0; }
    return -1;
}

static int check(const struct gate_seq *s, const struct gate_err_cfg *g, int n_cand, struct err *e) {
    if (s->T <= 0 || s->H <= 0 || s->Hkv <= 0 || s->H % s->Hkv || s->d <= 0 || n_cand <= 0 || s->window < 0 ||
        (g->qmean == GATE_QMEAN_CHANNEL && g->tile <= 0) || g->qmean < 0 || g->qmean > 2)
        return err_set(e, ERR_RANGE, "gate error: bad sizes T=%d H=%d Hkv=%d d=%d candidates=%d window=%d tile=%d",
                       s->T, s->H, s->Hkv, s->d, n_cand, s->window, g->tile);
    return 0;
}

// first key visible to query i
static int first_key(const struct gate_seq *s, int i) { return s->window > 0 && i - s->window + 1 > 0 ? i - s->window + 1 : 0; }

static double capped(const struct gate_seq *s, float S) {
    return s->softcap > 0 ? (double)s->softcap * tanh((double)S / (double)s->softcap) : (double)S;
}

// ---- reference ----
// qs of row i, head h under scales sc ([d] of the head's kv head, NULL = bypass)
static void ref_qs(float *qs, const struct gate_seq *s, int i, int h, const float *sc) {
    const float *q = s->q + ((size_t)i * s->H + h) * s->d;
    for (int c = 0; c < s->d; c++) qs[c] = sc ? round_bf16(q[c] * sc[c]) : q[c];
}
static void ref_ks(float *ks, const struct gate_seq *s, int j, int kv, const float *sc) {
    const float *k = s->k + ((size_t)j * s->Hkv + kv) * s->d;
    for (int c = 0; c < s->d; c++) ks[c] = sc ? round_bf16(k[c] / sc[c]) : k[c];
}

// Softmax of S[lo..i] and PV into o[d] (binary64, keys ascending).
static void ref_softmax_pv(double *o, const double *S, int lo, int i, const struct gate_seq *s, int kv) {
    const int d = s->d;
    double m = -INFINITY, l = 0;
    for (int j = lo; j <= i; j++)
        if (S[j] > m) m = S[j];
    for (int c = 0; c < d; c++) {
        double acc = 0;
        for (int j = lo; j <= i; j++) acc += exp(S[j] - m) * (double)s->v[((size_t)j * s->Hkv + kv) * d + c];
        o[c] = acc;
    }
    for (int j = lo; j <= i; j++) l += exp(S[j] - m);
    for (int c = 0; c < d; c++) o[c] /= l;
}

int gate_err_seq_ref(const struct gate_seq *s, const struct gate_err_cfg *g, const float *const *cand, int n_cand,
                     double *err2, double *ref2, struct err *e) {
    int rc = check(s, g, n_cand, e);
    if (rc) return rc;
    const int T = s->T, H = s->H, d = s->d, grp = H / s->Hkv;
    float *qs = malloc((size_t)d * sizeof *qs), *qz = malloc((size_t)d * sizeof *qz), *qx = malloc((size_t)d * sizeof *qx);
    float *ks = malloc((size_t)d * sizeof *ks), *kx = malloc((size_t)d * sizeof *kx), *mu = malloc((size_t)d * sizeof *mu);
    float *tmp = malloc((size_t)d * sizeof *tmp);
    double *S = malloc((size_t)T * sizeof *S), *o_ref = malloc((size_t)d * sizeof *o_ref), *o = malloc((size_t)d * sizeof *o);
    double *eh = malloc((size_t)n_cand * sizeof *eh); // this head's sums, added to err2 after it
    if (!qs || !qz || !qx || !ks || !kx || !mu || !tmp || !S || !o_ref || !o || !eh) {
        rc = err_set(e, ERR_NOMEM, "gate error: out of memory");
        goto done;
    }
    for (int h = 0; h < H; h++) {
        const int kv = h / grp;
        double rh = 0;
        for (int ci = 0; ci < n_cand; ci++) eh[ci] = 0;
        for (int i = 0; i < T; i++) {
            const int lo = first_key(s, i);
            const float *q = s->q + ((size_t)i * H + h) * d;
            for (int j = lo; j <= i; j++) {
                const float *k = s->k + ((size_t)j * s->Hkv + kv) * d;
                float dot = 0;
                for (int c = 0; c < d; c++) dot += q[c] * k[c];
                S[j] = capped(s, s->sm * dot);
            }
            ref_softmax_pv(o_ref, S, lo, i, s, kv);
            for (int c = 0; c < d; c++) rh += o_ref[c] * o_ref[c];
            for (int ci = 0; ci < n_cand; ci++) {
                const float *sc = cand[ci] ? cand[ci] + (size_t)kv * d : NULL;
                ref_qs(qs, s, i, h, sc);
                float mu_t = 0;
                if (g->qmean == GATE_QMEAN_TOKEN) {
                    float sum = 0;
                    for (int c = 0; c < d; c++) sum += qs[c];
                    mu_t = sum / (float)d;
                    for (int c = 0; c < d; c++) qz[c] = qs[c] - mu_t;
                } else if (g->qmean == GATE_QMEAN_CHANNEL) {
                    const int t0 = i / g->tile * g->tile, t1 = t0 + g->tile < T ? t0 + g->tile : T;
                    for (int c = 0; c < d; c++) mu[c] = 0;
                    for (int r = t0; r < t1; r++) {
                        ref_qs(tmp, s, r, h, sc);
                        for (int c = 0; c < d; c++) mu[c] += tmp[c];
                    }
                    for (int c = 0; c < d; c++) mu[c] /= (float)(t1 - t0);
                    for (int c = 0; c < d; c++) qz[c] = qs[c] - mu[c];
                } else {
                    for (int c = 0; c < d; c++) qz[c] = qs[c];
                }
                hif4_qdq(qx, qz, d, HIF4_RECIPE_NORMATIVE);
                for (int j = lo; j <= i; j++) {
                    ref_ks(ks, s, j, kv, sc);
                    hif4_qdq(kx, ks, d, HIF4_RECIPE_NORMATIVE);
                    float dot = 0, corr = 0;
                    for (int c = 0; c < d; c++) dot += qx[c] * kx[c];
                    if (g->qmean == GATE_QMEAN_TOKEN) {
                        float kappa = 0;
                        for (int c = 0; c < d; c++) kappa += ks[c];
                        corr = mu_t * kappa;
                    } else if (g->qmean == GATE_QMEAN_CHANNEL) {
                        for (int c = 0; c < d; c++) corr += mu[c] * ks[c];
                    }
                    S[j] = capped(s, s->sm * (dot + corr));
                }
                ref_softmax_pv(o, S, lo, i, s, kv);
                for (int c = 0; c < d; c++) eh[ci] += (o[c] - o_ref[c]) * (o[c] - o_ref[c]);
            }
        }
        for (int ci = 0; ci < n_cand; ci++) err2[ci] += eh[ci];
        *ref2 += rh;
    }
done:
    free(qs); free(qz); free(qx); free(ks); free(kx); free(mu); free(tmp); free(S); free(o_ref); free(o); free(eh);
    return rc;
}

// ---- fast path ----
struct fast_job {
    const struct gate_seq *s;
    const struct gate_err_cfg *g;
    const float *const *cand;
    int n_cand, n_tiles;
    double *eh, *rh;     // (H, n_cand), (H): per-head sums
    float *fscr;         // per slot: fper floats
    double *dscr;        // per slot: dper doubles
    size_t fper, dper;
};

// Scores of row i against keys lo..i (lo = first_key): S[j] = capped(f32(sm * f32(dot_j + corr_j))), dot_j the
// binary32 sum over c of qrow[c] * KT[c][j] in channel order (keys in the lanes).
static void row_scores(double *S, float *acc, const float *qrow, const float *KT, const float *corr, int i,
                       const struct gate_seq *s) {
    const int T = s->T, lo = first_key(s, i);
    for (int j = lo; j <= i; j++) acc[j] = 0;
    for (int c = 0; c < s->d; c++) {
        const float qc = qrow[c], *kt = KT + (size_t)c * T;
        for (int j = lo; j <= i; j++) acc[j] += qc * kt[j];
    }
    if (corr)
        for (int j = lo; j <= i; j++) S[j] = capped(s, s->sm * (acc[j] + corr[j]));
    else
        for (int j = lo; j <= i; j++) S[j] = capped(s, s->sm * acc[j]);
}

// Softmax of S[lo..i] and PV into o[d] (binary64), as ref_softmax_pv: each exp computed once.
static void fast_softmax_pv(double *o, const double *S, double *p, int lo, int i, const struct gate_seq *s, int kv) {
    const int d = s->d;
    double m = -INFINITY, l = 0;
    for (int j = lo; j <= i; j++)
        if (S[j] > m) m = S[j];
    for (int j = lo; j <= i; j++) p[j] = exp(S[j] - m);
    for (int c = 0; c < d; c++) o[c] = 0;
    for (int j = lo; j <= i; j++) {
        const float *v = s->v + ((size_t)j * s->Hkv + kv) * d;
        for (int c = 0; c < d; c++) o[c] += p[j] * (double)v[c];
    }
    for (int j = lo; j <= i; j++) l += p[j];
    for (int c = 0; c < d; c++) o[c] /= l;
}

static void transpose(float *KT, const float *x, int T, int d) {
    for (int j = 0; j < T; j++)
        for (int c = 0; c < d; c++) KT[(size_t)c * T + j] = x[(size_t)j * d + c];
}

// Candidate ci of head h: qx rows and KT of its smoothed, Q-Mean'd, quantized operands, and the
// correction rows (token: mu_i * kappa_j computed per row; channel: delta per tile).
static void fast_candidate(struct fast_job *J, int h, int ci, int slot, double *eh) {
    const struct gate_seq *s = J->s;
    const int T = s->T, d = s->d, kv = h / (s->H / s->Hkv), qm = J->g->qmean, tile = J->g->tile;
    float *f = J->fscr + (size_t)slot * J->fper; // the slot's scratch, laid out as fast_task's
    double *S = J->dscr + (size_t)slot * J->dper, *p = S + T, *o = p + T;
    const double *oref = o + d;
    const size_t Td = (size_t)T * d;
    float *KT = f, *ks = KT + Td, *qs = ks + Td, *acc = qs + Td, *kappa = acc + T, *mu_t = kappa + T, *corr = mu_t + T;
    float *mu = corr + T, *delta = mu + (size_t)J->n_tiles * d;
    const float *sc = J->cand[ci] ? J->cand[ci] + (size_t)kv * d : NULL;
    for (int j = 0; j < T; j++) {
        const float *k = s->k + ((size_t)j * s->Hkv + kv) * d;
        for (int c = 0; c < d; c++) ks[(size_t)j * d + c] = sc ? round_bf16(k[c] / sc[c]) : k[c];
        const float *q = s->q + ((size_t)j * s->H + h) * d;
        for (int c = 0; c < d; c++) qs[(size_t)j * d + c] = sc ? round_bf16(q[c] * sc[c]) : q[c];
    }
    if (qm == GATE_QMEAN_TOKEN)
        for (int j = 0; j < T; j++) {
            float sum = 0, sq = 0;
            for (int c = 0; c < d; c++) sum += ks[(size_t)j * d + c];
            kappa[j] = sum;
            for (int c = 0; c < d; c++) sq += qs[(size_t)j * d + c];
            mu_t[j] = sq / (float)d;
        }
    if (qm == GATE_QMEAN_CHANNEL)
        for (int b = 0; b < J->n_tiles; b++) {
            const int t0 = b * tile, t1 = t0 + tile < T ? t0 + tile : T;
            float *m = mu + (size_t)b * d;
            for (int c = 0; c < d; c++) m[c] = 0;
            for (int r = t0; r < t1; r++)
                for (int c = 0; c < d; c++) m[c] += qs[(size_t)r * d + c];
            for (int c = 0; c < d; c++) m[c] /= (float)(t1 - t0);
            for (int j = 0; j < T; j++) {
                float sum = 0;
                for (int c = 0; c < d; c++) sum += m[c] * ks[(size_t)j * d + c];
                delta[(size_t)b * T + j] = sum;
            }
        }
    // qz in place of qs, then qx = qdq(qz) in place; kx = qdq(ks) in place, transposed
    for (int i = 0; i < T; i++)
        for (int c = 0; c < d; c++)
            qs[(size_t)i * d + c] -= qm == GATE_QMEAN_TOKEN ? mu_t[i] : qm == GATE_QMEAN_CHANNEL ? mu[(size_t)(i / tile) * d + c] : 0;
    hif4_qdq_rows(qs, d, qs, d, T, d, HIF4_RECIPE_NORMATIVE);
    hif4_qdq_rows(ks, d, ks, d, T, d, HIF4_RECIPE_NORMATIVE);
    transpose(KT, ks, T, d);
    for (int i = 0; i < T; i++) {
        const int lo = first_key(s, i);
        const float *cr = NULL;
        if (qm == GATE_QMEAN_TOKEN) {
            for (int j = lo; j <= i; j++) corr[j] = mu_t[i] * kappa[j];
            cr = corr;
        } else if (qm == GATE_QMEAN_CHANNEL) {
            cr = delta + (size_t)(i / tile) * T;
        } else {
            for (int j = lo; j <= i; j++) corr[j] = 0;
            cr = corr;
        }
        row_scores(S, acc, qs + (size_t)i * d, KT, cr, i, s);
        fast_softmax_pv(o, S, p, lo, i, s, kv);
        const double *orow = oref + (size_t)i * d;
        for (int c = 0; c < d; c++) *eh += (o[c] - orow[c]) * (o[c] - orow[c]);
    }
}

static void fast_task(void *ctx, int h, int slot) {
    struct fast_job *J = ctx;
    const struct gate_seq *s = J->s;
    const int T = s->T, d = s->d, kv = h / (s->H / s->Hkv);
    float *f = J->fscr + (size_t)slot * J->fper;
    double *S = J->dscr + (size_t)slot * J->dper, *p = S + T, *o = p + T, *oref = o + d;
    // the reference output of every row: unsmoothed, unquantized operands
    float *KT = f, *acc = f + 3 * (size_t)T * d;
    for (int j = 0; j < T; j++)
        for (int c = 0; c < d; c++) KT[(size_t)c * T + j] = s->k[((size_t)j * s->Hkv + kv) * d + c];
    double rh = 0;
    for (int i = 0; i < T; i++) {
        const int lo = first_key(s, i);
        row_scores(S, acc, s->q + ((size_t)i * s->H + h) * d, KT, NULL, i, s);
        double *orow = oref + (size_t)i * d;
        fast_softmax_pv(orow, S, p, lo, i, s, kv);
        for (int c = 0; c < d; c++) rh += orow[c] * orow[c];
    }
    J->rh[h] = rh;
    for (int ci = 0; ci < J->n_cand; ci++) {
        double eh = 0;
        fast_candidate(J, h, ci, slot, &eh);
        J->eh[(size_t)h * J->n_cand + ci] = eh;
    }
}

int gate_err_seq(const struct gate_seq *s, const struct gate_err_cfg *g, const float *const *cand, int n_cand,
                 double *err2, double *ref2, struct err *e) {
    int rc = check(s, g, n_cand, e);
    if (rc) return rc;
    const int T = s->T, d = s->d, H = s->H, tile = g->qmean == GATE_QMEAN_CHANNEL ? g->tile : T;
    const int n_tiles = (T + tile - 1) / tile, slots = pool_slots();
    struct fast_job J = {s, g, cand, n_cand, n_tiles, NULL, NULL, NULL, NULL, 0, 0};
    // KT, ks, qs (T x d each); acc, kappa, mu_t, corr (T each); mu (tiles x d); delta (tiles x T)
    J.fper = 3 * (size_t)T * d + 4 * (size_t)T + (size_t)n_tiles * d + (size_t)n_tiles * T;
    J.dper = 2 * (size_t)T + d + (size_t)T * d; // S, p, o, oref
    J.eh = malloc((size_t)H * n_cand * sizeof *J.eh);
    J.rh = malloc((size_t)H * sizeof *J.rh);
    J.fscr = malloc((size_t)slots * J.fper * sizeof *J.fscr);
    J.dscr = malloc((size_t)slots * J.dper * sizeof *J.dscr);
    if (!J.eh || !J.rh || !J.fscr || !J.dscr) {
        rc = err_set(e, ERR_NOMEM, "gate error: out of memory for %d tokens x %d channels", T, d);
    } else {
        pool_for(H, fast_task, &J, g->max_threads);
        for (int h = 0; h < H; h++) {
            for (int ci = 0; ci < n_cand; ci++) err2[ci] += J.eh[(size_t)h * n_cand + ci];
            *ref2 += J.rh[h];
        }
    }
    free(J.eh); free(J.rh); free(J.fscr); free(J.dscr);
    return rc;
}
