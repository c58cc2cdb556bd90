// eval.c: request building (context/continuation split, BOS, left truncation), packing of
// items into forward batches and binary64 option scoring (spec/tasks.md section 1). Every
// value of an item depends on that item's tokens and logits rows only, so batching and
// threads cannot change results.
#include "eval/eval.h"

#include "base/pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "results/metrics.h"

// ---- request building ----

// lm-eval moves the context's trailing whitespace to the front of the continuation
// (Python str.rstrip(); we strip the ASCII whitespace set, the only kind prompts end in).
static size_t rstrip_len(const char *s, size_t n) {
    while (n > 0) {
        char c = s[n - 1];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') n--;
        else break;
    }
    return n;
}

// A tokenizer callback and its state.
struct encoder {
    eval_encode_fn fn;
    void *user;
};

static int encode_special(const struct eval_plan_opts *o, struct encoder enc, const char *text, size_t len,
                          int32_t **ids, int *n, struct err *e) {
    int32_t *raw = NULL;
    int nr = 0;
    int rc = enc.fn(enc.user, text, len, &raw, &nr, e);
    if (rc) return rc;
    if (!o->add_bos) { *ids = raw; *n = nr; return 0; }
    int32_t *r = malloc(sizeof *r * (size_t)(nr + 1));
    if (!r) { free(raw); return err_set(e, ERR_NOMEM, "eval: out of memory"); }
    r[0] = o->bos_id;
    if (nr) memcpy(r + 1, raw, sizeof *r * (size_t)nr);
    free(raw);
    *ids = r;
    *n = nr + 1;
    return 0;
}

int eval_request_tokens(const char *context, const char *choice, const struct eval_plan_opts *o,
                        eval_encode_fn enc, void *enc_user, struct eval_req_tokens *out, struct err *e) {
    memset(out, 0, sizeof *out);
    int32_t **inp = &out->inp, **cont = &out->cont;
    int *n_inp = &out->n_inp, *n_cont = &out->n_cont, *truncated = &out->truncated;
    const struct encoder en = {enc, enc_user};
    const char *delim = o->delim ? o->delim : " ";
    size_t lc = strlen(context), ld = strlen(delim), lch = strlen(choice);
    size_t keep = rstrip_len(context, lc);
    // whole = context[:keep] + (context[keep:] + delim + choice)
    char *whole = malloc(lc + ld + lch + 1);
    if (!whole) return err_set(e, ERR_NOMEM, "eval: out of memory");
    memcpy(whole, context, lc);
    memcpy(whole + lc, delim, ld);
    memcpy(whole + lc + ld, choice, lch);
    whole[lc + ld + lch] = 0;
    int32_t *ctx_ids = NULL, *all = NULL, *cids = NULL;
    int nctx = 0, nall = 0, rc = 0;
    if (lc == 0) {
        // Empty context (lm-eval tests the context before moving whitespace): the prefix token, continuation encoded alone (no special tokens).
        int prefix = o->bos_id >= 0 ? o->bos_id : o->eos_id;
        if (prefix < 0) { rc = err_set(e, ERR_UNSUPPORTED, "eval: empty context and the tokenizer has neither BOS nor EOS"); goto done; }
        rc = enc(enc_user, whole, lc + ld + lch, &cids, n_cont, e);
        if (rc) goto done;
        nall = 1 + *n_cont;
        all = malloc(sizeof *all * (size_t)nall);
        if (!all) { rc = err_set(e, ERR_NOMEM, "eval: out of memory"); goto done; }
        all[0] = prefix;
        if (*n_cont) memcpy(all + 1, cids, sizeof *all * (size_t)*n_cont);
        nctx = 1;
    } else {
        rc = encode_special(o, en, whole, lc + ld + lch, &all, &nall, e);
        if (rc) goto done;
        rc = encode_special(o, en, context, keep, &ctx_ids, &nctx, e);
        if (rc) goto done;
        *n_cont = nall > nctx ? nall - nctx : 0;
    }
    if (*n_cont <= 0) { rc = err_set(e, ERR_FORMAT, "eval: continuation '%s%s' gives no tokens after the context", delim, choice); goto done; }
    if (*n_cont > o->window) {
        rc = err_set(e, ERR_RANGE, "eval: continuation has %d tokens, more than the context window %d", *n_cont, o->window);
        goto done;
    }
    *cont = malloc(sizeof **cont * (size_t)*n_cont);
    if (!*cont) { rc = err_set(e, ERR_NOMEM, "eval: out of memory"); goto done; }
    memcpy(*cont, all + (nall - *n_cont), sizeof **cont * (size_t)*n_cont);
    // input = (context + continuation)[-(window + 1):][:-1]
    int start = nall - (o->window + 1);
    if (start > 0) *truncated = 1; else start = 0;
    *n_inp = nall - 1 - start;
    if (*n_inp <= 0) { rc = err_set(e, ERR_FORMAT, "eval: the model input is empty (whitespace-only context without BOS)"); goto done; }
    *inp = malloc(sizeof **inp * (size_t)(*n_inp > 0 ? *n_inp : 1));
    if (!*inp) { rc = err_set(e, ERR_NOMEM, "eval: out of memory"); goto done; }
    memcpy(*inp, all + start, sizeof **inp * (size_t)*n_inp);
done:
    if (rc) { free(*cont); *cont = NULL; free(*inp); *inp = NULL; *n_inp = *n_cont = 0; }
    free(whole); free(ctx_ids); free(all); free(cids);
    return rc;
}

