// cached.c: runs a batch's prefix schedule (cached.h, prefix.h) on the model.
#include "eval/cached.h"

#include <stdlib.h>

#include "eval/prefix.h"

struct bufs {
    int32_t *tok;
    struct model_seq *seqs;
    int *out_pos;
};

// Forward call c: pieces [k0, k1) of the schedule.
static int run_call(struct model *m, struct model_kv *kv, const struct eval_plan *p, const struct prefix_sched *sc,
                    int k0, int k1, struct bufs *bf, float *logits, int vocab, struct err *e) {
    int n_tok = 0, n_out = 0, out_row = -1;
    for (int k = k0; k < k1; k++) {
        const struct prefix_piece *pc = &sc->pieces[k];
        const struct eval_seq *q = &p->seq[pc->seq];
        const int len = pc->end - pc->start;
        memcpy(bf->tok + n_tok, q->tok + pc->start, (size_t)len * sizeof(int32_t));
        bf->seqs[k - k0] = (struct model_seq){.n = len, .past = pc->past, .save_row = pc->save_row, .save_n = pc->save_n};
        if (pc->n_out) {
            if (out_row < 0) out_row = pc->out_row;
            else if (pc->out_row != out_row + n_out)
                return err_set(e, ERR_INTERNAL, "cached: scored rows of a call are not consecutive");
            for (int r = 0; r < q->n_rows; r++) bf->out_pos[n_out++] = n_tok + q->pos[r] - pc->start;
        }
        n_tok += len;
    }
    float *lg = n_out ? logits + (size_t)out_row * (size_t)vocab : NULL;
    return model_forward_kv(m, kv, bf->tok, bf->seqs, k1 - k0, bf->out_pos, n_out, lg, e);
}

int cached_forward(struct model *m, struct model_kv *kv, const struct eval_plan *p, const struct eval_batch *b,
                   float *logits, int vocab, struct cached_stats *st, struct err *e) {
    const int mt = model_get_opts(m)->max_tokens;
    struct prefix_sched sc;
    int rc = prefix_schedule(&sc, p, b->item0, b->item1, b->row_base, model_attn_align(m), model_kv_rows(kv), mt, e);
    if (rc) return rc;
    struct bufs bf = {malloc((size_t)mt * sizeof *bf.tok), malloc((size_t)mt * sizeof *bf.seqs),
                      malloc((size_t)mt * sizeof *bf.out_pos)};
    if (!bf.tok || !bf.seqs || !bf.out_pos) rc = err_set(e, ERR_NOMEM, "cached: out of memory");
    for (int k0 = 0; k0 < sc.n_pieces && !rc;) {
        int k1 = k0;
        while (k1 < sc.n_pieces && sc.pieces[k1].call == sc.pieces[k0].call) k1++;
        rc = run_call(m, kv, p, &sc, k0, k1, &bf, logits, vocab, e);
        k0 = k1;
    }
    if (!rc) {
        st->tokens += sc.tokens;
        st->stored += sc.stored;
        st->calls += sc.n_calls;
    }
    free(bf.tok), free(bf.seqs), free(bf.out_pos);
    prefix_sched_free(&sc);
    return rc;
}
