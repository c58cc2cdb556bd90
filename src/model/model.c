// model.c: weight binding for the six architectures, the run state and the batched forward
// pass (see model.h). Per layer: RMSNorm -> q/k/v GEMMs (+bias) -> [Qwen3 q/k norm] -> RoPE
// -> attn_forward (all sequences) -> o GEMM -> [Gemma2 post norm] -> residual -> norm ->
// gate/up GEMMs -> act*up -> down GEMM -> [Gemma2 post norm] -> residual. Every linear layer
// is the deterministic GEMM of gemm.h on weights packed once at load (or packed per GEMM from
// the mapping in stream mode): a row's bits depend on nothing but that row, so no batch size,
// row offset, thread count or CPU changes a result. Loops run on the worker pool (base/pool.h).
#include "model/model.h"
#include "model/perturb.h"

#include <math.h>
#include <stdatomic.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/host.h"
#include "base/pool.h"
#include "model/gemm.h"
#include "model/kvcache.h"
#include "model/ops.h"
#include "io/safetensors.h"

// ---- weights ----
// A matrix (rows, cols) inside a checkpoint tensor (fused tensors hold several, at element
// offset `off`). pw: its packed binary32 copy (gemm.h) when resident; pw.p NULL when streamed.
struct wref {
    const struct st_tensor *t;
    size_t off, n;
    int rows, cols;
    struct gemm_w pw;
};

enum { W_Q, W_K, W_V, W_O, W_GATE, W_UP, W_DOWN, W_COUNT };
enum { B_Q, B_K, B_V, B_O, B_GATE, B_UP, B_DOWN, B_COUNT };

struct layer_w {
    struct wref w[W_COUNT];
    const float *b[B_COUNT];   // biases or NULL, (rows of w[i])
    const float *in_norm;      // (dim) input_layernorm
    const float *post_attn_norm; // (dim) post_attention_layernorm (pre-MLP norm except Gemma2)
    const float *pre_ffn_norm, *post_ffn_norm; // (dim) Gemma2 only
    const float *q_norm, *k_norm; // (head_dim) Qwen3 only
};

struct model {
    struct model_config cfg;
    struct model_opts opts;
    struct safetensors st;
    char hash[65];
    int weights;                 // resolved: F32 or STREAM
    struct layer_w *layers;      // (n_layers)
    const struct st_tensor *embed; // (vocab, dim)
    struct wref head;            // lm_head (or embed when tied)
    const float *final_norm;     // (dim)
    void *wbuf;                  // resident packed matrices (one 64-byte aligned allocation)
    float *small;                // norms and biases (one allocation)
    size_t small_n, small_used;
    void *sbuf;                  // stream scratch: one packed chunk of stream_rows rows
    size_t stream_bytes;
    int stream_rows;
    // ---- run state (one allocation, sized at open) ----
    float *run;                  // run-state rows (max_tokens)
    float *x, *xb, *tmp;         // (max_tokens, dim)
    float *q, *att;              // (max_tokens, n_heads*head_dim)
    float *k, *v;                // (max_tokens, n_kv_heads*head_dim)
    float *gate, *up;            // (max_tokens, hidden_dim)
    int *ibuf;                   // seq_off | pos | long | seq_len (max_tokens each)
    struct model_seq *seqs;      // (max_tokens) model_forward's batch as uncached sequences
    struct attn_past *apast;     // (max_tokens) one layer's pasts of a cached batch
    double *rope;                // cos | sin (max_seq, rope_dim/2) [| long cos | long sin]
    struct attn_ctx *attn;
    struct model_stats stats;
};

void model_opts_default(struct model_opts *o) {
    memset(o, 0, sizeof *o);
    o->act_bf16 = 1;
    o->weights = MODEL_WEIGHTS_AUTO;
    o->max_tokens = 4096;
    o->max_seq = 0;
    o->n_threads = 0;
}

int model_weights_parse(const char *s) {
    if (!strcmp(s, "auto")) return MODEL_WEIGHTS_AUTO;
    if (!strcmp(s, "f32")) return MODEL_WEIGHTS_F32;
    if (!strcmp(s, "stream")) return MODEL_WEIGHTS_STREAM;
    return -1;
}

const struct model_config *model_cfg(const struct model *m) { return &m->cfg; }
const struct model_opts *model_get_opts(const struct model *m) { return &m->opts; }
int model_weights_mode(const struct model *m) { return m->weights; }

// ---- the null perturbation of run --replicas (perturb.h) ----
// Tensor numbers: layer l's matrix i is l * W_COUNT + i; lm_head PERTURB_T_HEAD; the norms and
// biases (one arena, binding order) PERTURB_T_SMALL.
#define PERTURB_T_HEAD 0x40000000u
#define PERTURB_T_SMALL 0x40000001u
struct perturb_job {
    struct model *m;
    uint64_t seed;
    int replica;
};
static void perturb_task(void *ctx, int t, int slot) {
    (void)slot;
    const struct perturb_job *j = ctx;
    struct model *m = j->m;
    const int n_mat = m->cfg.n_layers * W_COUNT;
    struct perturb_key k = {j->seed, j->replica, 0};
    if (t < n_mat) {
        k.tensor = (uint32_t)t;
        struct gemm_w *w = &m->layers[t / W_COUNT].w[t % W_COUNT].pw;
        if (w->p) perturb_packed(w, &k);
    } else if (t == n_mat) {
        k.tensor = PERTURB_T_HEAD;
        perturb_packed(&m->head.pw, &k);
    } else {
        k.tensor = PERTURB_T_SMALL;
        perturb_array(m->small, m->small_used, &k, 0);
    }
}

int model_perturb(struct model *m, uint64_t seed, int replica, struct err *e) {
    if (replica == 0) return 0;
    if (m->weights != MODEL_WEIGHTS_F32 || !m->head.pw.p)
        return err_set(e, ERR_USAGE, "model: the replicas' perturbation moves resident binary32 weights; these are "
                       "streamed (use --weights f32)");
    struct perturb_job j = {m, seed, replica};
    pool_for(m->cfg.n_layers * W_COUNT + 2, perturb_task, &j, m->opts.n_threads);
    return 0;
}
const char *model_hash(const struct model *m) { return m->hash; }
const struct cJSON *model_st_metadata(const struct model *m) { return m->st.metadata; }
struct attn_ctx *model_attn(struct model *m) { return m->attn; }
const struct model_stats *model_stats(const struct model *m) { return &m->stats; }
void model_reset_stats(struct model *m) { memset(&m->stats, 0, sizeof m->stats); }