// Per-item build result before it is laid out in the plan.
struct item_build {
    int n_choices;
    int32_t **inp, **cont;
    int *n_inp, *n_cont, *n_chars, truncated;
    int rc;
    struct err err;
};

static void item_build_free(struct item_build *b) {
    for (int c = 0; c < b->n_choices; c++) {
        if (b->inp) free(b->inp[c]);
        if (b->cont) free(b->cont[c]);
    }
    free(b->inp); free(b->cont); free(b->n_inp); free(b->n_cont); free(b->n_chars);
    memset(b, 0, sizeof *b);
}

static int build_item(struct item_build *b, const struct eval_item *it, const struct eval_plan_opts *o,
                      eval_encode_fn enc, void *user) {
    int n = it->n_choices;
    b->n_choices = n;
    b->inp = calloc((size_t)n, sizeof *b->inp);
    b->cont = calloc((size_t)n, sizeof *b->cont);
    b->n_inp = calloc((size_t)n, sizeof(int));
    b->n_cont = calloc((size_t)n, sizeof(int));
    b->n_chars = calloc((size_t)n, sizeof(int));
    if (!b->inp || !b->cont || !b->n_inp || !b->n_cont || !b->n_chars)
        return err_set(&b->err, ERR_NOMEM, "eval: out of memory");
    for (int c = 0; c < n; c++) {
        struct eval_req_tokens rt;
        int rc = eval_request_tokens(it->context ? it->context : "", it->choices[c], o, enc, user, &rt, &b->err);
        if (rc) return err_prefix(&b->err, "item '%s' choice %d", it->id ? it->id : "?", c);
        b->inp[c] = rt.inp, b->n_inp[c] = rt.n_inp, b->cont[c] = rt.cont, b->n_cont[c] = rt.n_cont;
        b->truncated += rt.truncated;
        const char *ch = it->choices[c];
        b->n_chars[c] = (int)utf8_count(ch, strlen(ch));
    }
    return 0;
}

