// model.c: weight binding for the six architectures, the run state and the batched forward
// pass (see model.h). Per layer: RMSNorm -> q/k/v GEMMs (+bias) -> [Qwen3 q/k norm] -> RoPE
// -> attn_forward (all sequences) -> o GEMM -> [Gemma2 post norm] -> residual -> norm ->
// gate/up GEMMs -> act*up -> down GEMM -> [Gemma2 post norm] -> residual. One thread pool:
// GEMMs are split by output columns over the OpenMP team with OpenBLAS at one thread (see
// gemm()); element-wise loops and the attention dispatcher use the same team.
#include "model/model.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "model/ops.h"
#include "io/safetensors.h"

// ---- weights ----
// A matrix (rows, cols) inside a checkpoint tensor (fused tensors hold several, at element
// offset `off`). p: resident binary32 copy (or the F32 mapping itself), NULL when streamed.
struct wref {
    const struct st_tensor *t;
    size_t off, n;
    int rows, cols;
    int min_rows;  // GEMMs run on at least this many rows (ops_gemm_min_rows; 1 for real models)
    const float *p;
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
    float *wbuf;                 // resident converted matrices (one allocation)
    float *small;                // norms and biases (one allocation)
    size_t small_n, small_used;
    float *sbuf;                 // stream scratch (stream_n floats)
    size_t stream_n;
    // ---- run state (one allocation, sized at open) ----
    float *run;                  // run-state rows R = max(max_tokens, pad_rows)
    int pad_rows;                // max min_rows of the layer matrices and lm_head
    float *lpad;                 // (head.min_rows, vocab) logits scratch when n_out < head.min_rows
    float *x, *xb, *tmp;         // (max_tokens, dim)
    float *q, *att;              // (max_tokens, n_heads*head_dim)
    float *k, *v;                // (max_tokens, n_kv_heads*head_dim)
    float *gate, *up;            // (max_tokens, hidden_dim)
    int *ibuf;                   // seq_off (max_tokens) | pos (max_tokens) | long (max_tokens)
    double *rope;                // cos | sin (max_seq, rope_dim/2) [| long cos | long sin]
    // a streamed matrix found non-finite while converting for a GEMM (forward stops after the layer)
    const struct st_tensor *bad_w;
    size_t bad_off, bad_n;
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
const char *model_hash(const struct model *m) { return m->hash; }
struct attn_ctx *model_attn(struct model *m) { return m->attn; }
const struct model_stats *model_stats(const struct model *m) { return &m->stats; }
void model_reset_stats(struct model *m) { memset(&m->stats, 0, sizeof m->stats); }

// Exact widening of n elements of t starting at element off (data may be unaligned). Returns
// how many of them are not finite (inf or NaN: exponent bits all ones), counted in the same
// pass, so the check costs a compare per element of memory the conversion touches anyway.
static size_t convert(float *dst, const struct st_tensor *t, size_t off, size_t n, int nt) {
    const unsigned char *src = (const unsigned char *)t->data;
    const long long nn = (long long)n;
    size_t bad = 0;
    if (t->dtype == ST_F32) {
        memcpy(dst, src + off * 4, n * 4);
#pragma omp parallel for schedule(static) num_threads(nt) if (n > 65536) reduction(+ : bad)
        for (long long i = 0; i < nn; i++) bad += (f32_bits(dst[i]) & 0x7f800000u) == 0x7f800000u;
    } else if (t->dtype == ST_BF16) {
#pragma omp parallel for schedule(static) num_threads(nt) if (n > 65536) reduction(+ : bad)
        for (long long i = 0; i < nn; i++) {
            uint16_t h;
            memcpy(&h, src + (off + (size_t)i) * 2, 2);
            bad += (h & 0x7f80u) == 0x7f80u;
            dst[i] = bf16_to_f32(h);
        }
    } else {
#pragma omp parallel for schedule(static) num_threads(nt) if (n > 65536) reduction(+ : bad)
        for (long long i = 0; i < nn; i++) {
            uint16_t h;
            memcpy(&h, src + (off + (size_t)i) * 2, 2);
            bad += (h & 0x7c00u) == 0x7c00u;
            dst[i] = f16_to_f32(h);
        }
    }
    return bad;
}

// The error for a tensor holding a non-finite value among elements [off, off + n): names the
// tensor, the first such element (row and column of a matrix) and its value.
static int nonfinite_err(const struct st_tensor *t, size_t off, size_t n, struct err *e) {
    size_t i = 0;
    float v = 0;
    for (; i < n; i++) {
        convert(&v, t, off + i, 1, 1);
        if (!isfinite(v)) break;
    }
    const size_t at = off + i, cols = t->ndim == 2 ? (size_t)t->shape[1] : 0;
    if (cols)
        return err_set(e, ERR_FORMAT, "tensor '%s' [row %zu, column %zu] = %g: the checkpoint holds a non-finite weight",
                       t->name, at / cols, at % cols, (double)v);
    return err_set(e, ERR_FORMAT, "tensor '%s' [%zu] = %g: the checkpoint holds a non-finite weight", t->name, at, (double)v);
}

// Converts a matrix slice and refuses it when it holds a value that is not finite.
static int convert_checked(float *dst, const struct wref *r, int nt, struct err *e) {
    return convert(dst, r->t, r->off, r->n, nt) ? nonfinite_err(r->t, r->off, r->n, e) : 0;
}

static int in_place(const struct wref *r) {
    return r->t->dtype == ST_F32 && ((uintptr_t)((const float *)r->t->data + r->off) % 4 == 0) &&
           ((uintptr_t)r->t->data % 4 == 0);
}

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
    r->min_rows = ops_gemm_min_rows(rows, cols);
    r->p = in_place(r) ? (const float *)t->data + r->off : NULL;
    if (r->p) { // used in place, never converted: one read pass over the mapping instead
        size_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad) if (r->n > 65536)
        for (long long i = 0; i < (long long)r->n; i++) bad += (f32_bits(r->p[i]) & 0x7f800000u) == 0x7f800000u;
        if (bad) return nonfinite_err(t, r->off, r->n, e);
    }
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
    if (convert(dst, t, 0, (size_t)n, 1)) return nonfinite_err(t, 0, (size_t)n, e);
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

