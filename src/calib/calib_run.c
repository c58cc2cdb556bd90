// calib_run.c: calibration forward passes with the attention hook (see calib_run.h).
#include "calib/calib_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "attention/attn.h"
#include "base/dist.h"
#include "base/progress.h"
#include "calib/calib_dist.h"
#include "calib/calib_source.h"
#include "calib/gate_err.h"
#include "model/config.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

void calib_run_opts_default(struct calib_run_opts *o) {
    memset(o, 0, sizeof *o);
    o->samples = 1024;
    o->len = 512;
    o->agg = CALIB_AGG_RMS;
    calib_gate_opts_default(&o->gate);
    o->batch_tokens = 8192;
    o->bos = -1;
}

void calib_run_free(struct calib_run *r) {
    if (!r) return;
    calib_stats_free(&r->stats);
    calib_result_free(&r->result);
}

static double cpu_now(void) { // process CPU seconds, all threads
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// The hook sees the sequences of a layer one by one, all before the layer's kernel (attn.h),
// so it keeps their Q/K pointers and hands the whole batch to calib_observe_seqs at the last
// one: the statistics of a batch's sequences then run in parallel on the pool.
struct hook_state {
    struct calib_stats *stats;
    int base, nb;      // sample index of the batch's first sequence; sequences in the batch
    int ref, threads;  // calib_run_opts.stats_ref; threads for the statistics
    const float **q, **k; // (max_nb) the current layer's sequences seen so far
    int *T;
    int rc;
    struct err err;
    double stats_s;    // wall seconds inside the statistics
};

static void hook(void *user, const struct attn_hook_call *c) {
    struct hook_state *h = user;
    const int layer = c->layer, seq = c->seq, T = c->T;
    const float *q = c->q, *k = c->k;
    if (h->rc) return;
    double t0 = time_now();
    if (h->ref) {
        h->rc = calib_observe(h->stats, h->base + seq, layer, q, k, T, &h->err);
    } else if (seq < 0 || seq >= h->nb) {
        h->rc = err_set(&h->err, ERR_INTERNAL, "calibration: hook for sequence %d of a batch of %d", seq, h->nb);
    } else {
        h->q[seq] = q, h->k[seq] = k, h->T[seq] = T;
        if (seq == h->nb - 1)
            h->rc = calib_observe_seqs(h->stats, h->base, layer, (struct calib_seqs){h->nb, h->q, h->k, h->T}, h->threads,
                                       &h->err);
    }
    h->stats_s += time_now() - t0;
}

// ---- the measured gate's pass (docs/results/gate.md): a second forward over the first samples with a
// hook that measures, per (sample, layer), the output error of each candidate alpha ----
struct meas_state {
    const struct model_config *cfg;
    const struct gate_opts *go;
    struct gate_meas *meas;
    const float *const *cand_scales; // (n_cand): (n_layers, Hkv, d) per candidate, NULL = bypass
    int base, nb, threads, rc;
    struct err err;
};

static void meas_hook(void *user, const struct attn_hook_call *c) {
    struct meas_state *h = user;
    const int smp = h->base + c->seq, L = h->meas->n_layers, C = h->meas->n_cand;
    if (h->rc || smp >= h->meas->n_samples) return;
    const float *cand[GATE_MAX_CAND];
    const size_t per = (size_t)c->Hkv * c->d;
    for (int i = 0; i < C; i++) cand[i] = h->cand_scales[i] ? h->cand_scales[i] + (size_t)c->layer * per : NULL;
    const struct gate_seq sq = {c->q, c->k, c->v, c->T, c->H, c->Hkv, c->d,
                                (float)(1.0 / sqrt(h->cfg->query_pre_attn_scalar)), (float)h->cfg->attn_softcap,
                                h->cfg->window[c->layer]};
    const struct gate_err_cfg gc = {h->go->qmean, h->go->tile, h->threads};
    h->rc = gate_err_seq(&sq, &gc, cand, C, h->meas->err2 + ((size_t)smp * L + c->layer) * C,
                         h->meas->ref2 + (size_t)smp * L + c->layer, &h->err);
}

// The forward batches of samples [0, n) (greedy packing of calib_run_seqs); *base and *nb tell
// the hook which samples a batch holds; *hook_rc/hook_err its failure. all_ranks: under MPI each
// rank runs its share (calib_dist.h), else this rank runs every batch.
struct batches {
    struct model *m;
    struct attn_ctx *ctx;
    const int32_t *ids;
    const int *lens;
    int n, batch_tokens, all_ranks;
    float *logits;
    int *out_pos;
    int *base, *nb, *hook_rc;
    struct err *hook_err;
    const char *what;         // progress lines' prefix
};

static int run_batches(const struct batches *B, int64_t *tokens, struct err *e) {
    int rc = 0;
    int64_t done_tok = 0;
    // one live line (base/progress.h); under MPI rank 0 speaks for the job
    struct progress *pg = dist_rank() > 0 && B->all_ranks
                              ? NULL : progress_open(B->what, PROGRESS_COUNT, "samples", B->n, -1, NULL);
    size_t off = 0; // token offset of sample s0
    for (int s0 = 0, batch = 0; s0 < B->n; batch++) {
        int nb = 0, cur = 0;
        while (s0 + nb < B->n && (nb == 0 || (int64_t)cur + B->lens[s0 + nb] <= B->batch_tokens)) {
            cur += B->lens[s0 + nb];
            B->out_pos[nb] = cur - 1;
            nb++;
        }
        *B->base = s0;
        *B->nb = nb;
        const struct model_batch b = {.tokens = B->ids + off, .n_seq = nb, .seq_len = B->lens + s0,
                                      .out_pos = B->out_pos, .n_out = nb};
        if (!B->all_ranks || calib_dist_mine(batch)) rc = model_forward(B->m, B->ctx, NULL, &b, B->logits, e);
        if (!rc && *B->hook_rc) { rc = *B->hook_rc; *e = *B->hook_err; }
        if (rc) break;
        s0 += nb;
        off += (size_t)cur;
        done_tok += cur;
        progress_set(pg, s0, NULL);
    }
    progress_close(pg);
    if (rc) return rc;
    *tokens = done_tok;
    return 0;
}

// Candidate scales of every layer for each alpha of the options, the pass, the decision.
static int measure(struct calib_run *r, struct batches B, const struct model_config *cfg, const struct calib_run_opts *o,
                   int threads, struct err *e) {
    const struct gate_opts *go = &o->gate.meas;
    struct calib_result *res = &r->result;
    const int C = go->n_alpha + 1, L = res->n_layers;
    const size_t per = (size_t)L * res->Hkv * res->d;
    if (C < 2 || C > GATE_MAX_CAND) return err_set(e, ERR_USAGE, "gate: %d alphas (1 to %d)", go->n_alpha, GATE_MAX_CAND - 1);
    int n = go->samples > 0 && go->samples < B.n ? go->samples : B.n;
    float *scales[GATE_MAX_CAND] = {NULL};
    struct gate_meas meas;
    int rc = gate_meas_init(&meas, n, L, C, e);
    if (rc) return rc;
    for (int i = 1; i < C && !rc; i++) {
        if (!(scales[i] = malloc(per * sizeof(float)))) rc = err_set(e, ERR_NOMEM, "gate: out of memory");
        for (int l = 0; !rc && l < L; l++)
            calib_scales_alpha(res, l, go->alpha[i - 1], scales[i] + (size_t)l * res->Hkv * res->d);
    }
    struct meas_state ms = {cfg, go, &meas, (const float *const *)scales, 0, 0, threads, 0, {0}};
    B.n = n;
    B.all_ranks = 0;
    B.base = &ms.base;
    B.nb = &ms.nb;
    B.hook_rc = &ms.rc;
    B.hook_err = &ms.err;
    B.what = "calibrate: measured gate";
    attn_ctx_set_hook(B.ctx, meas_hook, &ms);
    double t0 = time_now(), c0 = cpu_now();
    int64_t tok = 0;
    if (!rc) rc = run_batches(&B, &tok, e);
    r->time.measure_s = time_now() - t0;
    r->time.measure_cpu_s = cpu_now() - c0;
    if (!rc && !(rc = gate_decide(&res->gate, &meas, go, e))) {
        res->gate.seconds = r->time.measure_s;
        if (o->gate.rule == CALIB_RULE_MEASURED) calib_apply_measured(res, &o->gate);
        log_info("calibrate: measured gate on %d samples (%lld tokens) in %.1f s (%.1f CPU-s)", n, (long long)tok,
                 r->time.measure_s, r->time.measure_cpu_s);
    }
    for (int i = 0; i < C; i++) free(scales[i]);
    gate_meas_free(&meas);
    return rc;
}

int calib_run_ids(struct calib_run *r, const char *model_dir, const int32_t *ids, int n_samples, int len,
                  const struct calib_run_opts *o, struct err *e) {
    memset(r, 0, sizeof *r);
    if (n_samples <= 0 || len <= 0)
        return err_set(e, ERR_RANGE, "calibration: %d samples of %d tokens", n_samples, len);
    int *lens = malloc((size_t)n_samples * sizeof *lens);
    if (!lens) return err_set(e, ERR_NOMEM, "calibration: out of memory");
    for (int i = 0; i < n_samples; i++) lens[i] = len;
    int rc = calib_run_seqs(r, model_dir, ids, lens, n_samples, o, e);
    free(lens);
    return rc;
}

int calib_run_seqs(struct calib_run *r, const char *model_dir, const int32_t *ids, const int *lens, int n_samples,
                   const struct calib_run_opts *o, struct err *e) {
    memset(r, 0, sizeof *r);
    path_basename(r->model_id, sizeof r->model_id, model_dir);
    if (n_samples <= 0) return err_set(e, ERR_RANGE, "calibration: no samples");
    // Greedy packing in sample order: a batch takes samples while it stays within
    // batch_tokens (always at least one). For equal lengths this is batch_tokens/len samples.
    int max_len = 0, max_batch = 0, max_nb = 0;
    for (int i = 0, cur = 0, nb = 0; i < n_samples; i++) {
        if (lens[i] <= 0) return err_set(e, ERR_RANGE, "calibration: sample %d has %d tokens", i, lens[i]);
        if (lens[i] > max_len) max_len = lens[i];
        if (nb > 0 && (int64_t)cur + lens[i] > o->batch_tokens) { cur = 0; nb = 0; }
        cur += lens[i];
        nb++;
        if (cur > max_batch) max_batch = cur;
        if (nb > max_nb) max_nb = nb;
    }
    struct model_opts mo;
    model_opts_default(&mo);
    mo.act_bf16 = 0; // spec section 1: f32 activations
    mo.max_tokens = max_batch;
    mo.max_seq = max_len;
    mo.n_threads = o->threads;
    mo.weights = o->weights;
    struct model *m = NULL;
    struct attn_ctx *ctx = NULL;
    double t_open = time_now();
    int rc = model_open(&m, model_dir, &mo, e);
    if (rc) return rc;
    r->time.open_s = time_now() - t_open;
    snprintf(r->model_hash, sizeof r->model_hash, "%s", model_hash(m));
    struct attn_opts ao;
    attn_opts_default(&ao);
    ao.n_threads = o->threads;
    const struct model_config *c = model_cfg(m);
    float *logits = NULL;
    int *out_pos = NULL;
    struct hook_state hs = {.stats = &r->stats, .ref = o->stats_ref, .threads = model_get_opts(m)->n_threads};
    hs.q = malloc((size_t)max_nb * sizeof *hs.q);
    hs.k = malloc((size_t)max_nb * sizeof *hs.k);
    hs.T = malloc((size_t)max_nb * sizeof *hs.T);
    if ((rc = model_attn_open(&ctx, m, "bf16", &ao, NULL, e))) goto done;
    if ((rc = calib_stats_init(&r->stats, (struct calib_shape){c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim},
                               n_samples, max_len, e)))
        goto done;
    attn_ctx_set_hook(ctx, hook, &hs);
    logits = malloc((size_t)max_nb * (size_t)c->vocab_size * sizeof *logits);
    out_pos = malloc((size_t)max_nb * sizeof *out_pos);
    if (!logits || !out_pos || !hs.q || !hs.k || !hs.T) {
        rc = err_set(e, ERR_NOMEM, "calibration: out of memory");
        goto done;
    }
    double t0 = time_now(), c0 = cpu_now();
    int64_t done_tok = 0;
    struct batches B = {m, ctx, ids, lens, n_samples, o->batch_tokens, o->ranks == CALIB_ALL_RANKS, logits, out_pos,
                        &hs.base, &hs.nb, &hs.rc, &hs.err, "calibrate"};
    if ((rc = run_batches(&B, &done_tok, e))) goto done;
    r->time.forward_s = time_now() - t0;
    r->time.forward_cpu_s = cpu_now() - c0;
    r->time.stats_s = hs.stats_s;
    log_info("calibrate: %d samples, %lld tokens in %.1f s (statistics %.1f s, %.1f CPU-s in all)", n_samples,
             (long long)done_tok, r->time.forward_s, r->time.stats_s, r->time.forward_cpu_s);
    if (o->ranks == CALIB_ALL_RANKS && ((rc = calib_dist_gather(&r->stats, e)) || dist_rank() > 0))
        goto done; // rank 0 aggregates alone
    double t_comp = time_now();
    rc = calib_compute(&r->result, &r->stats, o->agg, &o->gate, e);
    r->time.compute_s = time_now() - t_comp;
    if (!rc && o->measure) rc = measure(r, B, c, o, model_get_opts(m)->n_threads, e);
done:
    free(hs.q);
    free(hs.k);
    free(hs.T);
    free(logits);
    free(out_pos);
    attn_ctx_free(ctx);
    model_free(m);
    if (rc) calib_run_free(r);
    return rc;
}

int calib_run_samples(const char *model_dir, const char *source, const struct calib_run_opts *o,
                      struct calib_samples *out, char *desc, size_t n_desc, struct err *e) {
    char *text = NULL;
    size_t tl = 0;
    out->ids = NULL;
    out->n = 0;
    int rc = calib_source_read(source, o->force, &text, &tl, desc, n_desc, e);
    if (rc) return rc;
    struct tokenizer *tok = NULL;
    int32_t *ids = NULL;
    int n_ids = 0;
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
    int bos = (o->bos < 0 ? tok_adds_bos(tok) : o->bos) ? tok_bos_id(tok) : -1;
    if (o->bos == 1 && bos < 0) {
        rc = err_set(e, ERR_USAGE, "--calib-bos yes: the tokenizer of %s has no BOS token", model_dir);
        goto done;
    }
    const struct calib_cut cut = {o->len, o->samples, o->seed, bos};
    if ((rc = calib_make_samples(ids, n_ids, cut, out, e))) goto done;
    if (out->n < o->samples)
        log_warn("calibrate: source has only %d samples of %d tokens (asked for %d)", out->n, o->len, o->samples);
done:
    free(text);
    free(ids);
    tok_free(tok);
    return rc;
}

int calib_run_source(struct calib_run *r, const char *model_dir, const char *source,
                     const struct calib_run_opts *o, struct err *e) {
    char desc[1024];
    struct calib_samples s = {0};
    memset(r, 0, sizeof *r);
    int rc = calib_run_samples(model_dir, source, o, &s, desc, sizeof desc, e);
    if (!rc) rc = calib_run_ids(r, model_dir, s.ids, s.n, o->len, o, e);
    // a BOS rule other than the tokenizer's is part of what the scales were made from
    if (!rc) snprintf(r->source_desc, sizeof r->source_desc, "%.900s, %d samples x %d tokens, seed %llu%s", desc,
                      s.n, o->len, (unsigned long long)o->seed,
                      o->bos < 0 ? "" : o->bos ? ", BOS first (--calib-bos yes)" : ", no BOS (--calib-bos no)");
    free(s.ids);
    return rc;
}
