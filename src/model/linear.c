// linear.c: the weights as the GEMMs see them (model_internal.h). Resident: every matrix is
// packed once at open into binary32 GEMM panels (gemm.h) in one 64-byte aligned allocation.
// Streamed: each GEMM packs its matrix from the mapping, in chunks of whole panels, into one
// scratch just before use (bf16 pair panels from a bf16 checkpoint, else binary32). Every linear layer is gemm.h's deterministic GEMM on the pool: a
// row's bits depend on nothing but that row, so no batch size, row offset, thread count or
// CPU changes a result. Non-finite weights are counted in the panels just written (in cache),
// so a NaN or Inf in the checkpoint stops the load (or the streamed GEMM) instead of being scored.
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "base/host.h"
#include "base/pool.h"
#include "model/model_internal.h"

double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ---- packing: rows [r0, r0 + nr) of a matrix into mem, panels spread over the pool ----
struct pack_job {
    struct gemm_w *w;
    struct gemm_mat src;
    int per, n_panels;
    _Atomic size_t bad;
};
static void pack_task(void *ctx, int t, int slot) {
    (void)slot;
    struct pack_job *j = ctx;
    const int pa = t * j->per, pb = pa + j->per < j->n_panels ? pa + j->per : j->n_panels;
    gemm_pack_panels(j->w, &j->src, pa, pb);
    size_t bad = 0;
    if (j->w->fmt == GEMM_FMT_F32) {
        const size_t per = (size_t)j->w->K * GEMM_NR;
        for (const float *p = j->w->p + pa * per, *end = j->w->p + pb * per; p < end; p++) bad += !isfinite(*p);
    } else { // bf16 pairs: a half with all exponent bits set is Inf or NaN (also a value rounded to Inf)
        const size_t per = ((size_t)j->w->K + 1) / 2 * GEMM_NR;
        for (const uint32_t *q = j->w->q + pa * per, *end = j->w->q + pb * per; q < end; q++)
            bad += (*q & 0x7f800000u) == 0x7f800000u || (*q & 0x7f80u) == 0x7f80u;
    }
    if (bad) atomic_fetch_add(&j->bad, bad);
}

// Where packed rows go: a gemm_w over `bytes` of mem.
struct pack_dst {
    struct gemm_w *w;
    enum gemm_fmt fmt;
    void *mem;
    size_t bytes;
};

static int pack_rows(const struct model *m, struct pack_dst d, const struct wref *r, int r0, int nr, struct err *e) {
    const int type = r->t->dtype == ST_F32 ? GEMM_SRC_F32 : r->t->dtype == ST_BF16 ? GEMM_SRC_BF16 : GEMM_SRC_F16;
    const size_t esize = r->t->dtype == ST_F32 ? 4 : 2;
    if (gemm_w_init(d.w, d.fmt, d.mem, d.bytes, nr, r->cols))
        return err_set(e, ERR_INTERNAL, "model: cannot pack %s rows %d..%d", r->t->name, r0, r0 + nr - 1);
    const unsigned char *src = (const unsigned char *)r->t->data + (r->off + (size_t)r0 * r->cols) * esize;
    struct pack_job j = {d.w, {src, type, (size_t)r->cols, nr, r->cols}, 8, (nr + GEMM_NR - 1) / GEMM_NR, 0};
    pool_for((j.n_panels + j.per - 1) / j.per, pack_task, &j, m->opts.n_threads);
    if (atomic_load(&j.bad))
        return weights_nonfinite_err(r->t, r->off + (size_t)r0 * r->cols, (size_t)nr * r->cols, e);
    return 0;
}

static size_t packed_bytes(const struct wref *r, enum gemm_fmt fmt) {
    return (gemm_packed_bytes(fmt, r->rows, r->cols) + 63) & ~(size_t)63;
}

// The packed format of resident weights: bf16 panels under --weights bf16 (the dp contract
// when activations are bf16, else the fmaf chain on bf16-rounded weights), else binary32.
static enum gemm_fmt resident_fmt(const struct model *m) {
    if (m->weights != MODEL_WEIGHTS_BF16) return GEMM_FMT_F32;
    return m->opts.act_bf16 ? GEMM_FMT_BF16_DP : GEMM_FMT_BF16;
}

// Matrix i of the model in packing order: the layers' W_COUNT each, then lm_head.
static struct wref *matrix_at(struct model *m, int i) {
    return i < m->dims.n_layers * W_COUNT ? &m->layers[i / W_COUNT].w[i % W_COUNT] : &m->head;
}

static int pack_resident(struct model *m, size_t total, struct err *e) {
    const enum gemm_fmt fmt = resident_fmt(m);
    m->wbuf = aligned_alloc(64, total ? total : 64);
    if (!m->wbuf)
        return err_set(e, ERR_NOMEM, "model: cannot allocate %.2f GB for %s weights (try --weights stream)",
                       total * 1e-9, fmt == GEMM_FMT_F32 ? "binary32" : "bf16");
    size_t used = 0;
    for (int i = 0; i <= m->dims.n_layers * W_COUNT; i++) {
        struct wref *r = matrix_at(m, i);
        const struct pack_dst d = {&r->pw, fmt, (char *)m->wbuf + used, packed_bytes(r, fmt)};
        int rc = pack_rows(m, d, r, 0, r->rows, e);
        if (rc) return rc;
        used += packed_bytes(r, fmt);
    }
    return 0;
}

