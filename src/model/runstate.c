// runstate.c: the dims of a model, the run-state buffers of one packed batch (sized once at
// open for max_tokens rows) and the RoPE tables (binary64, goldens README) for max_seq.
#include <math.h>
#include <stdlib.h>

#include "model/model_internal.h"

void model_dims_init(struct model_dims *d, const struct model_config *c) {
    d->D = c->dim;
    d->hd = c->head_dim;
    d->H = c->n_heads;
    d->Hkv = c->n_kv_heads;
    d->qd = c->n_heads * c->head_dim;
    d->kd = c->n_kv_heads * c->head_dim;
    d->F = c->hidden_dim;
    d->V = c->vocab_size;
    d->n_layers = c->n_layers;
}

// x, xb, tmp (D) + q, att (qd) + k, v (kd) + gate, up (F) per row.
size_t run_state_floats(const struct model_dims *d, int max_tokens) {
    return (size_t)max_tokens * (3 * (size_t)d->D + 2 * (size_t)d->qd + 2 * (size_t)d->kd + 2 * (size_t)d->F);
}

// The table set of a base: global (rope_theta with the config's scaling) or Gemma3's local one
// (rope_local_theta, no scaling: HF 4.50's rotary_emb_local runs the default rope).
enum rope_set { ROPE_SET_GLOBAL, ROPE_SET_LOCAL };

static void rope_inv_freq(const struct model_config *c, const double *ext, enum rope_set set, double *inv) {
    const int half = c->rope_dim / 2;
    const double theta = set == ROPE_SET_LOCAL ? c->rope_local_theta : c->rope_theta;
    for (int i = 0; i < half; i++) {
        double f = 1.0 / pow(theta, (2.0 * i) / c->rope_dim);
        if (set == ROPE_SET_LOCAL) {
            inv[i] = f;
            continue;
        }
        if (c->rope_type == ROPE_LINEAR) f /= c->rope_factor; // HF linear: inv_freq / factor
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

// cos and sin tables [max_seq][rope_dim/2] of one factor set (ext: LongRoPE factors).
static void rope_table(const struct model_config *c, const double *ext, enum rope_set set, double *cs, int max_seq) {
    const int half = c->rope_dim / 2;
    double *sn = cs + (size_t)max_seq * half;
    double inv[CFG_MAX_ROPE_FACTORS > 512 ? CFG_MAX_ROPE_FACTORS : 512];
    rope_inv_freq(c, ext, set, inv);
    for (int p = 0; p < max_seq; p++)
        for (int i = 0; i < half; i++) {
            const double a = (double)p * inv[i];
            cs[(size_t)p * half + i] = cos(a) * c->rope_attn_factor;
            sn[(size_t)p * half + i] = sin(a) * c->rope_attn_factor;
        }
}

int run_state_alloc(struct model *m, struct err *e) {
    const struct model_config *c = &m->cfg;
    const struct model_dims *d = &m->dims;
    struct run_state *rs = &m->rs;
    const int max_seq = m->opts.max_seq;
    const size_t T = (size_t)m->opts.max_tokens;
    rs->mem = calloc(run_state_floats(d, m->opts.max_tokens), sizeof(float));
    rs->seq_off = malloc(4 * T * sizeof(int));
    rs->past = calloc(T, sizeof *rs->past);
    const size_t half = (size_t)c->rope_dim / 2;
    const size_t nt = 2 + (c->rope_type == ROPE_LONGROPE ? 2 : 0) + (c->rope_local_theta > 0 ? 2 : 0);
    rs->rope = malloc(nt * (size_t)max_seq * half * sizeof(double));
    if (!rs->mem || !rs->seq_off || !rs->past || !rs->rope)
        return err_set(e, ERR_NOMEM, "model: cannot allocate run state for %d tokens", m->opts.max_tokens);
    rs->seq_len = rs->seq_off + T;
    rs->pos = rs->seq_off + 2 * T;
    rs->lng = rs->seq_off + 3 * T;
    float *p = rs->mem;
    rs->x = p, p += T * d->D;
    rs->xb = p, p += T * d->D;
    rs->tmp = p, p += T * d->D;
    rs->q = p, p += T * d->qd;
    rs->att = p, p += T * d->qd;
    rs->k = p, p += T * d->kd;
    rs->v = p, p += T * d->kd;
    rs->gate = p, p += T * d->F;
    rs->up = p, p += T * d->F;
    rs->rope_tab = (size_t)max_seq * half;
    rope_table(c, c->rope_short, ROPE_SET_GLOBAL, rs->rope, max_seq);
    if (c->rope_type == ROPE_LONGROPE) rope_table(c, c->rope_long, ROPE_SET_GLOBAL, rs->rope + 2 * rs->rope_tab, max_seq);
    rs->rope_local = c->rope_local_theta > 0 ? rs->rope + (nt - 2) * rs->rope_tab : NULL;
    if (rs->rope_local) rope_table(c, NULL, ROPE_SET_LOCAL, rs->rope_local, max_seq);
    return 0;
}

void run_state_free(struct run_state *rs) {
    free(rs->mem);
    free(rs->seq_off); // seq_len, pos, lng share its allocation
    free(rs->past);
    free(rs->rope);
}