// Exact widening of n elements of t starting at element off (data may be unaligned). Returns
// how many of them are not finite (exponent bits all ones), counted in the same pass.
static size_t convert(float *dst, const struct st_tensor *t, size_t off, size_t n) {
    const unsigned char *src = (const unsigned char *)t->data;
    size_t bad = 0;
    if (t->dtype == ST_F32) {
        memcpy(dst, src + off * 4, n * 4);
        for (size_t i = 0; i < n; i++) bad += !isfinite(dst[i]);
        return bad;
    }
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + (off + i) * 2, 2);
        dst[i] = t->dtype == ST_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
        bad += !isfinite(dst[i]);
    }
    return bad;
}

// The error for a tensor holding a non-finite value among elements [off, off + n): names the
// tensor, the first such element (row and column of a matrix) and its value.
static int nonfinite_err(const struct st_tensor *t, size_t off, size_t n, struct err *e) {
    size_t i = 0;
    float v = 0;
    for (; i < n; i++) {
        convert(&v, t, off + i, 1);
        if (!isfinite(v)) break;
    }
    const size_t at = off + i, cols = t->ndim == 2 ? (size_t)t->shape[1] : 0;
    if (cols)
        return err_set(e, ERR_FORMAT, "tensor '%s' [row %zu, column %zu] = %g: the checkpoint holds a non-finite weight",
                       t->name, at / cols, at % cols, (double)v);
    return err_set(e, ERR_FORMAT, "tensor '%s' [%zu] = %g: the checkpoint holds a non-finite weight", t->name, at, (double)v);
}

// ---- packing (gemm.h): rows [r0, r0 + nr) of a matrix into mem, panels spread over the pool ----
// Non-finite weights are counted in the packed panels just written (in cache), so a NaN or Inf
// in the checkpoint stops the load (or the streamed GEMM) instead of being scored.
struct pack_job {
    struct gemm_w *w;
    const void *src;
    int type, per, n_panels;
    size_t ld;
    _Atomic size_t bad;
};
static void pack_task(void *ctx, int t, int slot) {
    (void)slot;
    struct pack_job *j = ctx;
    const int pa = t * j->per, pb = pa + j->per < j->n_panels ? pa + j->per : j->n_panels;
    gemm_pack_panels(j->w, j->src, j->type, j->ld, pa, pb);
    const float *p = j->w->p + (size_t)pa * (size_t)j->w->K * GEMM_NR, *end = j->w->p + (size_t)pb * (size_t)j->w->K * GEMM_NR;
    size_t bad = 0;
    for (; p < end; p++) bad += !isfinite(*p);
    if (bad) atomic_fetch_add(&j->bad, bad);
}

static int pack_rows(struct model *m, struct gemm_w *w, void *mem, size_t bytes, const struct wref *r, int r0, int nr,
                     struct err *e) {
    const int type = r->t->dtype == ST_F32 ? GEMM_SRC_F32 : r->t->dtype == ST_BF16 ? GEMM_SRC_BF16 : GEMM_SRC_F16;
    const size_t esize = r->t->dtype == ST_F32 ? 4 : 2;
    if (gemm_w_init(w, mem, bytes, nr, r->cols))
        return err_set(e, ERR_INTERNAL, "model: cannot pack %s rows %d..%d", r->t->name, r0, r0 + nr - 1);
    const unsigned char *src = (const unsigned char *)r->t->data + (r->off + (size_t)r0 * r->cols) * esize;
    struct pack_job j = {w, src, type, 8, (nr + GEMM_NR - 1) / GEMM_NR, (size_t)r->cols, 0};
    pool_for((j.n_panels + j.per - 1) / j.per, pack_task, &j, m->opts.n_threads);
    if (atomic_load(&j.bad)) return nonfinite_err(r->t, r->off + (size_t)r0 * r->cols, (size_t)nr * r->cols, e);
    return 0;
}

static size_t packed_bytes(const struct wref *r) { return (gemm_packed_bytes(r->rows, r->cols) + 63) & ~(size_t)63; }

// ---- binding ----
static int bind_mat(struct model *m, struct wref *r, const char *name, int rows, int cols, int row_off,
                    int total_rows, struct err *e) {
    const struct st_tensor *t;
    int64_t shape[2] = {total_rows, cols};
    int rc = st_check(&m->st, name, 1, 2, shape, &t, e);
    if (rc) return rc;
    r->t = t;
    r->rows = rows;
    r->cols = cols;
    r->off = (size_t)row_off * (size_t)cols;
    r->n = (size_t)rows * (size_t)cols;
    return 0;
}

// Vector (n) converted into the small arena; (row_off, total) select a slice of a fused bias.
static int bind_vec(struct model *m, const float **out, const char *name, int n, struct err *e) {
    const struct st_tensor *t;
    int64_t shape[1] = {n};
    int rc = st_check(&m->st, name, 1, 1, shape, &t, e);
    if (rc) return rc;
    if (m->small_used + (size_t)n > m->small_n)
        return err_set(e, ERR_INTERNAL, "model: small-tensor arena too small at %s", name);
    float *dst = m->small + m->small_used;
    if (convert(dst, t, 0, (size_t)n)) return nonfinite_err(t, 0, (size_t)n, e);
    m->small_used += (size_t)n;
    *out = dst;
    return 0;
}

