// model.c: opening a checkpoint (model.h): the config, the mapping and its fingerprint, the
// dims (once), the weights (weights.c binds, linear.c packs or streams), the run state and
// RoPE tables (runstate.c); accessors, and attention contexts of the model's shape. The
// forward pass is forward.c, the KV cache kvcache.c; the files share model_internal.h.
#include "model/model.h"
#include "model/perturb.h"

#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "model/model_internal.h"
#include "model/tensor_names.h"

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
    if (!strcmp(s, "bf16")) return MODEL_WEIGHTS_BF16;
    return -1;
}

const char *model_weights_name(int weights) {
    static const char *const names[] = {"auto", "f32", "stream", "bf16"};
    return weights >= 0 && weights <= MODEL_WEIGHTS_BF16 ? names[weights] : "?";
}

const char *model_gemm_arithmetic(const struct model *m) {
    return m->weights == MODEL_WEIGHTS_BF16 && m->opts.act_bf16 ? GEMM_ARITHMETIC_DP : GEMM_ARITHMETIC;
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
                       "%s (use --weights f32)", m->weights == MODEL_WEIGHTS_BF16 ? "bf16 panels" : "streamed");
    struct perturb_job j = {m, seed, replica};
    pool_for(m->cfg.n_layers * W_COUNT + 2, perturb_task, &j, m->opts.n_threads);
    return 0;
}
int model_qk_gains(const struct model *m, int l, float *q, float *k) {
    if (l < 0 || l >= m->cfg.n_layers) return -1;
    const struct layer_w *L = &m->layers[l];
    if (!m->cfg.qk_norm || !L->q_norm || !L->k_norm) return 0;
    const float one = m->cfg.norm_plus_one ? 1.0f : 0.0f;
    for (int c = 0; c < m->cfg.head_dim; c++) q[c] = one + L->q_norm[c], k[c] = one + L->k_norm[c];
    return m->cfg.head_dim;
}
int model_open_bound(struct model **out, const char *dir, struct err *e) {
    struct model_opts mo;
    model_opts_default(&mo);
    mo.weights = MODEL_WEIGHTS_STREAM;
    mo.max_tokens = mo.max_seq = 1;
    return model_open(out, dir, &mo, e);
}

int model_k_bias(const struct model *m, int l, float *b) {
    if (l < 0 || l >= m->cfg.n_layers) return -1;
    const float *kb = m->layers[l].b[B_K];
    if (!kb) return 0;
    const int n = m->cfg.n_kv_heads * m->cfg.head_dim;
    memcpy(b, kb, (size_t)n * sizeof *b);
    return n;
}
const char *model_hash(const struct model *m) { return m->hash; }
const struct cJSON *model_st_metadata(const struct model *m) { return m->st.metadata; }
const struct model_stats *model_stats(const struct model *m) { return &m->stats; }
void model_reset_stats(struct model *m) { memset(&m->stats, 0, sizeof m->stats); }

struct attn_shape model_attn_shape(const struct model *m) {
    const struct model_dims *d = &m->dims;
    return (struct attn_shape){.n_layers = d->n_layers, .H = d->H, .Hkv = d->Hkv, .d = d->hd, .max_T = m->opts.max_seq};
}

int model_attn_open(struct attn_ctx **out, const struct model *m, const char *mode, const struct attn_opts *ao,
                    const float *scales, struct err *e) {
    struct attn_opts o;
    if (ao) o = *ao;
    else {
        attn_opts_default(&o);
        o.n_threads = m->opts.n_threads;
    }
    const struct attn_shape shape = model_attn_shape(m);
    return attn_ctx_init(out, mode, &o, &shape, scales, e);
}

void model_free(struct model *m) {
    if (!m) return;
    run_state_free(&m->rs);
    free(m->sbuf);
    free(m->wbuf);
    free(m->small);
    free(m->layers);
    st_close(&m->st);
    free(m);
}

