// run_generate.c: tasks scored by greedy decoding (niah's generation form, paper Table 4).
// Each item's context - the tokens the likelihood form would feed before its first choice,
// lm-eval's split kept - is greedy-decoded for task_set.generate tokens under every mode
// (eval/generate.h, through the prefix cache unless --no-prefix-cache: the same tokens bit for
// bit; under one mode each context reuses the cached rows it shares with the previous item's
// sequence, as niah's depths share their haystack up to the needle). The item is correct when
// the decoded text contains the needle's number choices[gold]: pred = gold then; otherwise pred
// is the choice whose number appears first in the text, or, when none does, the first index
// other than gold (so accuracy, flips and per-cell tables read correct / not correct). The samples record the decoded text ("generated"); logliks are 0 (no
// option is scored), tok_lens the continuation lengths, is_greedy 1 for pred.
#include <stdlib.h>
#include <string.h>

#include "eval/generate.h"
#include "eval/run_internal.h"

// pred of the decoded text (see the header comment)
static int pred_of(const char *text, char *const *choices, int n, int gold) {
    if (strstr(text, choices[gold])) return gold;
    int best = -1;
    const char *at = NULL;
    for (int c = 0; c < n; c++) {
        const char *p = strstr(text, choices[c]);
        if (p && (!at || p < at)) at = p, best = c;
    }
    return best >= 0 ? best : gold == 0 ? 1 : 0;
}

// Item i of task t under mode m: decode, then its score.
static int gen_item(struct run *r, int t, int m, int i, struct gen_prev *prev, struct err *e) {
    const struct eval_plan *p = &r->plans[t];
    const struct task_item *it = &r->sets[t].items[r->item_lo[t] + i];
    const struct eval_seq *q = &p->seq[p->item_seq[i]];
    const int n_ctx = q->pos[0] + 1, max_new = r->sets[t].generate, nc = it->n_choices;
    int32_t out[64];
    int n_out = 0;
    struct gen_stats st = {0};
    if (max_new > 64) return err_set(e, ERR_INTERNAL, "generate: %d tokens", max_new);
    const struct cached_model g = {.m = r->model, .ctx = r->attn[m], .kv = r->kv};
    const struct gen_req rq = {.tok = q->tok, .n = n_ctx, .max_new = max_new, .eos_id = tok_eos_id(r->tok)};
    int rc = gen_greedy_after(&g, prev, &rq, out, &n_out, &st, e);
    if (rc) return err_prefix(e, "task %s, item '%s', mode %s", r->sets[t].name, it->id, r->o.modes[m]);
    struct run_mode_acc *a = &r->acc[m];
    a->cached.tokens += st.tokens;
    a->cached.calls += st.calls;
    a->cached.stored += st.stored;
    a->tokens_input += (int64_t)n_out * n_ctx + (int64_t)n_out * (n_out - 1) / 2; // a step recomputing all
    a->rows_scored += n_out;
    a->gen_items++, a->gen_tokens += n_out;
    a->prefill_s += st.prefill_s, a->decode_s += st.decode_s;
    // a long context takes minutes per mode: say where the run is (the batch's progress line comes after all modes)
    log_info("[%s] %s: context %d/%d (%d tokens): prefill and first token %.1fs, %d more tokens %.2fs", r->sets[t].name,
             r->o.modes[m], i + 1, p->n_items, n_ctx, st.prefill_s, n_out > 0 ? n_out - 1 : 0, st.decode_s);
    struct eval_score *s = &r->scores[i];
    eval_score_free(s);
    size_t len = 0;
    if ((rc = tok_decode(r->tok, out, n_out, &s->generated, &len, e))) return rc;
    s->n_choices = nc, s->gold = it->gold;
    s->ll = calloc((size_t)nc, sizeof *s->ll);
    s->n_tok = calloc((size_t)nc, sizeof *s->n_tok);
    s->n_chars = calloc((size_t)nc, sizeof *s->n_chars);
    s->greedy = calloc((size_t)nc, sizeof *s->greedy);
    if (!s->ll || !s->n_tok || !s->n_chars || !s->greedy) return err_set(e, ERR_NOMEM, "generate: out of memory");
    for (int c = 0; c < nc; c++) {
        const struct eval_req *rq = &p->req[p->item_req[i] + c];
        s->n_tok[c] = rq->n_cont, s->n_chars[c] = rq->n_chars;
    }
    s->pred = s->pred_norm = pred_of(s->generated, it->choices, nc, it->gold);
    s->greedy[s->pred] = 1;
    s->margin = 0;
    return 0;
}

int run_generate_batch(struct run *r, int t, struct err *e) {
    const struct eval_batch *b = &r->batch;
    const int n_modes = r->o.n_modes;
    int rc = 0;
    for (int m = 0; m < n_modes && !rc; m++) {
        const double tf = time_now();
        struct gen_prev prev = {0}; // the cache's rows belong to this mode from here on
        for (int i = b->item0; i < b->item1 && !rc; i++) rc = gen_item(r, t, m, i, &prev, e);
        gen_prev_free(&prev);
        r->acc[m].forward_s += time_now() - tf;
        if (!rc) run_count_calls(r, m);
        if (!rc) rc = run_write_samples(r, t, m, e);
    }
    return rc;
}