static int bind_layer(struct model *m, int l, struct err *e) {
    const struct model_config *c = &m->cfg;
    struct layer_w *L = &m->layers[l];
    const int D = c->dim, hd = c->head_dim, qd = c->n_heads * hd, kd = c->n_kv_heads * hd, F = c->hidden_dim;
    char n[256];
    int rc = 0;
#define NAME(fmt) (snprintf(n, sizeof n, "model.layers.%d." fmt, l), n)
    if (c->fused_qkv) {
        const int tot = qd + 2 * kd;
        if ((rc = bind_mat(m, &L->w[W_Q], NAME("self_attn.qkv_proj.weight"), qd, D, 0, tot, e)) ||
            (rc = bind_mat(m, &L->w[W_K], n, kd, D, qd, tot, e)) ||
            (rc = bind_mat(m, &L->w[W_V], n, kd, D, qd + kd, tot, e)))
            return rc;
    } else {
        if ((rc = bind_mat(m, &L->w[W_Q], NAME("self_attn.q_proj.weight"), qd, D, 0, qd, e)) ||
            (rc = bind_mat(m, &L->w[W_K], NAME("self_attn.k_proj.weight"), kd, D, 0, kd, e)) ||
            (rc = bind_mat(m, &L->w[W_V], NAME("self_attn.v_proj.weight"), kd, D, 0, kd, e)))
            return rc;
    }
    if ((rc = bind_mat(m, &L->w[W_O], NAME("self_attn.o_proj.weight"), D, qd, 0, D, e))) return rc;
    if (c->fused_gate_up) {
        if ((rc = bind_mat(m, &L->w[W_GATE], NAME("mlp.gate_up_proj.weight"), F, D, 0, 2 * F, e)) ||
            (rc = bind_mat(m, &L->w[W_UP], n, F, D, F, 2 * F, e)))
            return rc;
    } else {
        if ((rc = bind_mat(m, &L->w[W_GATE], NAME("mlp.gate_proj.weight"), F, D, 0, F, e)) ||
            (rc = bind_mat(m, &L->w[W_UP], NAME("mlp.up_proj.weight"), F, D, 0, F, e)))
            return rc;
    }
    if ((rc = bind_mat(m, &L->w[W_DOWN], NAME("mlp.down_proj.weight"), D, F, 0, D, e))) return rc;
    if (c->qkv_bias) {
        if ((rc = bind_vec(m, &L->b[B_Q], NAME("self_attn.q_proj.bias"), qd, e)) ||
            (rc = bind_vec(m, &L->b[B_K], NAME("self_attn.k_proj.bias"), kd, e)) ||
            (rc = bind_vec(m, &L->b[B_V], NAME("self_attn.v_proj.bias"), kd, e)))
            return rc;
    }
    if (c->o_bias && (rc = bind_vec(m, &L->b[B_O], NAME("self_attn.o_proj.bias"), D, e))) return rc;
    if (c->mlp_bias) {
        if ((rc = bind_vec(m, &L->b[B_GATE], NAME("mlp.gate_proj.bias"), F, e)) ||
            (rc = bind_vec(m, &L->b[B_UP], NAME("mlp.up_proj.bias"), F, e)) ||
            (rc = bind_vec(m, &L->b[B_DOWN], NAME("mlp.down_proj.bias"), D, e)))
            return rc;
    }
    if ((rc = bind_vec(m, &L->in_norm, NAME("input_layernorm.weight"), D, e)) ||
        (rc = bind_vec(m, &L->post_attn_norm, NAME("post_attention_layernorm.weight"), D, e)))
        return rc;
    if (c->sandwich_norm) {
        if ((rc = bind_vec(m, &L->pre_ffn_norm, NAME("pre_feedforward_layernorm.weight"), D, e)) ||
            (rc = bind_vec(m, &L->post_ffn_norm, NAME("post_feedforward_layernorm.weight"), D, e)))
            return rc;
    }
    if (c->qk_norm) {
        if ((rc = bind_vec(m, &L->q_norm, NAME("self_attn.q_norm.weight"), hd, e)) ||
            (rc = bind_vec(m, &L->k_norm, NAME("self_attn.k_norm.weight"), hd, e)))
            return rc;
    }
#undef NAME
    return 0;
}


// ---- RoPE tables (binary64, goldens README) ----
static void rope_inv_freq(const struct model_config *c, const double *ext, double *inv) {
    const int half = c->rope_dim / 2;
    for (int i = 0; i < half; i++) {
        double f = 1.0 / pow(c->rope_theta, (2.0 * i) / c->rope_dim);
        if (c->rope_type == ROPE_LONGROPE) f /= ext[i];
        if (c->rope_type == ROPE_LLAMA3) {
            // HF _compute_llama3_parameters
            const double old = c->rope_orig_max, lo_wl = old / c->rope_low_freq, hi_wl = old / c->rope_high_freq;
            const double wl = 2 * HIFA4_PI / f;
            if (wl > lo_wl) {
                f = f / c->rope_factor;
            } else if (wl >= hi_wl) { // medium band: smooth interpolation
                const double sm = (old / wl - c->rope_low_freq) / (c->rope_high_freq - c->rope_low_freq);
                f = (1 - sm) * f / c->rope_factor + sm * f;
            }
        }
        inv[i] = f;
    }
}

static void rope_table(const struct model_config *c, const double *ext, double *cs, double *sn, int max_seq) {
    const int half = c->rope_dim / 2;
    double inv[CFG_MAX_ROPE_FACTORS > 512 ? CFG_MAX_ROPE_FACTORS : 512];
    rope_inv_freq(c, ext, inv);
    for (int p = 0; p < max_seq; p++)
        for (int i = 0; i < half; i++) {
            const double a = (double)p * inv[i];
            cs[(size_t)p * half + i] = cos(a) * c->rope_attn_factor;
            sn[(size_t)p * half + i] = sin(a) * c->rope_attn_factor;
        }
}

// ---- open / free ----
void model_free(struct model *m) {
    if (!m) return;
    attn_ctx_free(m->attn);
    free(m->run);
    free(m->ibuf);
    free(m->seqs);
    free(m->apast);
    free(m->rope);
    free(m->sbuf);
    free(m->wbuf);
    free(m->small);
    free(m->layers);
    st_close(&m->st);
    free(m);
}

// <= 0: the pool's thread count (OMP_NUM_THREADS if set, else all cores)
static int n_threads_of(const struct model_opts *o) { return o->n_threads > 0 ? o->n_threads : pool_threads(); }

// Binds every tensor of the checkpoint (names per architecture) and converts the small ones.
static int bind_all(struct model *m, struct err *e) {
    const struct model_config *c = &m->cfg;
    const int D = c->dim, hd = c->head_dim, qd = c->n_heads * hd, kd = c->n_kv_heads * hd, F = c->hidden_dim;
    int rc;
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    m->small_n = (size_t)c->n_layers * (4 * (size_t)D + 2 * (size_t)hd + (size_t)qd + 2 * (size_t)kd + 2 * (size_t)D +
                                        2 * (size_t)F) + (size_t)D;
    m->small = malloc(m->small_n * sizeof(float));
    if (!m->layers || !m->small) return err_set(e, ERR_NOMEM, "model: out of memory");
    int64_t shape[2] = {c->vocab_size, D};
    if ((rc = st_check(&m->st, "model.embed_tokens.weight", 1, 2, shape, &m->embed, e))) return rc;
    for (int l = 0; l < c->n_layers; l++)
        if ((rc = bind_layer(m, l, e))) return rc;
    if ((rc = bind_vec(m, &m->final_norm, "model.norm.weight", D, e))) return rc;
    return bind_mat(m, &m->head, c->tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight", c->vocab_size, D, 0,
                    c->vocab_size, e);
}

