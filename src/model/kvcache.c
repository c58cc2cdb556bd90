// kvcache.c: the KV cache store (model.h "the exact KV cache"; the layout is kvcache.h) and
// its rule: the store is sized once; every stored row carries the stamp of the attention
// context (and LongRoPE factor set) that computed it, a past may read only rows with the stamp
// its own run would give them, and rows are written after each layer's attention (forward.c
// calls kv_check_seq before layer 0 and kv_store_rows after each layer). The alignment and
// segment rules of a past are attention's (attn_batch_check), checked once there.
#include "model/kvcache.h"

#include <stdlib.h>

#include "base/host.h"
#include "model/model_internal.h"

size_t model_kv_row_bytes(const struct model *m) {
    const struct model_config *c = model_cfg(m);
    return (size_t)c->n_layers * 2 * (size_t)c->n_kv_heads * (size_t)c->head_dim * sizeof(float);
}

int model_kv_open(struct model_kv **out, const struct model *m, int rows, struct err *e) {
    *out = NULL;
    const struct model_config *c = model_cfg(m);
    if (rows <= 0) return err_set(e, ERR_RANGE, "KV cache: %d rows", rows);
    const size_t per = model_kv_row_bytes(m), bytes = per * (size_t)rows + (size_t)rows * sizeof(uint64_t);
    const size_t avail = host_mem_available();
    if (avail && bytes > avail)
        return err_set(e, ERR_NOMEM, "KV cache: %d positions x %.1f KB (%d layers x K,V x %d kv heads x %d) = %.2f GB, "
                       "more than the %.2f GB available", rows, per / 1024.0, c->n_layers, c->n_kv_heads, c->head_dim,
                       bytes * 1e-9, avail * 1e-9);
    struct model_kv *kv = calloc(1, sizeof *kv);
    if (!kv) return err_set(e, ERR_NOMEM, "KV cache: out of memory");
    kv->rows = rows;
    kv->n_layers = c->n_layers;
    kv->row_floats = (size_t)c->n_kv_heads * (size_t)c->head_dim;
    kv->mem = aligned_alloc(64, (per * (size_t)rows + 63) / 64 * 64);
    kv->stamp = calloc((size_t)rows, sizeof *kv->stamp);
    kv->bytes = bytes;
    if (!kv->mem || !kv->stamp) {
        model_kv_free(kv);
        return err_set(e, ERR_NOMEM, "KV cache: cannot allocate %.2f GB for %d positions", bytes * 1e-9, rows);
    }
    *out = kv;
    return 0;
}

void model_kv_free(struct model_kv *kv) {
    if (!kv) return;
    free(kv->mem);
    free(kv->stamp);
    free(kv);
}

int model_kv_rows(const struct model_kv *kv) { return kv->rows; }
size_t model_kv_bytes(const struct model_kv *kv) { return kv->bytes; }

// The stamp of a row computed by context ctx in a sequence of total length T: the context's
// key, and for LongRoPE which factor set the run used (model.h cache rule). Never 0 (empty).
static uint64_t row_stamp(const struct model *m, const struct attn_ctx *ctx, int64_t T) {
    const struct model_config *c = &m->cfg;
    const int lng = c->rope_type == ROPE_LONGROPE && T > c->rope_orig_max;
    return attn_ctx_key(ctx) ^ (lng ? 0x9e3779b97f4a7c15ull : 0) ^ 1;
}

int kv_check_seq(const struct model *m, const struct attn_ctx *ctx, const struct model_kv *kv,
                 const struct model_seq *q, int s, struct err *e) {
    const struct attn_past *p = &q->past;
    if (!p->n && !q->save_n) return 0;
    if (!kv) return err_set(e, ERR_USAGE, "model_forward: sequence %d uses a cache but none was given", s);
    const int align = attn_ctx_align(ctx);
    if (q->save_n && (p->n + q->save_n) % align)
        return err_set(e, ERR_USAGE, "model_forward: sequence %d: stored end %d not a multiple of %d (attention mode %s): "
                       "not exact (spec/attention.md 8.6)", s, p->n + q->save_n, align, attn_ctx_mode(ctx)->name);
    if (q->save_n < 0 || q->save_n > q->n || (q->save_n && (q->save_row < 0 || q->save_row + q->save_n > kv->rows)))
        return err_set(e, ERR_RANGE, "model_forward: sequence %d stores %d of %d rows at %d (cache of %d)", s, q->save_n,
                       q->n, q->save_row, kv->rows);
    if (!p->n) return 0;
    const uint64_t want = row_stamp(m, ctx, (int64_t)p->n + q->n);
    for (int g = 0; g < p->n_seg; g++) {
        if (p->row[g] + p->len[g] > kv->rows)
            return err_set(e, ERR_RANGE, "model_forward: sequence %d: past rows %d..+%d outside the cache (%d)", s,
                           p->row[g], p->len[g], kv->rows);
        for (int r = p->row[g]; r < p->row[g] + p->len[g]; r++)
            if (kv->stamp[r] != want)
                return err_set(e, ERR_MISMATCH, "model_forward: sequence %d: cache row %d was %s", s, r,
                               kv->stamp[r] ? "computed under another attention configuration (or RoPE factor set)"
                                            : "never stored");
    }
    return 0;
}

void kv_store_rows(const struct model *m, const struct attn_ctx *ctx, struct model_kv *kv,
                   const struct model_batch *b, int l) {
    const size_t w = kv->row_floats;
    for (int s = 0; s < b->n_seq; s++) {
        const struct model_seq *q = &b->seqs[s];
        if (!q->save_n) continue;
        const size_t o = (size_t)m->rs.seq_off[s];
        memcpy(kv_k(kv, l, q->save_row), m->rs.k + o * w, (size_t)q->save_n * w * sizeof(float));
        memcpy(kv_v(kv, l, q->save_row), m->rs.v + o * w, (size_t)q->save_n * w * sizeof(float));
        // a row is valid once every layer holds it: cleared at the first layer, stamped at the last
        const uint64_t st = l == m->dims.n_layers - 1 ? row_stamp(m, ctx, (int64_t)q->past.n + q->n) : 0;
        if (l == 0 || st)
            for (int r = 0; r < q->save_n; r++) kv->stamp[q->save_row + r] = st;
    }
}