int weights_setup(struct model *m, size_t *res_bytes, struct err *e) {
    const int n_mat = m->dims.n_layers * W_COUNT;
    size_t total = 0, max_mat = 0;
    m->weights = m->opts.weights;
    for (int i = 0; i <= n_mat; i++) {
        const size_t b = packed_bytes(matrix_at(m, i), GEMM_FMT_F32);
        total += b;
        if (i < n_mat && b > max_mat) max_mat = b;
    }
    if (m->weights == MODEL_WEIGHTS_BF16) {
        total = 0;
        for (int i = 0; i <= n_mat; i++) total += packed_bytes(matrix_at(m, i), resident_fmt(m));
    }
    if (m->weights == MODEL_WEIGHTS_AUTO) {
        size_t avail = host_mem_available();
        m->weights = (double)total < 0.6 * (double)avail ? MODEL_WEIGHTS_F32 : MODEL_WEIGHTS_STREAM;
        log_debug("model: weights %s (%.2f GB packed binary32, %.2f GB available)",
                  m->weights == MODEL_WEIGHTS_F32 ? "f32" : "stream", total * 1e-9, avail * 1e-9);
    }
    *res_bytes = 0;
    if (m->weights == MODEL_WEIGHTS_F32 || m->weights == MODEL_WEIGHTS_BF16) {
        *res_bytes = total;
        return pack_resident(m, total, e);
    }
    // chunks of whole panels; at least one panel of the widest matrix (lm_head streams in chunks)
    const int wide = m->dims.D > m->dims.F ? m->dims.D : m->dims.F;
    const size_t floor_bytes = (size_t)GEMM_NR * (size_t)wide * 4;
    m->stream_bytes = max_mat > floor_bytes ? max_mat : floor_bytes;
    m->sbuf = aligned_alloc(64, m->stream_bytes);
    if (!m->sbuf) return err_set(e, ERR_NOMEM, "model: cannot allocate the weight stream buffer");
    return 0;
}

// ---- GEMMs ----
static void gemm_task(void *p, int t, int slot) {
    (void)slot;
    gemm_plan_task(p, t);
}

// y (M, w->N) at row stride y.ldy = x (M, K) W^T (+ bias) on the pool.
static int gemm(struct model *m, struct linear_out y, const float *x, const struct gemm_w *w, int M, const float *bias,
                struct err *e) {
    struct gemm_plan p;
    const struct gemm_io io = {y.y, (size_t)y.ldy, x, (size_t)w->K, M, bias,
                               m->opts.act_bf16 ? GEMM_ROUND_BF16 : GEMM_ROUND_NONE};
    int rc = gemm_plan_init(&p, &io, w, 0, w->N);
    if (rc) return err_set(e, ERR_INTERNAL, "model: GEMM %dx%dx%d refused (%d)", M, w->N, w->K, rc);
    const int nt = m->opts.n_threads < p.max_threads ? m->opts.n_threads : p.max_threads;
    pool_for(p.n_tasks, gemm_task, &p, nt);
    return 0;
}

// The panels a streamed matrix is packed into: a bf16 checkpoint's values into bf16 pair
// panels (GEMM_FMT_BF16: the fmaf chain on the same numbers, so the bits of binary32 panels,
// with half the bytes written and read per batch), any other source into binary32 panels.
static enum gemm_fmt stream_fmt(const struct wref *r) {
    return r->t->dtype == ST_BF16 ? GEMM_FMT_BF16 : GEMM_FMT_F32;
}

// A streamed matrix: packed just before the GEMM, in chunks of whole panels that fit the scratch.
static int linear_streamed(struct model *m, struct linear_out y, const float *x, const struct wref *r,
                           const float *bias, int M, struct err *e) {
    const enum gemm_fmt fmt = stream_fmt(r);
    int rc = 0, chunk = (int)(m->stream_bytes / gemm_packed_bytes(fmt, GEMM_NR, r->cols) * GEMM_NR);
    if (chunk < GEMM_NR) chunk = GEMM_NR;
    if (chunk > r->rows) chunk = r->rows;
    for (int r0 = 0; r0 < r->rows && !rc; r0 += chunk) {
        const int nr = r->rows - r0 < chunk ? r->rows - r0 : chunk;
        struct gemm_w w;
        double t0 = time_now();
        if ((rc = pack_rows(m, (struct pack_dst){&w, fmt, m->sbuf, m->stream_bytes}, r, r0, nr, e))) break;
        double t1 = time_now(), c1 = cpu_now();
        rc = gemm(m, (struct linear_out){y.y + r0, y.ldy}, x, &w, M, bias ? bias + r0 : NULL, e);
        m->stats.convert_s += t1 - t0;
        m->stats.gemm_s += time_now() - t1;
        m->stats.gemm_cpu_s += cpu_now() - c1;
        m->stats.n_gemm++;
    }
    return rc;
}

int linear(struct model *m, struct linear_out y, const float *x, const struct wref *r, const float *bias, int M,
           struct err *e) {
    int rc = 0;
    if (M <= 0) return 0;
    if (gemm_w_packed(&r->pw)) {
        double t0 = time_now(), c0 = cpu_now();
        rc = gemm(m, y, x, &r->pw, M, bias, e);
        m->stats.gemm_s += time_now() - t0;
        m->stats.gemm_cpu_s += cpu_now() - c0;
        m->stats.n_gemm++;
    } else {
        rc = linear_streamed(m, y, x, r, bias, M, e);
    }
    m->stats.gemm_flop += 2.0 * M * r->rows * r->cols;
    return rc;
}