// Weights resident as packed binary32 (one 64-byte aligned allocation, packed from the
// checkpoint's dtype) or streamed: each GEMM packs its matrix, in row chunks, into one scratch
// just before use. AUTO decides by MemAvailable. *res_bytes: resident bytes.
static int setup_weights(struct model *m, size_t *res_bytes, struct err *e) {
    const struct model_config *c = &m->cfg;
    size_t total = 0, max_mat = 0;
    for (int l = 0; l <= c->n_layers; l++)
        for (int i = 0; i < (l < c->n_layers ? W_COUNT : 1); i++) {
            const struct wref *r = l < c->n_layers ? &m->layers[l].w[i] : &m->head;
            total += packed_bytes(r);
            if (l < c->n_layers && packed_bytes(r) > max_mat) max_mat = packed_bytes(r);
        }
    m->weights = m->opts.weights;
    if (m->weights == MODEL_WEIGHTS_AUTO) {
        size_t avail = host_mem_available();
        m->weights = (double)total < 0.6 * (double)avail ? MODEL_WEIGHTS_F32 : MODEL_WEIGHTS_STREAM;
        log_debug("model: weights %s (%.2f GB packed binary32, %.2f GB available)",
                  m->weights == MODEL_WEIGHTS_F32 ? "f32" : "stream", total * 1e-9, avail * 1e-9);
    }
    *res_bytes = 0;
    if (m->weights == MODEL_WEIGHTS_F32) {
        m->wbuf = aligned_alloc(64, total ? total : 64);
        if (!m->wbuf)
            return err_set(e, ERR_NOMEM, "model: cannot allocate %.2f GB for binary32 weights (try --weights stream)",
                           total * 1e-9);
        size_t used = 0;
        for (int l = 0; l <= c->n_layers; l++)
            for (int i = 0; i < (l < c->n_layers ? W_COUNT : 1); i++) {
                struct wref *r = l < c->n_layers ? &m->layers[l].w[i] : &m->head;
                int rc = pack_rows(m, &r->pw, (char *)m->wbuf + used, packed_bytes(r), r, 0, r->rows, e);
                if (rc) return rc;
                used += packed_bytes(r);
            }
        *res_bytes = total;
    } else {
        // chunks of whole panels; at least one panel of the widest matrix (lm_head streams in chunks)
        size_t floor_bytes = (size_t)GEMM_NR * (size_t)(c->dim > c->hidden_dim ? c->dim : c->hidden_dim) * 4;
        m->stream_bytes = max_mat > floor_bytes ? max_mat : floor_bytes;
        m->sbuf = aligned_alloc(64, m->stream_bytes);
        if (!m->sbuf) return err_set(e, ERR_NOMEM, "model: cannot allocate the weight stream buffer");
    }
    return 0;
}

// Activations (one zeroed allocation), index buffers and the RoPE tables, sized once.
static int alloc_run_state(struct model *m, struct err *e) {
    const struct model_config *c = &m->cfg;
    const struct model_opts *op = &m->opts;
    const int D = c->dim, hd = c->head_dim, qd = c->n_heads * hd, kd = c->n_kv_heads * hd, F = c->hidden_dim;
    const size_t T = (size_t)op->max_tokens;
    size_t n = T * (3 * (size_t)D + 2 * (size_t)qd + 2 * (size_t)kd + 2 * (size_t)F);
    m->run = calloc(n, sizeof(float));
    m->ibuf = malloc(4 * T * sizeof(int));
    m->seqs = calloc(T, sizeof *m->seqs);
    m->apast = calloc(T, sizeof *m->apast);
    const size_t half = (size_t)c->rope_dim / 2, nt = c->rope_type == ROPE_LONGROPE ? 4 : 2;
    m->rope = malloc(nt * (size_t)op->max_seq * half * sizeof(double));
    if (!m->run || !m->ibuf || !m->seqs || !m->apast || !m->rope)
        return err_set(e, ERR_NOMEM, "model: cannot allocate run state for %d tokens", op->max_tokens);
    float *p = m->run;
    m->x = p, p += T * D;
    m->xb = p, p += T * D;
    m->tmp = p, p += T * D;
    m->q = p, p += T * qd;
    m->att = p, p += T * qd;
    m->k = p, p += T * kd;
    m->v = p, p += T * kd;
    m->gate = p, p += T * F;
    m->up = p, p += T * F;
    const size_t tab = (size_t)op->max_seq * half;
    rope_table(c, c->rope_short, m->rope, m->rope + tab, op->max_seq);
    if (c->rope_type == ROPE_LONGROPE) rope_table(c, c->rope_long, m->rope + 2 * tab, m->rope + 3 * tab, op->max_seq);
    return 0;
}

static void log_opened(const struct model *m, size_t res_bytes) {
    const struct model_config *c = &m->cfg;
    const struct model_opts *op = &m->opts;
    const int D = c->dim, hd = c->head_dim, qd = c->n_heads * hd, kd = c->n_kv_heads * hd, F = c->hidden_dim;
    const double np = (double)cfg_n_params(c);
    log_info("model: %s, %d layers, %.3g%s parameters; weights %s (%.2f GB resident binary32%s), run state %.2f GB for "
             "%d tokens", cfg_arch_name(c->arch), c->n_layers, np >= 1e9 ? np * 1e-9 : np * 1e-6, np >= 1e9 ? "B" : "M",
             m->weights == MODEL_WEIGHTS_F32 ? "f32" : "stream", res_bytes * 1e-9,
             m->weights == MODEL_WEIGHTS_STREAM ? ", streamed through a scratch matrix" : "",
             ((size_t)op->max_tokens * (3 * (size_t)D + 2 * (size_t)qd + 2 * (size_t)kd + 2 * (size_t)F) * 4 +
              m->stream_bytes) * 1e-9, op->max_tokens);
}