static void log_opened(const struct model *m, size_t res_bytes) {
    const struct model_config *c = &m->cfg;
    const struct model_opts *op = &m->opts;
    const double np = (double)cfg_n_params(c);
    log_info("model: %s, %d layers, %.3g%s parameters; weights %s (%.2f GB resident %s%s), run state %.2f GB for "
             "%d tokens", cfg_arch_name(c->arch), c->n_layers, np >= 1e9 ? np * 1e-9 : np * 1e-6, np >= 1e9 ? "B" : "M",
             model_weights_name(m->weights), res_bytes * 1e-9, m->weights == MODEL_WEIGHTS_BF16 ? "bf16" : "binary32",
             m->weights == MODEL_WEIGHTS_STREAM ? ", streamed through a scratch matrix" : "",
             (run_state_floats(&m->dims, op->max_tokens) * 4 + m->stream_bytes) * 1e-9, op->max_tokens);
}

// The options as the model runs with them: ranges checked, max_seq and n_threads resolved.
static int resolve_opts(struct model *m, const struct model_opts *o, struct err *e) {
    struct model_opts *op = &m->opts;
    *op = *o;
    if (op->max_tokens <= 0 || op->max_tokens > (1 << 22))
        return err_set(e, ERR_RANGE, "model: max_tokens %d out of range (1..%d)", op->max_tokens, 1 << 22);
    if (op->max_seq <= 0) op->max_seq = m->cfg.max_seq; // a cached prefix may exceed one batch
    if (op->n_threads <= 0) op->n_threads = pool_threads();
    if (op->weights < MODEL_WEIGHTS_AUTO || op->weights > MODEL_WEIGHTS_BF16)
        return err_set(e, ERR_USAGE, "model: bad weights mode %d", op->weights);
    return 0;
}

// Every tensor of the checkpoint is bound or known-unused by name (tensor_names.h): a
// layer past num_hidden_layers or a bias the config does not declare is an error, never ignored.
static int check_tensor_names(const struct model *m, struct err *e) {
    int unused = 0;
    const size_t np = strlen(m->prefix);
    for (int i = 0; i < m->st.n_tensors; i++) {
        enum tensor_use u;
        const char *name = m->st.tensors[i].name;
        // Gemma3ForConditionalGeneration: the language model under m->prefix; its vision tower
        // and projector are known unused (this tool scores text)
        if (np && !strncmp(name, m->prefix, np)) name += np;
        else if (np && (!strncmp(name, "vision_tower.", 13) || !strncmp(name, "multi_modal_projector.", 22))) {
            unused++;
            continue;
        }
        int rc = tensor_name_check(&m->cfg, name, "config.json", &u, e);
        if (rc) return rc;
        unused += u == TENSOR_KNOWN_UNUSED;
    }
    if (unused) log_info("model: %d tensor(s) known unused by name (rotary inv_freq, a vision tower)", unused);
    return 0;
}

int model_open(struct model **out, const char *dir, const struct model_opts *o, struct err *e) {
    *out = NULL;
    struct model *m = calloc(1, sizeof *m);
    if (!m) return err_set(e, ERR_NOMEM, "model: out of memory");
    size_t res_bytes = 0;
    int rc;
    if ((rc = cfg_load(&m->cfg, dir, e)) || (rc = st_open(&m->st, dir, e)) || (rc = st_fingerprint(&m->st, m->hash, e)) ||
        (rc = resolve_opts(m, o, e)))
        goto fail;
    model_dims_init(&m->dims, &m->cfg);
    if ((rc = weights_bind(m, e)) || (rc = check_tensor_names(m, e)) || (rc = weights_setup(m, &res_bytes, e)) ||
        (rc = run_state_alloc(m, e)))
        goto fail;
    log_opened(m, res_bytes);
    *out = m;
    return 0;
fail:
    err_prefix(e, "%s", dir);
    model_free(m);
    return rc;
}
