// calib_run.c: calibration forward passes with the attention hook (see calib_run.h).
#include "calib_run.h"

#include <stdio.h>
#include <stdlib.h>

#include "attention/attn.h"
#include "calib_source.h"
#include "config.h"
#include "model.h"
#include "tokenizer.h"

void calib_run_opts_default(struct calib_run_opts *o) {
    memset(o, 0, sizeof *o);
    o->samples = 1024;
    o->len = 512;
    o->agg = CALIB_AGG_RMS;
    calib_gate_opts_default(&o->gate);
    o->batch_tokens = 8192;
}

void calib_run_free(struct calib_run *r) {
    if (!r) return;
    calib_stats_free(&r->stats);
    calib_result_free(&r->result);
}

struct hook_state {
    struct calib_stats *stats;
    int base;          // sample index of the batch's first sequence
    int rc;
    struct err err;
};

static void hook(void *user, int layer, int seq, const float *q, const float *k, const float *v, int T, int H,
                 int Hkv, int d) {
    (void)v; (void)H; (void)Hkv; (void)d;
    struct hook_state *h = user;
    if (h->rc) return;
    h->rc = calib_observe(h->stats, h->base + seq, layer, q, k, T, &h->err);
}

static void model_id_of(char *out, size_t n, const char *dir) {
    size_t l = strlen(dir);
    while (l > 1 && dir[l - 1] == '/') l--;
    size_t s = l;
    while (s > 0 && dir[s - 1] != '/') s--;
    snprintf(out, n, "%.*s", (int)(l - s), dir + s);
}

int calib_run_ids(struct calib_run *r, const char *model_dir, const int32_t *ids, int n_samples, int len,
                  const struct calib_run_opts *o, struct err *e) {
    memset(r, 0, sizeof *r);
    model_id_of(r->model_id, sizeof r->model_id, model_dir);
    struct model_opts mo;
    model_opts_default(&mo);
    mo.act_bf16 = 0; // spec section 1: f32 activations
    int per_batch = o->batch_tokens / len;
    if (per_batch < 1) per_batch = 1;
    if (per_batch > n_samples) per_batch = n_samples;
    mo.max_tokens = per_batch * len;
    mo.max_seq = len;
    mo.n_threads = o->threads;
    struct model *m = NULL;
    int rc = model_open(&m, model_dir, &mo, e);
    if (rc) return rc;
    snprintf(r->model_hash, sizeof r->model_hash, "%s", model_hash(m));
    struct attn_opts ao;
    attn_opts_default(&ao);
    ao.n_threads = o->threads;
    const struct model_config *c = model_cfg(m);
    float *logits = NULL;
    int *seq_len = NULL, *out_pos = NULL;
    if ((rc = model_set_attn(m, "bf16", &ao, NULL, e))) goto done;
    if ((rc = calib_stats_init(&r->stats, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim, n_samples, len, e)))
        goto done;
    struct hook_state hs = {&r->stats, 0, 0, {0}};
    attn_ctx_set_hook(model_attn(m), hook, &hs);
    logits = malloc((size_t)per_batch * (size_t)c->vocab_size * sizeof *logits);
    seq_len = malloc((size_t)per_batch * sizeof *seq_len);
    out_pos = malloc((size_t)per_batch * sizeof *out_pos);
    if (!logits || !seq_len || !out_pos) { rc = err_set(e, ERR_NOMEM, "calibration: out of memory"); goto done; }
    double t0 = time_now();
    for (int s0 = 0; s0 < n_samples; s0 += per_batch) {
        int nb = n_samples - s0 < per_batch ? n_samples - s0 : per_batch;
        for (int i = 0; i < nb; i++) { seq_len[i] = len; out_pos[i] = i * len + len - 1; }
        hs.base = s0;
        rc = model_forward(m, ids + (size_t)s0 * len, seq_len, nb, out_pos, nb, logits, e);
        if (!rc && hs.rc) { rc = hs.rc; *e = hs.err; }
        if (rc) goto done;
        double el = time_now() - t0;
        log_info("calibrate: %d/%d samples, %.1f tok/s\r", s0 + nb, n_samples, (double)(s0 + nb) * len / (el > 0 ? el : 1));
    }
    log_info("\ncalibrate: %d samples x %d tokens in %.1f s", n_samples, len, time_now() - t0);
    rc = calib_compute(&r->result, &r->stats, o->agg, &o->gate, e);
done:
    free(logits);
    free(seq_len);
    free(out_pos);
    model_free(m);
    if (rc) calib_run_free(r);
    return rc;
}

int calib_run_source(struct calib_run *r, const char *model_dir, const char *source,
                     const struct calib_run_opts *o, struct err *e) {
    char *text = NULL, desc[1024];
    size_t tl = 0;
    memset(r, 0, sizeof *r);
    int rc = calib_source_read(source, o->force, &text, &tl, desc, sizeof desc, e);
    if (rc) return rc;
    struct tokenizer *tok = NULL;
    int32_t *ids = NULL, *samples = NULL;
    int n_ids = 0, n_samples = 0;
    if ((rc = tok_load(&tok, model_dir, e))) goto done;
    // Only as much text as the samples need is tokenized when the source is large: about
    // 8 bytes per token is generous for every tokenizer we support.
    size_t need = (size_t)o->samples * (size_t)o->len * 8;
    if (o->samples >= 0 && tl > need * 4) {
        // keep whole lines: cut at the last newline before the limit (seeded choice below
        // still picks among all chunks of this prefix)
        size_t cut = need * 4;
        while (cut > 0 && text[cut] != '\n') cut--;
        if (cut > 0) tl = cut;
    }
    if ((rc = tok_encode(tok, text, tl, 0, &ids, &n_ids, e))) goto done;
    int bos = tok_adds_bos(tok) ? tok_bos_id(tok) : -1;
    if ((rc = calib_make_samples(ids, n_ids, o->len, o->samples, o->seed, bos, &samples, &n_samples, e))) goto done;
    if (n_samples < o->samples)
        log_warn("calibrate: source has only %d samples of %d tokens (asked for %d)", n_samples, o->len, o->samples);
    rc = calib_run_ids(r, model_dir, samples, n_samples, o->len, o, e);
    if (!rc) snprintf(r->source_desc, sizeof r->source_desc, "%.900s, %d samples x %d tokens, seed %llu", desc,
                      n_samples, o->len, (unsigned long long)o->seed);
done:
    free(text);
    free(ids);
    free(samples);
    tok_free(tok);
    return rc;
}