int model_open(struct model **out, const char *dir, const struct model_opts *o, struct err *e) {
    *out = NULL;
    struct model *m = calloc(1, sizeof *m);
    if (!m) return err_set(e, ERR_NOMEM, "model: out of memory");
    int rc;
    size_t res_bytes = 0;
    struct model_config *c = &m->cfg;
    if ((rc = cfg_load(c, dir, e))) goto fail;
    if ((rc = st_open(&m->st, dir, e))) goto fail;
    if ((rc = st_fingerprint(&m->st, m->hash, e))) goto fail;
    m->opts = *o;
    struct model_opts *op = &m->opts;
    if (op->max_tokens <= 0 || op->max_tokens > (1 << 22)) {
        rc = err_set(e, ERR_RANGE, "model: max_tokens %d out of range (1..%d)", op->max_tokens, 1 << 22);
        goto fail;
    }
    if (op->max_seq <= 0) op->max_seq = c->max_seq; // a cached prefix may exceed one batch
    op->n_threads = n_threads_of(o);
    if (op->n_threads != pool_threads()) pool_set_threads(op->n_threads);
    if (op->weights < MODEL_WEIGHTS_AUTO || op->weights > MODEL_WEIGHTS_STREAM) {
        rc = err_set(e, ERR_USAGE, "model: bad weights mode %d", op->weights);
        goto fail;
    }
    if ((rc = bind_all(m, e)) || (rc = setup_weights(m, &res_bytes, e)) || (rc = alloc_run_state(m, e))) goto fail;
    if ((rc = model_set_attn(m, "f32", NULL, NULL, e))) goto fail;
    log_opened(m, res_bytes);
    *out = m;
    return 0;
fail:
    err_prefix(e, "%s", dir);
    model_free(m);
    return rc;
}

int model_set_attn(struct model *m, const char *mode, const struct attn_opts *ao, const float *scales, struct err *e) {
    struct attn_opts o;
    if (ao) o = *ao;
    else {
        attn_opts_default(&o);
        o.n_threads = m->opts.n_threads;
    }
    struct attn_ctx *ctx = NULL;
    int rc = attn_ctx_init(&ctx, mode, &o, m->cfg.n_layers, m->cfg.n_heads, m->cfg.n_kv_heads, m->cfg.head_dim,
                           m->opts.max_seq, scales, e);
    if (rc) return rc;
    attn_ctx_free(m->attn);
    m->attn = ctx;
    return 0;
}

// ---- forward ----
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
// ---- data-parallel loops on the pool: rows [i0, i1) per task ----
struct rows_job {
    void (*fn)(struct model *m, const void *ctx, int i0, int i1);
    struct model *m;
    const void *ctx;
    int T, chunk;
};
static void rows_task(void *p, int t, int slot) {
    (void)slot;
    const struct rows_job *j = p;
    const int i0 = t * j->chunk, i1 = i0 + j->chunk < j->T ? i0 + j->chunk : j->T;
    j->fn(j->m, j->ctx, i0, i1);
}
// Small loops (work elements below 2^15) run on the calling thread: a task hand-off costs more.
static void par_rows(struct model *m, int T, size_t row_work, void (*fn)(struct model *, const void *, int, int),
                     const void *ctx) {
    const int nt = m->opts.n_threads;
    if (T <= 0) return;
    if (nt <= 1 || (size_t)T * row_work < ((size_t)1 << 15)) { fn(m, ctx, 0, T); return; }
    struct rows_job j = {fn, m, ctx, T, (T + 4 * nt - 1) / (4 * nt)};
    pool_for((T + j.chunk - 1) / j.chunk, rows_task, &j, nt);
}

static void gemm_task(void *p, int t, int slot) {
    (void)slot;
    gemm_plan_task(p, t);
}

// y (M, n1-n0 columns of w at column n0..) = x (M, K) W^T (+ bias) on the pool.
static int gemm(struct model *m, float *y, int ldy, const float *x, const struct gemm_w *w, int M, const float *bias,
                int bf16, struct err *e) {
    struct gemm_plan p;
    int rc = gemm_plan_init(&p, y, (size_t)ldy, x, (size_t)w->K, w, M, 0, w->N, bias, bf16);
    if (rc) return err_set(e, ERR_INTERNAL, "model: GEMM %dx%dx%d refused (%d)", M, w->N, w->K, rc);
    const int nt = m->opts.n_threads < p.max_threads ? m->opts.n_threads : p.max_threads;
    pool_for(p.n_tasks, gemm_task, &p, nt);
    return 0;
}

// y (M, r->rows) = x (M, r->cols) W^T (+ bias), rounded to bf16 when asked; ldy row stride.
// A row's bits depend on nothing but that row (gemm.h): any M, any offset. Streamed matrices
// are packed just before the GEMM, in chunks of whole panels that fit the scratch.
static int linear(struct model *m, float *y, const float *x, const struct wref *r, const float *bias, int M, int ldy,
                  int bf16, struct err *e) {
    int rc = 0;
    if (M <= 0) return 0;
    if (r->pw.p) {
        double t0 = time_now(), c0 = cpu_now();
        rc = gemm(m, y, ldy, x, &r->pw, M, bias, bf16, e);
        m->stats.gemm_s += time_now() - t0;
        m->stats.gemm_cpu_s += cpu_now() - c0;
        m->stats.n_gemm++;
    } else {
        int chunk = (int)(m->stream_bytes / ((size_t)r->cols * 4) / GEMM_NR * GEMM_NR);
        if (chunk < GEMM_NR) chunk = GEMM_NR;
        if (chunk > r->rows) chunk = r->rows;
        for (int r0 = 0; r0 < r->rows && !rc; r0 += chunk) {
            const int nr = r->rows - r0 < chunk ? r->rows - r0 : chunk;
            struct gemm_w w;
            double t0 = time_now();
            if ((rc = pack_rows(m, &w, m->sbuf, m->stream_bytes, r, r0, nr, e))) break;
            double t1 = time_now(), c1 = cpu_now();
            rc = gemm(m, y + r0, ldy, x, &w, M, bias ? bias + r0 : NULL, bf16, e);
            m->stats.convert_s += t1 - t0;
            m->stats.gemm_s += time_now() - t1;
            m->stats.gemm_cpu_s += cpu_now() - c1;
            m->stats.n_gemm++;
        }
    }
    m->stats.gemm_flop += 2.0 * M * r->rows * r->cols;
    return rc;
}

// ---- row loops of the forward pass (each a function of its rows only) ----
struct rows_args {
    float *out, *x;
    const float *y, *w;
    const int32_t *tokens;
    _Atomic size_t *bad; // embed_fn: rows holding a non-finite weight
    const int *pos, *lng;
    const struct layer_w *L;
    int n;
};