static size_t mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    size_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024;
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
    free(m->lpad);
    free(m->ibuf);
    free(m->rope);
    free(m->sbuf);
    free(m->wbuf);
    free(m->small);
    free(m->layers);
    st_close(&m->st);
    free(m);
}

// <= 0: OMP_NUM_THREADS if set, else all cores (omp_get_max_threads)
static int n_threads_of(const struct model_opts *o) { return o->n_threads > 0 ? o->n_threads : omp_get_max_threads(); }

int model_open(struct model **out, const char *dir, const struct model_opts *o, struct err *e) {
    *out = NULL;
    struct model *m = calloc(1, sizeof *m);
    if (!m) return err_set(e, ERR_NOMEM, "model: out of memory");
    int rc;
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
    if (op->max_seq <= 0) op->max_seq = op->max_tokens < c->max_seq ? op->max_tokens : c->max_seq;
    if (op->max_seq > op->max_tokens) op->max_seq = op->max_tokens;
    op->n_threads = n_threads_of(o);
    openblas_set_num_threads(1); // GEMMs are split over the OpenMP team (see gemm())
    if (op->weights < MODEL_WEIGHTS_AUTO || op->weights > MODEL_WEIGHTS_STREAM) {
        rc = err_set(e, ERR_USAGE, "model: bad weights mode %d", op->weights);
        goto fail;
    }
    const int D = c->dim, hd = c->head_dim, qd = c->n_heads * hd, kd = c->n_kv_heads * hd, F = c->hidden_dim;

    // ---- bind tensors ----
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    m->small_n = (size_t)c->n_layers * (4 * (size_t)D + 2 * (size_t)hd + (size_t)qd + 2 * (size_t)kd + 2 * (size_t)D +
                                        2 * (size_t)F) + (size_t)D;
    m->small = malloc(m->small_n * sizeof(float));
    if (!m->layers || !m->small) { rc = err_set(e, ERR_NOMEM, "model: out of memory"); goto fail; }
    {
        int64_t shape[2] = {c->vocab_size, D};
        if ((rc = st_check(&m->st, "model.embed_tokens.weight", 1, 2, shape, &m->embed, e))) goto fail;
    }
    for (int l = 0; l < c->n_layers; l++)
        if ((rc = bind_layer(m, l, e))) goto fail;
    if ((rc = bind_vec(m, &m->final_norm, "model.norm.weight", D, e))) goto fail;
    if ((rc = bind_mat(m, &m->head, c->tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight", c->vocab_size,
                       D, 0, c->vocab_size, e)))
        goto fail;

    // ---- weights: resident f32 or streamed ----
    size_t conv_n = 0, max_mat = 0;
    for (int l = 0; l < c->n_layers; l++)
        for (int i = 0; i < W_COUNT; i++) {
            const struct wref *r = &m->layers[l].w[i];
            if (!r->p) conv_n += r->n;
            if (r->n > max_mat) max_mat = r->n;
        }
    if (!m->head.p) conv_n += m->head.n;
    m->weights = op->weights;
    if (m->weights == MODEL_WEIGHTS_AUTO) {
        size_t avail = mem_available();
        m->weights = (double)conv_n * 4 < 0.6 * (double)avail ? MODEL_WEIGHTS_F32 : MODEL_WEIGHTS_STREAM;
        log_debug("model: weights %s (%.2f GB of binary32 conversions, %.2f GB available)",
                 m->weights == MODEL_WEIGHTS_F32 ? "f32" : "stream", conv_n * 4e-9, avail * 1e-9);
    }
    if (m->weights == MODEL_WEIGHTS_F32 && conv_n) {
        m->wbuf = malloc(conv_n * sizeof(float));
        if (!m->wbuf) {
            rc = err_set(e, ERR_NOMEM, "model: cannot allocate %.2f GB for binary32 weights (try --weights stream)",
                         conv_n * 4e-9);
            goto fail;
        }
        size_t used = 0;
        for (int l = 0; l <= c->n_layers; l++)
            for (int i = 0; i < (l < c->n_layers ? W_COUNT : 1); i++) {
                struct wref *r = l < c->n_layers ? &m->layers[l].w[i] : &m->head;
                if (r->p) continue;
                if ((rc = convert_checked(m->wbuf + used, r, op->n_threads, e))) goto fail;
                r->p = m->wbuf + used;
                used += r->n;
            }
    } else if (m->weights == MODEL_WEIGHTS_STREAM) {
        m->stream_n = max_mat > (size_t)D ? max_mat : (size_t)D;
        m->sbuf = malloc(m->stream_n * sizeof(float));
        if (!m->sbuf) { rc = err_set(e, ERR_NOMEM, "model: cannot allocate the weight stream buffer"); goto fail; }
    }

    // ---- run state ----
    {
        m->pad_rows = m->head.min_rows;
        for (int l = 0; l < c->n_layers; l++)
            for (int i = 0; i < W_COUNT; i++)
                if (m->layers[l].w[i].min_rows > m->pad_rows) m->pad_rows = m->layers[l].w[i].min_rows;
        const size_t T = (size_t)(op->max_tokens > m->pad_rows ? op->max_tokens : m->pad_rows);
        size_t n = T * (3 * (size_t)D + 2 * (size_t)qd + 2 * (size_t)kd + 2 * (size_t)F);
        m->run = calloc(n, sizeof(float)); // zeroed: rows past a short batch feed padded GEMMs
        if (m->head.min_rows > 1) m->lpad = calloc((size_t)m->head.min_rows * c->vocab_size, sizeof(float));
        if (m->head.min_rows > 1 && !m->lpad) { rc = err_set(e, ERR_NOMEM, "model: out of memory"); goto fail; }
        m->ibuf = malloc(3 * T * sizeof(int));
        const size_t half = (size_t)c->rope_dim / 2, nt = c->rope_type == ROPE_LONGROPE ? 4 : 2;
        m->rope = malloc(nt * (size_t)op->max_seq * half * sizeof(double));
        if (!m->run || !m->ibuf || !m->rope) {
            rc = err_set(e, ERR_NOMEM, "model: cannot allocate run state for %d tokens", op->max_tokens);
            goto fail;
        }
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
    }
    if ((rc = model_set_attn(m, "f32", NULL, NULL, e))) goto fail;
    const double np = (double)cfg_n_params(c);
    log_info("model: %s, %d layers, %.3g%s parameters; weights %s (%.2f GB resident binary32%s), run state %.2f GB for "
             "%d tokens", cfg_arch_name(c->arch), c->n_layers, np >= 1e9 ? np * 1e-9 : np * 1e-6, np >= 1e9 ? "B" : "M",
             m->weights == MODEL_WEIGHTS_F32 ? "f32" : "stream", m->weights == MODEL_WEIGHTS_F32 ? conv_n * 4e-9 : 0.0,
             m->weights == MODEL_WEIGHTS_STREAM ? ", streamed through a scratch matrix" : "",
             ((size_t)op->max_tokens * (3 * (size_t)D + 2 * (size_t)qd + 2 * (size_t)kd + 2 * (size_t)F) * 4 +
              m->stream_n * 4) * 1e-9, op->max_tokens);
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
// Threads for an element-wise loop over `work` elements: a parallel region costs a barrier,
// and on a loaded machine a descheduled team member stalls it, so small loops run serially.
static int nt_for(const struct model *m, size_t work) { return work < ((size_t)1 << 15) ? 1 : m->opts.n_threads; }

// One thread pool: GEMMs run as ops_matmul_mt over the OpenMP team (OpenBLAS's own threads
// would spin against the OpenMP workers between regions; measured on 2 cores: the forward's
// GEMMs 1.8x slower than alone). Any thread count gives the same bits. The bias add and bf16
// rounding run inside the same parallel region (fewer barriers).
static void gemm(const struct model *m, float *y, const float *x, const float *w, int M, int N, int K, int ldy,
                 const float *bias, int bf16) {
    ops_matmul_mt_ex(y, x, w, M, N, K, ldy, m->opts.n_threads, bias, bf16);
}

// y (M, r->rows) = x (M, r->cols) W^T (+ bias), rounded to bf16 when asked; ldy row stride.
// Streamed matrices are converted just before the GEMM, in row chunks if the scratch is smaller.
// x and y have at least r->min_rows rows (run state, or the logits scratch for lm_head): a
// short batch is computed on min_rows rows (rows past M are zeros or stale finite values, and
// results past M are discarded) so every row gets the same kernel, whatever the batch size.
static void linear(struct model *m, float *y, const float *x, const struct wref *r, const float *bias, int M, int ldy,
                   int bf16) {
    const int nt = m->opts.n_threads;
    if (M <= 0) return;
    if (M < r->min_rows) M = r->min_rows;
    if (r->p) {
        double t0 = time_now(), c0 = cpu_now();
        gemm(m, y, x, r->p, M, r->rows, r->cols, ldy, bias, bf16);
        m->stats.gemm_s += time_now() - t0;
        m->stats.gemm_cpu_s += cpu_now() - c0;
        m->stats.n_gemm++;
    } else {
        int chunk = (int)(m->stream_n / (size_t)r->cols);
        if (chunk > r->rows) chunk = r->rows;
        for (int r0 = 0; r0 < r->rows; r0 += chunk) {
            int nr = r->rows - r0 < chunk ? r->rows - r0 : chunk;
            double t0 = time_now();
            if (convert(m->sbuf, r->t, r->off + (size_t)r0 * r->cols, (size_t)nr * r->cols, nt) && !m->bad_w) {
                m->bad_w = r->t; // reported by model_forward after this layer (linear has no error path)
                m->bad_off = r->off + (size_t)r0 * r->cols;
                m->bad_n = (size_t)nr * r->cols;
            }
            double t1 = time_now(), c1 = cpu_now();
            gemm(m, y + r0, x, m->sbuf, M, nr, r->cols, ldy, bias ? bias + r0 : NULL, bf16);
            m->stats.convert_s += t1 - t0;
            m->stats.gemm_s += time_now() - t1;
            m->stats.gemm_cpu_s += cpu_now() - c1;
            m->stats.n_gemm++;
        }
    }
    m->stats.gemm_flop += 2.0 * M * r->rows * r->cols;
}

// Row-wise RMSNorm of rows (T, n) with row stride n; in and out may alias.
static void norm_rows(struct model *m, float *out, const float *x, const float *w, int T, int n) {
    const struct model_config *c = &m->cfg;
    const int bf16 = m->opts.act_bf16;
#pragma omp parallel for schedule(static) num_threads(nt_for(m, (size_t)T * n))
    for (int i = 0; i < T; i++)
        ops_rmsnorm(out + (size_t)i * n, x + (size_t)i * n, w, n, c->norm_eps, c->norm_plus_one, bf16);
}

// Residual add x += y, then (w != NULL) out = RMSNorm(x) for the next block, in one region.
static void add_norm_rows(struct model *m, float *x, const float *y, float *out, const float *w, int T, int n) {
    const struct model_config *c = &m->cfg;
    const int bf16 = m->opts.act_bf16;
#pragma omp parallel for schedule(static) num_threads(nt_for(m, (size_t)T * n))
    for (int i = 0; i < T; i++) {
        ops_add(x + (size_t)i * n, y + (size_t)i * n, (size_t)n, bf16);
        if (w) ops_rmsnorm(out + (size_t)i * n, x + (size_t)i * n, w, n, c->norm_eps, c->norm_plus_one, bf16);
    }
}

int model_forward(struct model *m, const int32_t *tokens, const int *seq_len, int n_seq, const int *out_pos, int n_out,
                  float *logits, struct err *e) {
    const struct model_config *c = &m->cfg;
    const int D = c->dim, hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads, qd = H * hd, kd = Hkv * hd;
    const int F = c->hidden_dim, V = c->vocab_size, bf16 = m->opts.act_bf16;
    const double t_start = time_now(), c_start = cpu_now();
    if (!m->attn) return err_set(e, ERR_INTERNAL, "model_forward: no attention context");
    if (n_seq <= 0) return err_set(e, ERR_RANGE, "model_forward: %d sequences", n_seq);
    int *seq_off = m->ibuf, *pos = m->ibuf + m->opts.max_tokens, *lng = m->ibuf + 2 * m->opts.max_tokens;
    int64_t T64 = 0;
    for (int s = 0; s < n_seq; s++) {
        if (seq_len[s] <= 0 || seq_len[s] > m->opts.max_seq)
            return err_set(e, ERR_RANGE, "model_forward: sequence %d has %d tokens (max_seq %d)", s, seq_len[s],
                           m->opts.max_seq);
        if (T64 + seq_len[s] > m->opts.max_tokens)
            return err_set(e, ERR_RANGE, "model_forward: batch exceeds max_tokens %d", m->opts.max_tokens);
        T64 += seq_len[s];
    }
    const int T = (int)T64;
    if (n_out < 0 || n_out > m->opts.max_tokens)
        return err_set(e, ERR_RANGE, "model_forward: %d output rows (max %d)", n_out, m->opts.max_tokens);
    for (int i = 0; i < n_out; i++)
        if (out_pos[i] < 0 || out_pos[i] >= T)
            return err_set(e, ERR_RANGE, "model_forward: out_pos[%d] = %d outside the %d packed rows", i, out_pos[i], T);
    for (int t = 0; t < T; t++)
        if (tokens[t] < 0 || tokens[t] >= V)
            return err_set(e, ERR_RANGE, "model_forward: token %d at row %d outside the vocabulary (%d)", tokens[t], t, V);
    for (int s = 0, o = 0; s < n_seq; o += seq_len[s], s++) {
        seq_off[s] = o;
        for (int i = 0; i < seq_len[s]; i++) {
            pos[o + i] = i;
            lng[o + i] = c->rope_type == ROPE_LONGROPE && seq_len[s] > c->rope_orig_max; // HF longrope: per length
        }
    }

    // ---- embedding (Gemma2: x sqrt(dim); HF rounds the normalizer to the activation dtype) ----
    const double norm64 = sqrt((double)D);
    const float normb = round_bf16((float)norm64);
    size_t bad_rows = 0;
#pragma omp parallel for schedule(static) num_threads(nt_for(m, (size_t)T * D)) reduction(+ : bad_rows)
    for (int t = 0; t < T; t++) {
        float *x = m->x + (size_t)t * D;
        bad_rows += convert(x, m->embed, (size_t)tokens[t] * D, (size_t)D, 1) > 0;
        if (c->embed_scale)
            for (int i = 0; i < D; i++) x[i] = bf16 ? round_bf16(x[i] * normb) : (float)(x[i] * norm64);
    }
    for (int t = 0; bad_rows && t < T; t++) // the embedding is read per token, so its rows are checked here
        if (convert(m->xb, m->embed, (size_t)tokens[t] * D, (size_t)D, 1))
            return nonfinite_err(m->embed, (size_t)tokens[t] * D, (size_t)D, e);

    const size_t half = (size_t)c->rope_dim / 2, tab = (size_t)m->opts.max_seq * half;
    for (int l = 0; l < c->n_layers; l++) {
        const struct layer_w *L = &m->layers[l];
        // ---- attention block (layer 0's input norm here; later ones fused with the residual add) ----
        if (l == 0) norm_rows(m, m->xb, m->x, L->in_norm, T, D);
        linear(m, m->q, m->xb, &L->w[W_Q], L->b[B_Q], T, qd, bf16);
        linear(m, m->k, m->xb, &L->w[W_K], L->b[B_K], T, kd, bf16);
        linear(m, m->v, m->xb, &L->w[W_V], L->b[B_V], T, kd, bf16);
#pragma omp parallel for schedule(static) num_threads(nt_for(m, (size_t)T * (qd + kd)))
        for (int t = 0; t < T; t++) {
            float *q = m->q + (size_t)t * qd, *k = m->k + (size_t)t * kd;
            if (c->qk_norm) { // Qwen3: per-head RMSNorm before RoPE
                for (int h = 0; h < H; h++) ops_rmsnorm(q + h * hd, q + h * hd, L->q_norm, hd, c->norm_eps, 0, bf16);
                for (int h = 0; h < Hkv; h++) ops_rmsnorm(k + h * hd, k + h * hd, L->k_norm, hd, c->norm_eps, 0, bf16);
            }
            const double *cs = m->rope + (lng[t] ? 2 * tab : 0) + (size_t)pos[t] * half;
            const double *sn = cs + tab;
            ops_rope(q, cs, sn, H, hd, c->rope_dim, bf16);
            ops_rope(k, cs, sn, Hkv, hd, c->rope_dim, bf16);
        }
        const double sm64 = 1.0 / sqrt(c->query_pre_attn_scalar);
        struct attn_layer al = {.layer = l, .sm = (float)sm64, .sm64 = sm64, .softcap = (float)c->attn_softcap,
                                .window = c->window[l]};
        double t0 = time_now();
        int rc = attn_forward(m->attn, m->att, m->q, m->k, m->v, seq_off, seq_len, n_seq, &al, e);
        m->stats.attn_s += time_now() - t0;
        if (rc) return err_prefix(e, "layer %d", l);
        if (bf16) {
#pragma omp parallel for schedule(static) num_threads(nt_for(m, (size_t)T * qd))
            for (int t = 0; t < T; t++) round_bf16_n(m->att + (size_t)t * qd, (size_t)qd);
        }
        linear(m, m->tmp, m->att, &L->w[W_O], L->b[B_O], T, D, bf16);
        if (c->sandwich_norm) norm_rows(m, m->tmp, m->tmp, L->post_attn_norm, T, D);
        // ---- MLP block (residual add fused with its input norm) ----
        add_norm_rows(m, m->x, m->tmp, m->xb, c->sandwich_norm ? L->pre_ffn_norm : L->post_attn_norm, T, D);
        linear(m, m->gate, m->xb, &L->w[W_GATE], L->b[B_GATE], T, F, bf16);
        linear(m, m->up, m->xb, &L->w[W_UP], L->b[B_UP], T, F, bf16);
#pragma omp parallel for schedule(static) num_threads(nt_for(m, (size_t)T * F))
        for (int t = 0; t < T; t++)
            ops_act_mul(m->gate + (size_t)t * F, m->gate + (size_t)t * F, m->up + (size_t)t * F, (size_t)F, c->act, bf16);
        linear(m, m->tmp, m->gate, &L->w[W_DOWN], L->b[B_DOWN], T, D, bf16);
        if (c->sandwich_norm) norm_rows(m, m->tmp, m->tmp, L->post_ffn_norm, T, D);
        // residual add fused with the next layer's input norm
        add_norm_rows(m, m->x, m->tmp, m->xb, l + 1 < c->n_layers ? m->layers[l + 1].in_norm : NULL, T, D);
        if (m->bad_w) return nonfinite_err(m->bad_w, m->bad_off, m->bad_n, e);
    }

    // ---- final norm and vocab projection at the requested rows only ----
    if (n_out > 0) {
        for (int i = 0; i < n_out; i++) memcpy(m->xb + (size_t)i * D, m->x + (size_t)out_pos[i] * D, (size_t)D * 4);
        norm_rows(m, m->xb, m->xb, m->final_norm, n_out, D);
        if (n_out < m->head.min_rows) { // tiny vocab x dim: padded product into the scratch
            linear(m, m->lpad, m->xb, &m->head, NULL, n_out, V, bf16);
            memcpy(logits, m->lpad, sizeof(float) * (size_t)n_out * V);
        } else {
            linear(m, logits, m->xb, &m->head, NULL, n_out, V, bf16);
        }
        if (m->bad_w) return nonfinite_err(m->bad_w, m->bad_off, m->bad_n, e);
        if (c->final_softcap > 0) {
#pragma omp parallel for schedule(static) num_threads(nt_for(m, (size_t)n_out * V))
            for (int i = 0; i < n_out; i++) ops_softcap(logits + (size_t)i * V, (size_t)V, c->final_softcap, bf16);
        }
    }
    m->stats.n_forward++;
    m->stats.tokens += T;
    m->stats.forward_s += time_now() - t_start;
    m->stats.forward_cpu_s += cpu_now() - c_start;
    return 0;
}
