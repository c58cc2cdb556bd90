// cached.c: runs a batch's prefix schedule (cached.h, prefix.h) on the model.
#include "eval/cached.h"

#include <stdlib.h>

#include "eval/prefix.h"

// One batch's schedule being run: its buffers (max_tokens each) and where logits go.
struct sched_run {
    const struct cached_model *cm;
    const struct eval_plan *p;
    const struct prefix_sched *sc;
    int32_t *tok;
    struct model_seq *seqs;
    int *out_pos;
    float *logits;
    int vocab;
};

// Forward call: pieces [k0, k1) of the schedule.
static int run_call(const struct sched_run *sr, int k0, int k1, struct err *e) {
    int n_tok = 0, n_out = 0, out_row = -1;
    for (int k = k0; k < k1; k++) {
        const struct prefix_piece *pc = &sr->sc->pieces[k];
        const struct eval_seq *q = &sr->p->seq[pc->seq];
        const int len = pc->end - pc->start;
        memcpy(sr->tok + n_tok, q->tok + pc->start, (size_t)len * sizeof(int32_t));
        sr->seqs[k - k0] = (struct model_seq){.n = len, .past = pc->past, .save_row = pc->save_row, .save_n = pc->save_n};
        if (pc->n_out) {
            if (out_row < 0) out_row = pc->out_row;
            else if (pc->out_row != out_row + n_out)
                return err_set(e, ERR_INTERNAL, "cached: scored rows of a call are not consecutive");
            for (int r = 0; r < q->n_rows; r++) sr->out_pos[n_out++] = n_tok + q->pos[r] - pc->start;
        }
        n_tok += len;
    }
    float *lg = n_out ? sr->logits + (size_t)out_row * (size_t)sr->vocab : NULL;
    const struct model_batch mb = {.tokens = sr->tok, .n_seq = k1 - k0, .seqs = sr->seqs, .out_pos = sr->out_pos,
                                   .n_out = n_out};
    return model_forward(sr->cm->m, sr->cm->ctx, sr->cm->kv, &mb, lg, e);
}

int cached_forward(const struct cached_model *cm, const struct eval_plan *p, const struct eval_batch *b, float *logits,
                   struct cached_stats *st, struct err *e) {
    const int mt = model_get_opts(cm->m)->max_tokens;
    struct prefix_sched sc;
    const struct prefix_window w = {.item0 = b->item0, .item1 = b->item1, .row_base = b->row_base};
    const struct prefix_limits lim = {.align = attn_ctx_align(cm->ctx), .store_rows = model_kv_rows(cm->kv),
                                      .max_tokens = mt};
    int rc = prefix_schedule(&sc, p, &w, &lim, e);
    if (rc) return rc;
    struct sched_run sr = {.cm = cm, .p = p, .sc = &sc, .tok = malloc((size_t)mt * sizeof *sr.tok),
                           .seqs = malloc((size_t)mt * sizeof *sr.seqs), .out_pos = malloc((size_t)mt * sizeof *sr.out_pos),
                           .logits = logits, .vocab = model_cfg(cm->m)->vocab_size};
    if (!sr.tok || !sr.seqs || !sr.out_pos) rc = err_set(e, ERR_NOMEM, "cached: out of memory");
    int64_t done = 0;
    for (int k0 = 0; k0 < sc.n_pieces && !rc;) {
        int k1 = k0;
        while (k1 < sc.n_pieces && sc.pieces[k1].call == sc.pieces[k0].call) {
            done += sc.pieces[k1].end - sc.pieces[k1].start;
            k1++;
        }
        rc = run_call(&sr, k0, k1, e);
        k0 = k1;
        if (!rc && cm->tick && k0 < sc.n_pieces && sc.tokens > 0) cm->tick(cm->tick_user, (double)done / (double)sc.tokens);
    }
    if (!rc) {
        st->tokens += sc.tokens;
        st->stored += sc.stored;
        st->calls += sc.n_calls;
    }
    free(sr.tok), free(sr.seqs), free(sr.out_pos);
    prefix_sched_free(&sc);
    return rc;
}