// Row-wise RMSNorm of rows (T, n) with row stride n; in and out may alias.
static void norm_fn(struct model *m, const void *p, int i0, int i1) {
    const struct rows_args *a = p;
    const struct model_config *c = &m->cfg;
    for (int i = i0; i < i1; i++)
        ops_rmsnorm(a->out + (size_t)i * a->n, a->x + (size_t)i * a->n, a->w, a->n, c->norm_eps, c->norm_plus_one,
                    m->opts.act_bf16);
}
static void norm_rows(struct model *m, float *out, float *x, const float *w, int T, int n) {
    struct rows_args a = {.out = out, .x = x, .w = w, .n = n};
    par_rows(m, T, (size_t)n, norm_fn, &a);
}

// Residual add x += y, then (w != NULL) out = RMSNorm(x) for the next block, in one loop.
static void add_norm_fn(struct model *m, const void *p, int i0, int i1) {
    const struct rows_args *a = p;
    const struct model_config *c = &m->cfg;
    const int bf16 = m->opts.act_bf16, n = a->n;
    for (int i = i0; i < i1; i++) {
        ops_add(a->x + (size_t)i * n, a->y + (size_t)i * n, (size_t)n, bf16);
        if (a->w) ops_rmsnorm(a->out + (size_t)i * n, a->x + (size_t)i * n, a->w, n, c->norm_eps, c->norm_plus_one, bf16);
    }
}
static void add_norm_rows(struct model *m, float *x, const float *y, float *out, const float *w, int T, int n) {
    struct rows_args a = {.out = out, .x = x, .y = y, .w = w, .n = n};
    par_rows(m, T, (size_t)n, add_norm_fn, &a);
}

// Embedding rows (Gemma2: x sqrt(dim); HF rounds the normalizer to the activation dtype).
static void embed_fn(struct model *m, const void *p, int i0, int i1) {
    const struct rows_args *a = p;
    const struct model_config *c = &m->cfg;
    const int D = c->dim, bf16 = m->opts.act_bf16;
    const double norm64 = sqrt((double)D);
    const float normb = round_bf16((float)norm64);
    for (int t = i0; t < i1; t++) {
        float *x = m->x + (size_t)t * D;
        if (convert(x, m->embed, (size_t)a->tokens[t] * D, (size_t)D)) atomic_fetch_add(a->bad, 1);
        if (c->embed_scale)
            for (int i = 0; i < D; i++) x[i] = bf16 ? round_bf16(x[i] * normb) : (float)(x[i] * norm64);
    }
}

// Qwen3's per-head q/k RMSNorm, then RoPE at each row's position (long factors per sequence).
static void qk_rope_fn(struct model *m, const void *p, int i0, int i1) {
    const struct rows_args *a = p;
    const struct model_config *c = &m->cfg;
    const int hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads, qd = H * hd, kd = Hkv * hd, bf16 = m->opts.act_bf16;
    const size_t half = (size_t)c->rope_dim / 2, tab = (size_t)m->opts.max_seq * half;
    for (int t = i0; t < i1; t++) {
        float *q = m->q + (size_t)t * qd, *k = m->k + (size_t)t * kd;
        if (c->qk_norm) {
            for (int h = 0; h < H; h++) ops_rmsnorm(q + h * hd, q + h * hd, a->L->q_norm, hd, c->norm_eps, 0, bf16);
            for (int h = 0; h < Hkv; h++) ops_rmsnorm(k + h * hd, k + h * hd, a->L->k_norm, hd, c->norm_eps, 0, bf16);
        }
        const double *cs = m->rope + (a->lng[t] ? 2 * tab : 0) + (size_t)a->pos[t] * half;
        const double *sn = cs + tab;
        ops_rope(q, cs, sn, H, hd, c->rope_dim, bf16);
        ops_rope(k, cs, sn, Hkv, hd, c->rope_dim, bf16);
    }
}

static void round_fn(struct model *m, const void *p, int i0, int i1) {
    (void)m;
    const struct rows_args *a = p;
    for (int t = i0; t < i1; t++) round_bf16_n(a->x + (size_t)t * a->n, (size_t)a->n);
}

static void act_fn(struct model *m, const void *p, int i0, int i1) {
    (void)p;
    const int F = m->cfg.hidden_dim;
    for (int t = i0; t < i1; t++)
        ops_act_mul(m->gate + (size_t)t * F, m->gate + (size_t)t * F, m->up + (size_t)t * F, (size_t)F, m->cfg.act,
                    m->opts.act_bf16);
}

static void softcap_fn(struct model *m, const void *p, int i0, int i1) {
    const struct rows_args *a = p;
    for (int i = i0; i < i1; i++)
        ops_softcap(a->x + (size_t)i * a->n, (size_t)a->n, m->cfg.final_softcap, m->opts.act_bf16);
}

// ---- forward ----
// The stamp of a row computed by the current attention context in a sequence of total length
// T: the context's key, and for LongRoPE which factor set the run used (model.h cache rule).
static uint64_t row_stamp(const struct model *m, int64_t T) {
    const struct model_config *c = &m->cfg;
    const int lng = c->rope_type == ROPE_LONGROPE && T > c->rope_orig_max;
    return attn_ctx_key(m->attn) ^ (lng ? 0x9e3779b97f4a7c15ull : 0) ^ 1; // never 0 (0 = empty row)
}