void eval_plan_free(struct eval_plan *p) {
    if (!p) return;
    if (p->req)
        for (int r = 0; r < p->n_req; r++) { free(p->req[r].cont); free(p->req[r].row); }
    if (p->seq)
        for (int s = 0; s < p->n_seq; s++) { free(p->seq[s].tok); free(p->seq[s].pos); }
    free(p->req); free(p->seq); free(p->item_req); free(p->item_seq); free(p->gold);
    memset(p, 0, sizeof *p);
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

// Tokenization of items in parallel (encode functions are thread-safe): one task per item.
struct build_job {
    struct item_build *ib;
    const struct eval_item *items;
    const struct eval_plan_opts *o;
    eval_encode_fn enc;
    void *enc_user;
};
static void build_task(void *p, int i, int slot) {
    (void)slot;
    const struct build_job *j = p;
    if (j->items[i].n_choices <= 0) {
        j->ib[i].rc = err_set(&j->ib[i].err, ERR_FORMAT, "eval: item '%s' has no choices",
                              j->items[i].id ? j->items[i].id : "?");
        return;
    }
    j->ib[i].rc = build_item(&j->ib[i], &j->items[i], j->o, j->enc, j->enc_user);
}

int eval_plan_build(struct eval_plan *p, const struct eval_item *items, int n_items,
                    const struct eval_plan_opts *o, eval_encode_fn enc, void *enc_user,
                    struct err *e) {
    memset(p, 0, sizeof *p);
    if (o->window <= 0) return err_set(e, ERR_RANGE, "eval: context window %d", o->window);
    struct item_build *ib = calloc((size_t)(n_items > 0 ? n_items : 1), sizeof *ib);
    if (!ib) return err_set(e, ERR_NOMEM, "eval: out of memory");
    struct build_job job = {ib, items, o, enc, enc_user};
    pool_for(n_items, build_task, &job, o->n_threads);
    int rc = 0;
    for (int i = 0; i < n_items && !rc; i++)
        if (ib[i].rc) { rc = ib[i].rc; if (e) *e = ib[i].err; }
    if (rc) goto done;
    int64_t n_req64 = 0;
    for (int i = 0; i < n_items; i++) n_req64 += ib[i].n_choices;
    if (n_req64 > INT32_MAX) { rc = err_set(e, ERR_RANGE, "eval: %lld requests exceed %d", (long long)n_req64, INT32_MAX); goto done; }
    const int n_req = (int)n_req64;
    p->n_items = n_items;
    p->item_req = calloc((size_t)n_items + 1, sizeof(int));
    p->item_seq = calloc((size_t)n_items + 1, sizeof(int));
    p->gold = calloc((size_t)n_items + 1, sizeof(int));
    p->req = calloc((size_t)(n_req > 0 ? n_req : 1), sizeof *p->req);
    p->seq = calloc((size_t)(n_req > 0 ? n_req : 1), sizeof *p->seq); // at most one per request
    if (!p->item_req || !p->item_seq || !p->gold || !p->req || !p->seq) { rc = err_set(e, ERR_NOMEM, "eval: out of memory"); goto done; }
    int *tmp_pos = NULL;
    size_t tmp_cap = 0;
    for (int i = 0; i < n_items; i++) {
        struct item_build *b = &ib[i];
        p->item_req[i] = p->n_req;
        p->item_seq[i] = p->n_seq;
        p->gold[i] = items[i].gold;
        p->n_truncated += b->truncated;
        int s_first = p->n_seq;
        for (int c = 0; c < b->n_choices; c++) {
            // dedupe identical inputs within the item
            int s = -1;
            for (int k = s_first; k < p->n_seq; k++)
                if (p->seq[k].n == b->n_inp[c] && !memcmp(p->seq[k].tok, b->inp[c], sizeof(int32_t) * (size_t)b->n_inp[c])) { s = k; break; }
            if (s < 0) {
                s = p->n_seq++;
                p->seq[s].tok = b->inp[c];
                p->seq[s].n = b->n_inp[c];
                b->inp[c] = NULL;
                p->n_tokens += p->seq[s].n;
                if (p->seq[s].n > p->max_seq_len) p->max_seq_len = p->seq[s].n;
            }
            struct eval_req *r = &p->req[p->n_req++];
            r->seq = s;
            r->n_cont = b->n_cont[c];
            r->cont = b->cont[c];
            b->cont[c] = NULL;
            r->n_chars = b->n_chars[c];
            r->row = malloc(sizeof(int) * (size_t)r->n_cont);
            if (!r->row) { rc = err_set(e, ERR_NOMEM, "eval: out of memory"); break; }
        }
        if (rc) break;
        int64_t it_tok = 0;
        for (int s = s_first; s < p->n_seq; s++) it_tok += p->seq[s].n;
        if (it_tok > p->max_item_tokens) p->max_item_tokens = it_tok > INT32_MAX ? INT32_MAX : (int)it_tok;
        // scored positions of each sequence: union of its requests' positions
        for (int s = s_first; s < p->n_seq && !rc; s++) {
            size_t np = 0;
            for (int r = p->item_req[i]; r < p->n_req; r++) {
                if (p->req[r].seq != s) continue;
                if (np + (size_t)p->req[r].n_cont > tmp_cap) {
                    tmp_cap = (np + (size_t)p->req[r].n_cont) * 2;
                    int *t = realloc(tmp_pos, tmp_cap * sizeof *t);
                    if (!t) { rc = err_set(e, ERR_NOMEM, "eval: out of memory"); break; }
                    tmp_pos = t;
                }
                for (int k = 0; k < p->req[r].n_cont; k++) tmp_pos[np++] = p->seq[s].n - p->req[r].n_cont + k;
            }
            if (rc) break;
            qsort(tmp_pos, np, sizeof *tmp_pos, cmp_int);
            size_t u = 0;
            for (size_t k = 0; k < np; k++)
                if (u == 0 || tmp_pos[k] != tmp_pos[u - 1]) tmp_pos[u++] = tmp_pos[k];
            struct eval_seq *sq = &p->seq[s];
            if (u > (size_t)(INT32_MAX - p->n_rows)) { // the rows of all items are numbered in an int
                rc = err_set(e, ERR_RANGE, "eval: item '%s': more than %d scored positions in the task", items[i].id, INT32_MAX);
                break;
            }
            sq->pos = malloc(sizeof(int) * (u ? u : 1));
            if (!sq->pos) { rc = err_set(e, ERR_NOMEM, "eval: out of memory"); break; }
            memcpy(sq->pos, tmp_pos, sizeof(int) * u);
            sq->n_rows = (int)u;
            sq->row0 = p->n_rows;
            p->n_rows += (int)u;
        }
        if (rc) break;
        int it_rows = p->n_rows - p->seq[s_first].row0;
        if (it_rows > p->max_item_rows) p->max_item_rows = it_rows;
        for (int r = p->item_req[i]; r < p->n_req; r++) {
            struct eval_seq *sq = &p->seq[p->req[r].seq];
            for (int k = 0; k < p->req[r].n_cont; k++) {
                int pos = sq->n - p->req[r].n_cont + k, lo = 0, hi = sq->n_rows - 1;
                while (lo < hi) { int mid = (lo + hi) / 2; if (sq->pos[mid] < pos) lo = mid + 1; else hi = mid; }
                p->req[r].row[k] = sq->row0 + lo;
            }
        }
    }
    free(tmp_pos);
    if (!rc) { p->item_req[n_items] = p->n_req; p->item_seq[n_items] = p->n_seq; }
done:
    for (int i = 0; i < n_items; i++) item_build_free(&ib[i]);
    free(ib);
    if (rc) eval_plan_free(p);
    return rc;
}

// One perplexity window: model input [t0] + rest[0, m-1), logits rows at positions [r0, r1),
// predicting the targets tg[0, r1 - r0).
struct ppl_win {
    int32_t t0;
    const int32_t *rest, *tg;
    int m, r0, r1;
};

static int ppl_window(struct eval_plan *p, int k, struct ppl_win w) {
    struct eval_seq *s = &p->seq[k];
    struct eval_req *r = &p->req[k];
    const int m = w.m, nr = w.r1 - w.r0;
    p->item_req[k] = p->item_seq[k] = k;
    s->tok = malloc(sizeof(int32_t) * (size_t)m);
    s->pos = malloc(sizeof(int) * (size_t)nr);
    r->cont = malloc(sizeof(int32_t) * (size_t)nr);
    r->row = malloc(sizeof(int) * (size_t)nr);
    if (!s->tok || !s->pos || !r->cont || !r->row) return -1;
    s->tok[0] = w.t0;
    if (m > 1) memcpy(s->tok + 1, w.rest, sizeof(int32_t) * (size_t)(m - 1));
    memcpy(r->cont, w.tg, sizeof(int32_t) * (size_t)nr);
    s->n = m;
    s->n_rows = r->n_cont = nr;
    s->row0 = p->n_rows;
    for (int j = 0; j < nr; j++) { s->pos[j] = w.r0 + j; r->row[j] = p->n_rows + j; }
    p->n_rows += nr;
    r->seq = k;
    p->n_tokens += m;
    if (m > p->max_seq_len) p->max_seq_len = p->max_item_tokens = m;
    if (nr > p->max_item_rows) p->max_item_rows = nr;
    return 0;
}

static int ppl_alloc(struct eval_plan *p, int nw) {
    p->n_items = p->n_req = p->n_seq = nw;
    p->item_req = calloc((size_t)nw + 1, sizeof(int));
    p->item_seq = calloc((size_t)nw + 1, sizeof(int));
    p->gold = calloc((size_t)nw + 1, sizeof(int));
    p->req = calloc((size_t)nw, sizeof *p->req);
    p->seq = calloc((size_t)nw, sizeof *p->seq);
    if (!p->item_req || !p->item_seq || !p->gold || !p->req || !p->seq) return -1;
    p->item_req[nw] = p->item_seq[nw] = nw;
    return 0;
}

int eval_plan_build_ppl(struct eval_plan *p, const int32_t *tok, int n, int ctx, int prefix_id, int max_windows,
                        struct err *e) {
    memset(p, 0, sizeof *p);
    if (ctx < 1 || n < 1 || prefix_id < 0)
        return err_set(e, ERR_RANGE, "eval: perplexity windows: ctx %d, %d tokens, prefix token %d", ctx, n, prefix_id);
    int nw = (int)(((int64_t)n + ctx - 1) / ctx);
    if (max_windows > 0 && nw > max_windows) nw = max_windows;
    if (ppl_alloc(p, nw)) goto oom;
    // window k's input is [prefix or tok[start-1]] + tok[start, end-1); it predicts tok[start, end)
    for (int k = 0; k < nw; k++) {
        const int start = k * ctx, end = start + ctx < n ? start + ctx : n, m = end - start;
        const struct ppl_win w = {.t0 = k == 0 ? prefix_id : tok[start - 1], .rest = tok + start, .tg = tok + start, .m = m, .r1 = m};
        if (ppl_window(p, k, w)) goto oom;
    }
    return 0;
oom:
    eval_plan_free(p);
    return err_set(e, ERR_NOMEM, "eval: out of memory for %d perplexity windows", nw);
}

int eval_plan_build_ppl_half(struct eval_plan *p, const int32_t *tok, int n, int ctx, int bos_id, int max_windows,
                             struct err *e) {
    memset(p, 0, sizeof *p);
    const int off = bos_id >= 0; // L[i] = tok[i - off] for i >= off
    const int64_t len = (int64_t)n + off;
    if (ctx < 4 || n < 1 || len < ctx)
        return err_set(e, ERR_RANGE, "eval: perplexity windows (second half): ctx %d (needs >= 4), %lld tokens (needs >= %d)", ctx,
                       (long long)len, ctx);
    int nw = (int)(len / ctx);
    if (max_windows > 0 && nw > max_windows) nw = max_windows;
    if (ppl_alloc(p, nw)) goto oom;
    const int first = ctx / 2;
    for (int k = 0; k < nw; k++) {
        const int64_t w0 = (int64_t)k * ctx - off; // L[k*ctx + j] = tok[w0 + j], j >= 1 (and j = 0 without BOS)
        const struct ppl_win pw = {.t0 = off ? bos_id : tok[w0], .rest = tok + w0 + 1, .tg = tok + w0 + first + 1, .m = ctx,
                                   .r0 = first, .r1 = ctx - 1};
        if (ppl_window(p, k, pw)) goto oom;
    }
    return 0;
oom:
    eval_plan_free(p);
    return err_set(e, ERR_NOMEM, "eval: out of memory for %d perplexity windows", nw);
}

// ---- batches ----

static int grow(void **buf, int *cap, int need, size_t elt) {
    if (need <= *cap) return 0;
    int nc = *cap ? *cap : 256;
    while (nc < need) nc *= 2;
    void *t = realloc(*buf, (size_t)nc * elt);
    if (!t) return -1;
    *buf = t;
    *cap = nc;
    return 0;
}

int eval_batch_next(struct eval_batch *b, const struct eval_plan *p, int item0, int item_end, int max_tokens,
                    int max_out, struct err *e) {
    b->item0 = b->item1 = item0;
    b->n_seq = b->n_tok = b->n_out = 0;
    if (item_end > p->n_items) item_end = p->n_items;
    if (item0 >= item_end) return 0;
    b->row_base = p->seq[p->item_seq[item0]].row0;
    int i = item0;
    for (; i < item_end; i++) {
        int nt = 0, no = 0;
        for (int s = p->item_seq[i]; s < p->item_seq[i + 1]; s++) { nt += p->seq[s].n; no += p->seq[s].n_rows; }
        if (i > item0 && (b->n_tok + nt > max_tokens || b->n_out + no > max_out)) break;
        if (grow((void **)&b->tok, &b->cap_tok, b->n_tok + nt, sizeof *b->tok) ||
            grow((void **)&b->seq_len, &b->cap_seq, b->n_seq + (p->item_seq[i + 1] - p->item_seq[i]), sizeof(int)) ||
            grow((void **)&b->out_pos, &b->cap_out, b->n_out + no, sizeof(int)))
            return err_set(e, ERR_NOMEM, "eval: out of memory for a batch of %d tokens", b->n_tok + nt);
        for (int s = p->item_seq[i]; s < p->item_seq[i + 1]; s++) {
            const struct eval_seq *sq = &p->seq[s];
            memcpy(b->tok + b->n_tok, sq->tok, sizeof(int32_t) * (size_t)sq->n);
            for (int k = 0; k < sq->n_rows; k++) b->out_pos[b->n_out++] = b->n_tok + sq->pos[k];
            b->seq_len[b->n_seq++] = sq->n;
            b->n_tok += sq->n;
        }
    }
    b->item1 = i;
    return 0;
}

void eval_batch_free(struct eval_batch *b) {
    if (!b) return;
    free(b->tok); free(b->seq_len); free(b->out_pos);
    memset(b, 0, sizeof *b);
}

// ---- scoring ----

double eval_logprob(const float *row, int vocab, int tok, int *is_max) {
    int am;
    double lse = metrics_lse_argmax(row, vocab, &am);
    if (is_max) *is_max = (am == tok);
    return (double)row[tok] - lse;
}

void eval_score_free(struct eval_score *s) {
    if (!s) return;
    free(s->ll); free(s->n_tok); free(s->n_chars); free(s->greedy); free(s->kl); free(s->generated);
    memset(s, 0, sizeof *s);
}

// Row statistics in parallel: log-sum-exp and argmax (score), or KL and top-1 agreement
// against the reference (compare); 8 rows per task, each row computed whole by one thread.
struct rows_job {
    const float *a, *b;
    const double *lse_a, *lse_b; // compare: the rows' metrics_lse, or NULL (computed)
    int vocab, n;
    double *val;
    int *idx, *same;
};
enum { ROWS_PER_TASK = 8 };
static void lse_task(void *p, int t, int slot) {
    (void)slot;
    const struct rows_job *j = p;
    for (int r = t * ROWS_PER_TASK; r < j->n && r < (t + 1) * ROWS_PER_TASK; r++)
        j->val[r] = metrics_lse_argmax(j->a + (size_t)r * j->vocab, j->vocab, &j->idx[r]);
}
static void kl_task(void *p, int t, int slot) {
    (void)slot;
    const struct rows_job *j = p;
    for (int r = t * ROWS_PER_TASK; r < j->n && r < (t + 1) * ROWS_PER_TASK; r++) {
        const float *a = j->a + (size_t)r * j->vocab, *c = j->b + (size_t)r * j->vocab;
        j->val[r] = j->lse_a && j->lse_b ? metrics_kl_logits_lse(a, j->lse_a[r], c, j->lse_b[r], j->vocab)
                                         : metrics_kl_logits(a, c, j->vocab);
        j->same[r] = metrics_argmax_f(a, j->vocab) == metrics_argmax_f(c, j->vocab);
    }
}

int eval_batch_score(struct eval_score *out, const struct eval_plan *p, const struct eval_batch *b,
                     struct eval_logits lg, int n_threads, struct err *e) {
    const float *logits = lg.v;
    const int vocab = lg.vocab;
    int n = b->item1 - b->item0, rc = 0;
    double *lse = malloc(sizeof *lse * (size_t)(b->n_out ? b->n_out : 1));
    int *amax = malloc(sizeof *amax * (size_t)(b->n_out ? b->n_out : 1));
    if (!lse || !amax) { free(lse); free(amax); return err_set(e, ERR_NOMEM, "eval: out of memory"); }
    struct rows_job rj = {.a = logits, .vocab = vocab, .n = b->n_out, .val = lse, .idx = amax};
    pool_for((b->n_out + ROWS_PER_TASK - 1) / ROWS_PER_TASK, lse_task, &rj, n_threads);
    if (lg.lse) memcpy(lg.lse, lse, sizeof *lse * (size_t)b->n_out);
    for (int i = 0; i < n && !rc; i++) {
        struct eval_score *s = &out[i];
        eval_score_free(s);
        int it = b->item0 + i, r0 = p->item_req[it], nc = p->item_req[it + 1] - r0;
        s->n_choices = nc;
        s->gold = p->gold[it];
        s->ll = malloc(sizeof *s->ll * (size_t)nc);
        s->n_tok = malloc(sizeof(int) * (size_t)nc);
        s->n_chars = malloc(sizeof(int) * (size_t)nc);
        s->greedy = malloc(sizeof(int) * (size_t)nc);
        if (!s->ll || !s->n_tok || !s->n_chars || !s->greedy) { rc = err_set(e, ERR_NOMEM, "eval: out of memory"); break; }
        double *norm = malloc(sizeof *norm * (size_t)nc);
        if (!norm) { rc = err_set(e, ERR_NOMEM, "eval: out of memory"); break; }
        for (int c = 0; c < nc; c++) {
            const struct eval_req *rq = &p->req[r0 + c];
            double ll = 0;
            int greedy = 1;
            for (int k = 0; k < rq->n_cont; k++) {
                int row = rq->row[k] - b->row_base, tok = rq->cont[k];
                if (tok < 0 || tok >= vocab) { rc = err_set(e, ERR_RANGE, "eval: token id %d outside the vocabulary (%d)", tok, vocab); break; }
                ll += (double)logits[(size_t)row * vocab + tok] - lse[row];
                greedy &= (amax[row] == tok);
            }
            s->ll[c] = ll;
            s->n_tok[c] = rq->n_cont;
            s->n_chars[c] = rq->n_chars;
            s->greedy[c] = greedy;
            // lm-eval divides by len(choice); a zero-length choice counts as one character
            norm[c] = ll / (double)(rq->n_chars > 0 ? rq->n_chars : 1);
        }
        s->pred = metrics_argmax(s->ll, nc);
        s->pred_norm = metrics_argmax(norm, nc);
        s->margin = metrics_margin(s->ll, nc);
        free(norm);
    }
    free(lse); free(amax);
    return rc;
}

int eval_batch_compare(struct eval_score *out, const struct eval_plan *p, const struct eval_batch *b,
                       struct eval_logit_pair lg, int n_threads, struct err *e) {
    int n = b->item1 - b->item0;
    double *kl = malloc(sizeof *kl * (size_t)(b->n_out ? b->n_out : 1));
    int *same = malloc(sizeof *same * (size_t)(b->n_out ? b->n_out : 1));
    if (!kl || !same) { free(kl); free(same); return err_set(e, ERR_NOMEM, "eval: out of memory"); }
    struct rows_job rj = {.a = lg.ref, .b = lg.q, .lse_a = lg.lse_ref, .lse_b = lg.lse_q, .vocab = lg.vocab,
                          .n = b->n_out, .val = kl, .same = same};
    pool_for((b->n_out + ROWS_PER_TASK - 1) / ROWS_PER_TASK, kl_task, &rj, n_threads);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        struct eval_score *s = &out[i];
        int it = b->item0 + i;
        int row0 = p->seq[p->item_seq[it]].row0 - b->row_base;
        int nr = 0;
        for (int k = p->item_seq[it]; k < p->item_seq[it + 1]; k++) nr += p->seq[k].n_rows;
        free(s->kl);
        s->kl = malloc(sizeof *s->kl * (size_t)(nr ? nr : 1));
        if (!s->kl) { rc = err_set(e, ERR_NOMEM, "eval: out of memory"); break; }
        s->n_kl = nr;
        s->top1_same = 0;
        for (int k = 0; k < nr; k++) { s->kl[k] = kl[row0 + k]; s->top1_same += same[row0 + k]; }
    }
    free(kl); free(same);
    return rc;
}
