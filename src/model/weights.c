// weights.c: binding the checkpoint's tensors for the seven architectures (model_internal.h).
// An architecture is data: its config flags (fused q/k/v, fused gate/up, biases, sandwich
// norms, q/k norms, tied embeddings) select the tensor names of bind_layer; matrices are
// referenced in the mapping (packed later by linear.c), norms and biases converted once into
// one arena sized by small_floats next to the code that fills it.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/model_internal.h"

size_t weights_convert(float *dst, const struct st_tensor *t, size_t off, size_t n) {
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

// Names the tensor, the first non-finite element (row and column of a matrix) and its value.
int weights_nonfinite_err(const struct st_tensor *t, size_t off, size_t n, struct err *e) {
    size_t i = 0;
    float v = 0;
    for (; i < n; i++) {
        weights_convert(&v, t, off + i, 1);
        if (!isfinite(v)) break;
    }
    const size_t at = off + i, cols = t->ndim == 2 ? (size_t)t->shape[1] : 0;
    if (cols)
        return err_set(e, ERR_FORMAT, "tensor '%s' [row %zu, column %zu] = %g: the checkpoint holds a non-finite weight",
                       t->name, at / cols, at % cols, (double)v);
    return err_set(e, ERR_FORMAT, "tensor '%s' [%zu] = %g: the checkpoint holds a non-finite weight", t->name, at, (double)v);
}

// Where a matrix sits in its tensor: rows [row_off, row_off + rows) of a (total_rows, cols) one.
struct mat_at {
    int rows, cols, row_off, total_rows;
};

static int bind_mat(struct model *m, struct wref *r, const char *name, struct mat_at a, struct err *e) {
    const struct st_tensor *t;
    int64_t shape[2] = {a.total_rows, a.cols};
    int rc = st_check(&m->st, name, ST_FLOATING, 2, shape, &t, e);
    if (rc) return rc;
    r->t = t;
    r->rows = a.rows;
    r->cols = a.cols;
    r->off = (size_t)a.row_off * (size_t)a.cols;
    r->n = (size_t)a.rows * (size_t)a.cols;
    return 0;
}

// Vector `name` of n elements, converted into the small arena; *out points at it.
static int bind_vec(struct model *m, const float **out, const char *name, int n, struct err *e) {
    const struct st_tensor *t;
    int64_t shape[1] = {n};
    int rc = st_check(&m->st, name, ST_FLOATING, 1, shape, &t, e);
    if (rc) return rc;
    if (m->small_used + (size_t)n > m->small_n)
        return err_set(e, ERR_INTERNAL, "model: small-tensor arena too small at %s", name);
    float *dst = m->small + m->small_used;
    if (weights_convert(dst, t, 0, (size_t)n)) return weights_nonfinite_err(t, 0, (size_t)n, e);
    m->small_used += (size_t)n;
    *out = dst;
    return 0;
}

// Floats of the arena: at most what bind_layer binds per layer (biases q, k, v, o, gate, up,
// down; norms in, post-attn, pre/post-ffn, q, k) plus the final norm.
static size_t small_floats(const struct model_dims *d) {
    const size_t per = (size_t)d->qd + 2 * (size_t)d->kd + (size_t)d->D + 2 * (size_t)d->F + (size_t)d->D // biases
                       + 4 * (size_t)d->D + 2 * (size_t)d->hd;                                            // norms
    return (size_t)d->n_layers * per + (size_t)d->D;
}

static int bind_attn_mats(struct model *m, struct layer_w *L, int l, struct err *e) {
    const struct model_config *c = &m->cfg;
    const struct model_dims *d = &m->dims;
    const int D = d->D, qd = d->qd, kd = d->kd;
    char n[256];
    int rc = 0;
#define NAME(fmt) (snprintf(n, sizeof n, "%smodel.layers.%d." fmt, m->prefix, l), n)
    if (c->fused_qkv) {
        const int tot = qd + 2 * kd;
        if ((rc = bind_mat(m, &L->w[W_Q], NAME("self_attn.qkv_proj.weight"), (struct mat_at){qd, D, 0, tot}, e)) ||
            (rc = bind_mat(m, &L->w[W_K], n, (struct mat_at){kd, D, qd, tot}, e)) ||
            (rc = bind_mat(m, &L->w[W_V], n, (struct mat_at){kd, D, qd + kd, tot}, e)))
            return rc;
    } else {
        if ((rc = bind_mat(m, &L->w[W_Q], NAME("self_attn.q_proj.weight"), (struct mat_at){qd, D, 0, qd}, e)) ||
            (rc = bind_mat(m, &L->w[W_K], NAME("self_attn.k_proj.weight"), (struct mat_at){kd, D, 0, kd}, e)) ||
            (rc = bind_mat(m, &L->w[W_V], NAME("self_attn.v_proj.weight"), (struct mat_at){kd, D, 0, kd}, e)))
            return rc;
    }
    return bind_mat(m, &L->w[W_O], NAME("self_attn.o_proj.weight"), (struct mat_at){D, qd, 0, D}, e);
#undef NAME
}

static int bind_mlp_mats(struct model *m, struct layer_w *L, int l, struct err *e) {
    const struct model_dims *d = &m->dims;
    const int D = d->D, F = d->F;
    char n[256];
    int rc = 0;
#define NAME(fmt) (snprintf(n, sizeof n, "%smodel.layers.%d." fmt, m->prefix, l), n)
    if (m->cfg.fused_gate_up) {
        if ((rc = bind_mat(m, &L->w[W_GATE], NAME("mlp.gate_up_proj.weight"), (struct mat_at){F, D, 0, 2 * F}, e)) ||
            (rc = bind_mat(m, &L->w[W_UP], n, (struct mat_at){F, D, F, 2 * F}, e)))
            return rc;
    } else {
        if ((rc = bind_mat(m, &L->w[W_GATE], NAME("mlp.gate_proj.weight"), (struct mat_at){F, D, 0, F}, e)) ||
            (rc = bind_mat(m, &L->w[W_UP], NAME("mlp.up_proj.weight"), (struct mat_at){F, D, 0, F}, e)))
            return rc;
    }
    return bind_mat(m, &L->w[W_DOWN], NAME("mlp.down_proj.weight"), (struct mat_at){D, F, 0, D}, e);
#undef NAME
}

static int bind_layer(struct model *m, int l, struct err *e) {
    const struct model_config *c = &m->cfg;
    const struct model_dims *d = &m->dims;
    struct layer_w *L = &m->layers[l];
    const int D = d->D, hd = d->hd, qd = d->qd, kd = d->kd, F = d->F;
    char n[256];
    int rc = 0;
    if ((rc = bind_attn_mats(m, L, l, e)) || (rc = bind_mlp_mats(m, L, l, e))) return rc;
#define NAME(fmt) (snprintf(n, sizeof n, "%smodel.layers.%d." fmt, m->prefix, l), n)
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

int weights_bind(struct model *m, struct err *e) {
    const struct model_config *c = &m->cfg;
    const struct model_dims *d = &m->dims;
    char embed[96], norm[96], head[96];
    int rc;
    // a Gemma3ForConditionalGeneration checkpoint: the language model under language_model.
    // (its vision tower and projector are not read)
    m->prefix = !st_find(&m->st, "model.embed_tokens.weight") && st_find(&m->st, "language_model.model.embed_tokens.weight")
                    ? "language_model."
                    : "";
    snprintf(embed, sizeof embed, "%smodel.embed_tokens.weight", m->prefix);
    snprintf(norm, sizeof norm, "%smodel.norm.weight", m->prefix);
    snprintf(head, sizeof head, "%slm_head.weight", m->prefix);
    m->layers = calloc((size_t)d->n_layers, sizeof *m->layers);
    m->small_n = small_floats(d);
    m->small = malloc(m->small_n * sizeof(float));
    if (!m->layers || !m->small) return err_set(e, ERR_NOMEM, "model: out of memory");
    int64_t shape[2] = {d->V, d->D};
    if ((rc = st_check(&m->st, embed, ST_FLOATING, 2, shape, &m->embed, e))) return rc;
    for (int l = 0; l < d->n_layers; l++)
        if ((rc = bind_layer(m, l, e))) return rc;
    if ((rc = bind_vec(m, &m->final_norm, norm, d->D, e))) return rc;
    return bind_mat(m, &m->head, c->tie_embeddings ? embed : head,
                    (struct mat_at){d->V, d->D, 0, d->V}, e);
}