// Sequence s's past and stored range against the cache rule (model.h).
static int check_kv(const struct model *m, const struct model_kv *kv, const struct model_seq *q, int s, int align,
                    struct err *e) {
    const struct model_past *p = &q->past;
    if (!p->n && !q->save_n) return 0;
    if (!kv) return err_set(e, ERR_USAGE, "model_forward_kv: sequence %d uses a cache but none was given", s);
    if (p->n % align || (q->save_n && (p->n + q->save_n) % align))
        return err_set(e, ERR_USAGE, "model_forward_kv: sequence %d: cached prefix %d / stored end %d not a multiple of %d "
                       "(attention mode %s): not exact (spec/attention.md 8.6)", s, p->n, p->n + q->save_n, align,
                       attn_ctx_mode(m->attn)->name);
    if (q->save_n < 0 || q->save_n > q->n || (q->save_n && (q->save_row < 0 || q->save_row + q->save_n > kv->rows)))
        return err_set(e, ERR_RANGE, "model_forward_kv: sequence %d stores %d of %d rows at %d (cache of %d)", s, q->save_n,
                       q->n, q->save_row, kv->rows);
    if (!p->n) return 0;
    const uint64_t want = row_stamp(m, (int64_t)p->n + q->n);
    int64_t sum = 0;
    if (p->n_seg < 1 || p->n_seg > ATTN_PAST_SEGS)
        return err_set(e, ERR_RANGE, "model_forward_kv: sequence %d: %d past segments", s, p->n_seg);
    for (int g = 0; g < p->n_seg; g++) {
        if (p->len[g] < 0 || p->row[g] < 0 || p->row[g] + p->len[g] > kv->rows)
            return err_set(e, ERR_RANGE, "model_forward_kv: sequence %d: past rows %d..+%d outside the cache (%d)", s,
                           p->row[g], p->len[g], kv->rows);
        for (int r = p->row[g]; r < p->row[g] + p->len[g]; r++)
            if (kv->stamp[r] != want)
                return err_set(e, ERR_MISMATCH, "model_forward_kv: sequence %d: cache row %d was %s", s, r,
                               kv->stamp[r] ? "computed under another attention configuration (or RoPE factor set)"
                                            : "never stored");
        sum += p->len[g];
    }
    if (sum != p->n) return err_set(e, ERR_RANGE, "model_forward_kv: sequence %d: segments hold %lld of %d", s, (long long)sum, p->n);
    return 0;
}

// Checks the packed batch and fills seq_off / pos / lng / seq_len (ibuf). *T: packed rows.
static int check_batch(struct model *m, const struct model_kv *kv, const int32_t *tokens, const struct model_seq *seqs,
                       int n_seq, const int *out_pos, int n_out, int *T, struct err *e) {
    const struct model_config *c = &m->cfg;
    const int mt = m->opts.max_tokens;
    int *seq_off = m->ibuf, *pos = m->ibuf + mt, *lng = m->ibuf + 2 * mt, *seq_len = m->ibuf + 3 * mt;
    if (!m->attn) return err_set(e, ERR_INTERNAL, "model_forward: no attention context");
    if (n_seq <= 0 || n_seq > mt) return err_set(e, ERR_RANGE, "model_forward: %d sequences", n_seq);
    const int align = attn_ctx_align(m->attn);
    int64_t T64 = 0;
    for (int s = 0; s < n_seq; s++) {
        const int n = seqs[s].n, p = seqs[s].past.n;
        if (n <= 0 || p < 0 || (int64_t)p + n > m->opts.max_seq)
            return err_set(e, ERR_RANGE, "model_forward: sequence %d has %d tokens after %d cached (max_seq %d)", s, n, p,
                           m->opts.max_seq);
        if (T64 + n > mt) return err_set(e, ERR_RANGE, "model_forward: batch exceeds max_tokens %d", mt);
        int rc = check_kv(m, kv, &seqs[s], s, align, e);
        if (rc) return rc;
        T64 += n;
    }
    *T = (int)T64;
    if (n_out < 0 || n_out > mt) return err_set(e, ERR_RANGE, "model_forward: %d output rows (max %d)", n_out, mt);
    for (int i = 0; i < n_out; i++)
        if (out_pos[i] < 0 || out_pos[i] >= *T)
            return err_set(e, ERR_RANGE, "model_forward: out_pos[%d] = %d outside the %d packed rows", i, out_pos[i], *T);
    for (int t = 0; t < *T; t++)
        if (tokens[t] < 0 || tokens[t] >= c->vocab_size)
            return err_set(e, ERR_RANGE, "model_forward: token %d at row %d outside the vocabulary (%d)", tokens[t], t,
                           c->vocab_size);
    for (int s = 0, o = 0; s < n_seq; o += seqs[s].n, s++) {
        const int p = seqs[s].past.n, total = p + seqs[s].n;
        seq_off[s] = o;
        seq_len[s] = seqs[s].n;
        for (int i = 0; i < seqs[s].n; i++) {
            pos[o + i] = p + i;
            lng[o + i] = c->rope_type == ROPE_LONGROPE && total > c->rope_orig_max; // HF longrope: per length
        }
    }
    return 0;
}

// Layer l's pasts (store rows -> this layer's K/V pointers) into m->apast; 0 if none has one.
static int layer_pasts(struct model *m, const struct model_kv *kv, const struct model_seq *seqs, int n_seq, int l) {
    int any = 0;
    for (int s = 0; s < n_seq; s++) {
        const struct model_past *p = &seqs[s].past;
        struct attn_past *a = &m->apast[s];
        a->n = p->n;
        a->n_seg = p->n ? p->n_seg : 0;
        for (int g = 0; g < a->n_seg; g++) {
            a->k[g] = kv_k(kv, l, p->row[g]);
            a->v[g] = kv_v(kv, l, p->row[g]);
            a->len[g] = p->len[g];
        }
        any |= p->n > 0;
    }
    return any;
}

// After layer l's attention: the kernel-input K and V of the rows each sequence stores.
static void store_rows(struct model *m, struct model_kv *kv, const struct model_seq *seqs, int n_seq, int l) {
    const size_t w = kv->row_floats;
    for (int s = 0; s < n_seq; s++) {
        const struct model_seq *q = &seqs[s];
        if (!q->save_n) continue;
        const size_t o = (size_t)m->ibuf[s];
        memcpy(kv_k(kv, l, q->save_row), m->k + o * w, (size_t)q->save_n * w * sizeof(float));
        memcpy(kv_v(kv, l, q->save_row), m->v + o * w, (size_t)q->save_n * w * sizeof(float));
        // a row is valid once every layer holds it: cleared at the first layer, stamped at the last
        const uint64_t st = l == m->cfg.n_layers - 1 ? row_stamp(m, (int64_t)q->past.n + q->n) : 0;
        if (l == 0 || st)
            for (int r = 0; r < q->save_n; r++) kv->stamp[q->save_row + r] = st;
    }
}

// Layer l's attention block: q/k/v, norms and RoPE, attention (against the cached pasts), the
// rows to store, o projection, residual + the MLP's input norm (layer 0's input norm runs
// before it, later ones fuse with the residual).
static int attention_block(struct model *m, struct model_kv *kv, const struct model_seq *seqs, int l, int n_seq, int T,
                           struct err *e) {
    const struct model_config *c = &m->cfg;
    const struct layer_w *L = &m->layers[l];
    const int D = c->dim, qd = c->n_heads * c->head_dim, kd = c->n_kv_heads * c->head_dim, bf16 = m->opts.act_bf16;
    const int mt = m->opts.max_tokens, *seq_off = m->ibuf, *seq_len = m->ibuf + 3 * mt;
    int rc;
    if ((rc = linear(m, m->q, m->xb, &L->w[W_Q], L->b[B_Q], T, qd, bf16, e)) ||
        (rc = linear(m, m->k, m->xb, &L->w[W_K], L->b[B_K], T, kd, bf16, e)) ||
        (rc = linear(m, m->v, m->xb, &L->w[W_V], L->b[B_V], T, kd, bf16, e)))
        return rc;
    struct rows_args ra = {.pos = m->ibuf + mt, .lng = m->ibuf + 2 * mt, .L = L};
    par_rows(m, T, (size_t)(qd + kd), qk_rope_fn, &ra);
    const double sm64 = 1.0 / sqrt(c->query_pre_attn_scalar);
    struct attn_layer al = {.layer = l, .sm = (float)sm64, .sm64 = sm64, .softcap = (float)c->attn_softcap,
                            .window = c->window[l]};
    const int any_past = kv && layer_pasts(m, kv, seqs, n_seq, l);
    double t0 = time_now(), c0 = cpu_now();
    rc = attn_forward_past(m->attn, m->att, m->q, m->k, m->v, seq_off, seq_len, any_past ? m->apast : NULL, n_seq, &al, e);
    m->stats.attn_s += time_now() - t0;
    m->stats.attn_cpu_s += cpu_now() - c0;
    if (rc) return err_prefix(e, "layer %d", l);
    if (kv) store_rows(m, kv, seqs, n_seq, l);
    if (bf16) {
        struct rows_args rr = {.x = m->att, .n = qd};
        par_rows(m, T, (size_t)qd, round_fn, &rr);
    }
    if ((rc = linear(m, m->tmp, m->att, &L->w[W_O], L->b[B_O], T, D, bf16, e))) return rc;
    if (c->sandwich_norm) norm_rows(m, m->tmp, m->tmp, L->post_attn_norm, T, D);
    add_norm_rows(m, m->x, m->tmp, m->xb, c->sandwich_norm ? L->pre_ffn_norm : L->post_attn_norm, T, D);
    return 0;
}

// Layer l's MLP block: gate/up, act*up, down, residual fused with the next layer's input norm.
static int mlp_block(struct model *m, int l, int T, struct err *e) {
    const struct model_config *c = &m->cfg;
    const struct layer_w *L = &m->layers[l];
    const int D = c->dim, F = c->hidden_dim, bf16 = m->opts.act_bf16;
    int rc;
    if ((rc = linear(m, m->gate, m->xb, &L->w[W_GATE], L->b[B_GATE], T, F, bf16, e)) ||
        (rc = linear(m, m->up, m->xb, &L->w[W_UP], L->b[B_UP], T, F, bf16, e)))
        return rc;
    par_rows(m, T, (size_t)F, act_fn, NULL);
    if ((rc = linear(m, m->tmp, m->gate, &L->w[W_DOWN], L->b[B_DOWN], T, D, bf16, e))) return rc;
    if (c->sandwich_norm) norm_rows(m, m->tmp, m->tmp, L->post_ffn_norm, T, D);
    add_norm_rows(m, m->x, m->tmp, m->xb, l + 1 < c->n_layers ? m->layers[l + 1].in_norm : NULL, T, D);
    return 0;
}

// Final norm and vocab projection at the requested rows only.
static int head(struct model *m, const int *out_pos, int n_out, float *logits, struct err *e) {
    const struct model_config *c = &m->cfg;
    const int D = c->dim, V = c->vocab_size;
    if (n_out <= 0) return 0;
    for (int i = 0; i < n_out; i++) memcpy(m->xb + (size_t)i * D, m->x + (size_t)out_pos[i] * D, (size_t)D * 4);
    norm_rows(m, m->xb, m->xb, m->final_norm, n_out, D);
    int rc = linear(m, logits, m->xb, &m->head, NULL, n_out, V, m->opts.act_bf16, e);
    if (!rc && c->final_softcap > 0) {
        struct rows_args a = {.x = logits, .n = V};
        par_rows(m, n_out, (size_t)V, softcap_fn, &a);
    }
    return rc;
}

int model_forward_kv(struct model *m, struct model_kv *kv, const int32_t *tokens, const struct model_seq *seqs,
                     int n_seq, const int *out_pos, int n_out, float *logits, struct err *e) {
    const double t_start = time_now(), c_start = cpu_now();
    int T = 0, rc;
    if ((rc = check_batch(m, kv, tokens, seqs, n_seq, out_pos, n_out, &T, e))) return rc;
    _Atomic size_t bad = 0;
    struct rows_args ea = {.tokens = tokens, .bad = &bad};
    par_rows(m, T, (size_t)m->cfg.dim, embed_fn, &ea);
    for (int t = 0; atomic_load(&bad) && t < T; t++) { // the embedding is read per token: its rows are checked here
        const size_t D = (size_t)m->cfg.dim, off = (size_t)tokens[t] * D;
        if (convert(m->xb, m->embed, off, D)) return nonfinite_err(m->embed, off, D, e);
    }
    norm_rows(m, m->xb, m->x, m->layers[0].in_norm, T, m->cfg.dim);
    for (int l = 0; l < m->cfg.n_layers && !rc; l++)
        if (!(rc = attention_block(m, kv, seqs, l, n_seq, T, e))) rc = mlp_block(m, l, T, e);
    if (!rc) rc = head(m, out_pos, n_out, logits, e);
    if (rc) return rc;
    m->stats.n_forward++;
    m->stats.tokens += T;
    m->stats.forward_s += time_now() - t_start;
    m->stats.forward_cpu_s += cpu_now() - c_start;
    return 0;
}

int model_forward(struct model *m, const int32_t *tokens, const int *seq_len, int n_seq, const int *out_pos, int n_out,
                  float *logits, struct err *e) {
    if (n_seq <= 0 || n_seq > m->opts.max_tokens) return err_set(e, ERR_RANGE, "model_forward: %d sequences", n_seq);
    for (int s = 0; s < n_seq; s++) m->seqs[s] = (struct model_seq){.n = seq_len[s]};
    return model_forward_kv(m, NULL, tokens, m->seqs, n_seq, out_pos, n_out, logits, e);
}

int model_attn_align(const struct model *m) { return attn_ctx_align(m->attn); }
