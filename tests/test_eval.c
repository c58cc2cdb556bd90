// test_eval.c: request building (context/continuation split on hand cases, trailing-space
// move, BOS, empty context, left truncation), batching/dedupe row mapping against a naive
// one-request-at-a-time scorer, and batch-size / thread-count independence (bit for bit).
// Uses a tiny synthetic tokenizer and a synthetic "model" whose logits row at position p is a
// hash of the sequence prefix [0..p], so the expected values are computed independently here.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"
#include "results/metrics.h"
#include "test.h"

#define VOCAB 512
#define BOS 1
#define EOS 2

// ---- synthetic tokenizer ----
// Left to right: "a " -> 400; " " + ASCII letter -> 256 + letter; any other byte -> its value.
static int toy_encode(void *user, const char *s, size_t n, int32_t **ids, int *nid, struct err *e) {
    (void)user;
    int32_t *r = malloc(sizeof *r * (n + 1));
    if (!r) return err_set(e, ERR_NOMEM, "oom");
    int k = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == 'a' && i + 1 < n && s[i + 1] == ' ') { r[k++] = 400; i += 2; }
        else if (c == ' ' && i + 1 < n && ((s[i + 1] | 32) >= 'a' && (s[i + 1] | 32) <= 'z')) { r[k++] = 256 + (unsigned char)s[i + 1]; i += 2; }
        else { r[k++] = c; i++; }
    }
    *ids = r;
    *nid = k;
    return 0;
}

// ---- synthetic model ----
static uint64_t mix(uint64_t h) {
    h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ULL; h ^= h >> 33;
    return h;
}
static void toy_row(float *row, const int32_t *tok, int p) {
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i <= p; i++) h = mix(h ^ (uint64_t)(tok[i] + 7) * 0x9E3779B97F4A7C15ULL);
    for (int j = 0; j < VOCAB; j++) {
        uint64_t x = mix(h + (uint64_t)j);
        row[j] = (float)((double)(x >> 11) / 9007199254740992.0 * 8.0 - 4.0);
    }
}
static int forward_calls;
static int toy_forward(void *user, const int32_t *tok, const int *seq_len, int n_seq, const int *out_pos,
                       int n_out, float *logits, struct err *e) {
    (void)user; (void)e;
    forward_calls++;
    int off = 0, o = 0;
    for (int s = 0; s < n_seq; s++) {
        for (; o < n_out && out_pos[o] < off + seq_len[s]; o++) toy_row(logits + (size_t)o * VOCAB, tok + off, out_pos[o] - off);
        off += seq_len[s];
    }
    return o == n_out ? 0 : -1;
}

// eval_request_tokens unpacked into the five outputs the cases below compare
static int request_tokens(const char *ctx, const char *choice, const struct eval_plan_opts *o, int32_t **inp, int *ni,
                          int32_t **cont, int *nc, int *tr, struct err *e) {
    struct eval_req_tokens rt;
    int rc = eval_request_tokens(ctx, choice, o, toy_encode, NULL, &rt, e);
    *inp = rt.inp, *ni = rt.n_inp, *cont = rt.cont, *nc = rt.n_cont, *tr = rt.truncated;
    return rc;
}

static int eq_ids(const int32_t *a, int na, const int32_t *b, int nb) {
    return na == nb && (na == 0 || !memcmp(a, b, sizeof *a * (size_t)na));
}

static void split_case(const char *ctx, const char *choice, int add_bos, int window, const int32_t *want_inp,
                       int n_want_inp, const int32_t *want_cont, int n_want_cont, int want_trunc) {
    struct eval_plan_opts o = {.delim = " ", .add_bos = add_bos, .bos_id = BOS, .eos_id = EOS, .window = window};
    int32_t *inp, *cont;
    int ni, nc, tr;
    struct err e = {0};
    int rc = request_tokens(ctx, choice, &o, &inp, &ni, &cont, &nc, &tr, &e);
    CHECK(rc == 0, "split '%s'+'%s': %s", ctx, choice, e.msg);
    if (rc) return;
    CHECK(eq_ids(inp, ni, want_inp, n_want_inp), "input of '%s'+'%s' (%d tokens, want %d)", ctx, choice, ni, n_want_inp);
    CHECK(eq_ids(cont, nc, want_cont, n_want_cont), "continuation of '%s'+'%s' (%d tokens, want %d, first %d)", ctx, choice, nc, n_want_cont, nc ? cont[0] : -1);
    CHECK(tr == want_trunc, "truncated flag %d want %d", tr, want_trunc);
    free(inp); free(cont);
}

static void test_split(void) {
    // plain: " B" is one token, input = context tokens
    split_case("Q:\nAnswer:", "B", 0, 100, (int32_t[]){'Q', ':', '\n', 'A', 'n', 's', 'w', 'e', 'r', ':'}, 10,
               (int32_t[]){256 + 'B'}, 1, 0);
    // BOS prepended to the whole string (context tokens include it)
    split_case("x:", "B", 1, 100, (int32_t[]){BOS, 'x', ':'}, 3, (int32_t[]){256 + 'B'}, 1, 0);
    // trailing whitespace moves to the continuation: "x: " + "B" -> "x:" + "  B"
    split_case("x: ", "B", 0, 100, (int32_t[]){'x', ':', ' '}, 3, (int32_t[]){' ', 256 + 'B'}, 2, 0);
    // the split is at the context's token count in the WHOLE string's tokens: "la b" ->
    // l, "a ", b; context "la" has 2 tokens, so the continuation is [b], not [" b"]
    split_case("la", "b", 0, 100, (int32_t[]){'l', 400}, 2, (int32_t[]){'b'}, 1, 0);
    // multi-token continuation: input = whole minus last token
    split_case("x", "yes no", 0, 100, (int32_t[]){'x', 256 + 'y', 'e', 's', 256 + 'n'}, 5,
               (int32_t[]){256 + 'y', 'e', 's', 256 + 'n', 'o'}, 5, 0);
    // empty context: [BOS] + continuation encoded alone
    split_case("", "B", 0, 100, (int32_t[]){BOS}, 1, (int32_t[]){256 + 'B'}, 1, 0);
    // whitespace-only context is not "empty": it moves into the continuation, the context
    // tokens are just the BOS
    split_case(" ", "B", 1, 100, (int32_t[]){BOS, ' '}, 2, (int32_t[]){' ', 256 + 'B'}, 2, 0);
    // left truncation: whole = x y z w " B" (5 tokens), window 3 -> keep last 4, drop last
    split_case("xyzw", "B", 0, 3, (int32_t[]){'y', 'z', 'w'}, 3, (int32_t[]){256 + 'B'}, 1, 1);
    split_case("xyzw", "B", 0, 4, (int32_t[]){'x', 'y', 'z', 'w'}, 4, (int32_t[]){256 + 'B'}, 1, 0);
    // errors: continuation longer than the window
    struct eval_plan_opts o = {.delim = " ", .bos_id = BOS, .eos_id = EOS, .window = 2};
    int32_t *inp, *cont;
    int ni, nc, tr;
    struct err e = {0};
    CHECK(request_tokens("x", "yes no", &o, &inp, &ni, &cont, &nc, &tr, &e) == ERR_RANGE,
          "continuation longer than the window must fail");
    CHECK(strstr(e.msg, "window") != NULL, "message: %s", e.msg);
}

// ---- items ----
#define N_ITEMS 40
static char *choice_store[N_ITEMS][6];
static char ctx_store[N_ITEMS][200];
static struct eval_item items[N_ITEMS];

static void make_items(void) {
    static const char *words[] = {"yes", "no", "maybe", "blue sky", "A", "B", "C", "D", "cat", "a dog", "über"};
    for (int i = 0; i < N_ITEMS; i++) {
        int kind = i % 3;
        int n = kind == 0 ? 4 : 2 + (i % 4);
        int len = snprintf(ctx_store[i], sizeof ctx_store[i], "Question %d: what is %d?%s", i, i * 7,
                           kind == 0 ? "\nAnswer:" : (i % 5 == 1 ? " " : ""));
        (void)len;
        if (i == 7) ctx_store[i][0] = 0; // one empty context
        for (int c = 0; c < n; c++) {
            const char *w = kind == 0 ? words[4 + c] : words[(i + c * 3) % 11];
            char buf[64];
            snprintf(buf, sizeof buf, "%s%s", w, kind == 0 ? "" : (c % 2 ? " x" : ""));
            choice_store[i][c] = strdup(buf);
        }
        items[i] = (struct eval_item){.id = "t", .context = ctx_store[i], .n_choices = n,
                                       .choices = choice_store[i], .gold = i % n};
    }
}

// naive: one request per forward, full logits of every position, direct binary64 loglik
static double naive_ll(const struct eval_item *it, int c, const struct eval_plan_opts *o, int *greedy) {
    int32_t *inp, *cont;
    int ni, nc, tr;
    struct err e = {0};
    if (request_tokens(it->context, it->choices[c], o, &inp, &ni, &cont, &nc, &tr, &e)) return NAN;
    float *row = malloc(sizeof *row * VOCAB);
    double ll = 0;
    *greedy = 1;
    for (int k = 0; k < nc; k++) {
        int p = ni - nc + k;
        toy_row(row, inp, p);
        double m = -INFINITY, s = 0;
        int am = 0;
        for (int j = 0; j < VOCAB; j++) if (row[j] > m) { m = row[j]; am = j; }
        for (int j = 0; j < VOCAB; j++) s += exp((double)row[j] - m);
        ll += (double)row[cont[k]] - (m + log(s));
        if (am != cont[k]) *greedy = 0;
    }
    free(row); free(inp); free(cont);
    return ll;
}

static int run_all(struct eval_score *sc, const struct eval_plan *p, int max_tokens, int max_out, int threads,
                   int *n_batches) {
    struct eval_batch b = {0};
    struct err e = {0};
    int item = 0;
    *n_batches = 0;
    float *logits = NULL, *ref = NULL;
    while (item < p->n_items) {
        if (eval_batch_next(&b, p, item, p->n_items, max_tokens, max_out, &e)) return -1;
        logits = realloc(logits, sizeof *logits * (size_t)b.n_out * VOCAB);
        ref = realloc(ref, sizeof *ref * (size_t)b.n_out * VOCAB);
        if (toy_forward(NULL, b.tok, b.seq_len, b.n_seq, b.out_pos, b.n_out, logits, &e)) return -1;
        double *lse = malloc(sizeof *lse * (size_t)b.n_out), *lse_ref = malloc(sizeof *lse * (size_t)b.n_out);
        if (!lse || !lse_ref) return -1;
        if (eval_batch_score(sc + item, p, &b, (struct eval_logits){logits, VOCAB, lse}, threads, &e)) return -1;
        // "reference" = logits shifted by a constant: KL must be 0 and top-1 the same
        for (size_t k = 0; k < (size_t)b.n_out * VOCAB; k++) ref[k] = logits[k] + 1.0f;
        for (int r = 0; r < b.n_out; r++) {
            lse_ref[r] = metrics_lse(ref + (size_t)r * VOCAB, VOCAB);
            CHECK(lse[r] == metrics_lse(logits + (size_t)r * VOCAB, VOCAB), "lse row %d is metrics_lse", r);
        }
        // KL from eval_batch_score's lse is bit for bit KL computed afresh (the reference is
        // compared with the mode here, so the KL is not 0 where the shift's rounding shows)
        if (eval_batch_compare(sc + item, p, &b, (struct eval_logit_pair){logits, ref, VOCAB, NULL, NULL}, threads, &e)) return -1;
        int n_it = b.item1 - b.item0, same = 1;
        double *kl0 = NULL;
        size_t n_kl = 0;
        for (int i = 0; i < n_it; i++) {
            kl0 = realloc(kl0, sizeof *kl0 * (n_kl + (size_t)sc[item + i].n_kl + 1));
            memcpy(kl0 + n_kl, sc[item + i].kl, sizeof *kl0 * (size_t)sc[item + i].n_kl);
            n_kl += (size_t)sc[item + i].n_kl;
        }
        if (eval_batch_compare(sc + item, p, &b, (struct eval_logit_pair){logits, ref, VOCAB, lse, lse_ref}, threads, &e)) return -1;
        for (int i = 0, k = 0; i < n_it; i++)
            for (int j = 0; j < sc[item + i].n_kl; j++, k++) same &= memcmp(&kl0[k], &sc[item + i].kl[j], sizeof *kl0) == 0;
        CHECK(same, "batch at item %d: KL with the scored rows' lse equals KL computed afresh, bit for bit", item);
        free(kl0);
        if (eval_batch_compare(sc + item, p, &b, (struct eval_logit_pair){ref, logits, VOCAB, lse_ref, lse}, threads, &e)) return -1;
        free(lse); free(lse_ref);
        item = b.item1;
        (*n_batches)++;
    }
    free(logits); free(ref);
    eval_batch_free(&b);
    return 0;
}

static void test_scoring(void) {
    make_items();
    struct eval_plan_opts o = {.delim = " ", .add_bos = 1, .bos_id = BOS, .eos_id = EOS, .window = 20, .n_threads = 2};
    struct eval_plan p;
    struct err e = {0};
    int rc = eval_plan_build(&p, items, N_ITEMS, &o, toy_encode, NULL, &e);
    CHECK(rc == 0, "plan: %s", e.msg);
    if (rc) return;
    CHECK(p.n_truncated > 0, "window 20 truncates some requests (%d)", p.n_truncated);
    // MMLU-like items (kind 0): 4 single-token choices -> one sequence, one row
    CHECK(p.item_seq[1] - p.item_seq[0] == 1, "item 0: %d sequences", p.item_seq[1] - p.item_seq[0]);
    CHECK(p.seq[p.item_seq[0]].n_rows == 1, "item 0: %d rows", p.seq[p.item_seq[0]].n_rows);

    int mr = 0, mt = 0;
    for (int i = 0; i < N_ITEMS; i++) {
        int r = 0, tk = 0;
        for (int s = p.item_seq[i]; s < p.item_seq[i + 1]; s++) { r += p.seq[s].n_rows; tk += p.seq[s].n; }
        if (r > mr) mr = r;
        if (tk > mt) mt = tk;
    }
    CHECK(p.max_item_rows == mr && p.max_item_tokens == mt, "max item rows %d/%d tokens %d/%d", p.max_item_rows, mr, p.max_item_tokens, mt);
    struct eval_score *a = calloc(N_ITEMS, sizeof *a), *b = calloc(N_ITEMS, sizeof *b), *c = calloc(N_ITEMS, sizeof *c);
    int nb1, nb2, nb3;
    CHECK(run_all(a, &p, 1, 1, 1, &nb1) == 0, "run 1");
    CHECK(run_all(b, &p, 100000, 100000, 2, &nb2) == 0, "run 2");
    CHECK(run_all(c, &p, 150, 12, 3, &nb3) == 0, "run 3");
    CHECK(nb1 == N_ITEMS && nb2 == 1 && nb3 > 1 && nb3 < N_ITEMS, "batches %d %d %d", nb1, nb2, nb3);
    int bad = 0, bad_naive = 0, bad_greedy = 0, bad_kl = 0;
    for (int i = 0; i < N_ITEMS; i++) {
        for (int k = 0; k < a[i].n_choices; k++) {
            if (memcmp(&a[i].ll[k], &b[i].ll[k], sizeof(double)) || memcmp(&a[i].ll[k], &c[i].ll[k], sizeof(double))) bad++;
            int g = -1;
            double ll = naive_ll(&items[i], k, &o, &g);
            if (fabs(ll - a[i].ll[k]) > 1e-12 * fabs(ll)) bad_naive++;
            if (g != a[i].greedy[k]) bad_greedy++;
        }
        if (a[i].pred != b[i].pred || a[i].pred_norm != c[i].pred_norm || memcmp(&a[i].margin, &c[i].margin, sizeof(double))) bad++;
        for (int k = 0; k < a[i].n_kl; k++) if (fabs(a[i].kl[k]) > 1e-12) bad_kl++;
        if (a[i].top1_same != a[i].n_kl || a[i].n_kl != c[i].n_kl) bad_kl++;
    }
    CHECK(bad == 0, "%d values differ between batch sizes / thread counts", bad);
    CHECK(bad_naive == 0, "%d logliks differ from the naive per-request scorer", bad_naive);
    CHECK(bad_greedy == 0, "%d is_greedy flags differ from the naive scorer", bad_greedy);
    CHECK(bad_kl == 0, "%d KL/top-1 values wrong for a shifted copy of the logits", bad_kl);
    // n_chars counts code points: "über" has 4
    int found = 0;
    for (int i = 0; i < N_ITEMS; i++)
        for (int k = 0; k < items[i].n_choices; k++)
            if (!strcmp(items[i].choices[k], "über")) { found++; CHECK(a[i].n_chars[k] == 4, "chars of über = %d", a[i].n_chars[k]); }
    CHECK(found > 0, "fixture has a multi-byte choice");
    for (int i = 0; i < N_ITEMS; i++) { eval_score_free(&a[i]); eval_score_free(&b[i]); eval_score_free(&c[i]); }
    free(a); free(b); free(c);
    eval_plan_free(&p);
}

static void test_decisions(void) {
    float row[4] = {1, 3, 3, 0};
    int mx;
    double lp = eval_logprob(row, 4, 2, &mx);
    double want = 3 - log(exp(1.0) + 2 * exp(3.0) + 1);
    CHECK_CLOSE(lp, want, 1e-15, 1e-15);
    CHECK(mx == 0, "token 2 ties with 1: the argmax is 1");
    eval_logprob(row, 4, 1, &mx);
    CHECK(mx == 1, "token 1 is the argmax");
}

// Perplexity windows: 10 tokens, ctx 4 -> [P t0 t1 t2] predicts t0..t3, [t3 t4 t5 t6] predicts
// t4..t7, [t7 t8] predicts t8 t9; every token predicted once; logliks equal a naive sum.
static void test_ppl(void) {
    int32_t tok[10];
    for (int i = 0; i < 10; i++) tok[i] = 100 + 7 * i;
    struct eval_plan p;
    struct err e = {0};
    int rc = eval_plan_build_ppl(&p, tok, 10, 4, BOS, 0, &e);
    CHECK(rc == 0 && p.n_items == 3, "ppl plan: %d windows (%s)", p.n_items, e.msg);
    if (rc) return;
    int32_t want_in[3][4] = {{BOS, 100, 107, 114}, {121, 128, 135, 142}, {149, 156}};
    int want_n[3] = {4, 4, 2};
    for (int k = 0; k < 3; k++) {
        CHECK(eq_ids(p.seq[k].tok, p.seq[k].n, want_in[k], want_n[k]), "window %d input", k);
        CHECK(eq_ids(p.req[k].cont, p.req[k].n_cont, tok + 4 * k, want_n[k]), "window %d targets", k);
        CHECK(p.seq[k].n_rows == want_n[k], "window %d scores every position", k);
    }
    struct eval_batch b = {0};
    struct eval_score sc[3] = {{0}};
    float *lg = malloc(sizeof(float) * VOCAB * 10);
    double naive = 0, got = 0;
    for (int item = 0; item < 3;) {
        eval_batch_next(&b, &p, item, p.n_items, 6, 100, &e);
        toy_forward(NULL, b.tok, b.seq_len, b.n_seq, b.out_pos, b.n_out, lg, &e);
        eval_batch_score(sc + item, &p, &b, (struct eval_logits){lg, VOCAB, NULL}, 1, &e);
        item = b.item1;
    }
    float row[VOCAB];
    for (int k = 0; k < 3; k++) {
        got += sc[k].ll[0];
        for (int j = 0; j < want_n[k]; j++) {
            toy_row(row, want_in[k], j);
            naive += eval_logprob(row, VOCAB, tok[4 * k + j], NULL);
        }
        eval_score_free(&sc[k]);
    }
    CHECK_CLOSE(got, naive, 1e-12, 1e-13);
    eval_plan_free(&p);
    CHECK(eval_plan_build_ppl(&p, tok, 10, 4, BOS, 2, &e) == 0 && p.n_items == 2, "max_windows keeps 2");
    eval_plan_free(&p);
    CHECK(eval_plan_build_ppl(&p, tok, 10, 0, BOS, 0, &e) == ERR_RANGE, "ctx 0 refused");
    free(lg);
    eval_batch_free(&b);
}

// llama-perplexity's windows: L = [BOS] t0..t9 (11 tokens), ctx 4 -> 2 windows [B t0 t1 t2] and
// [B t4 t5 t6] (t3 replaced by BOS), logits at position 2 only, predicting t2 and t6; t7..t9
// (no whole window) unscored. Without BOS: [t0 t1 t2 t3], [t4 t5 t6 t7] predict t3, t7.
static void half_case(int bos, const int32_t *tok, int ctx, int nw, const int32_t (*want_in)[6], const int32_t (*want_tg)[3],
                      int ntg) {
    struct eval_plan p;
    struct err e = {0};
    int rc = eval_plan_build_ppl_half(&p, tok, 10, ctx, bos, 0, &e);
    CHECK(rc == 0 && p.n_items == nw, "ppl half (bos %d, ctx %d): %d windows, want %d (%s)", bos, ctx, p.n_items, nw, e.msg);
    if (rc) return;
    struct eval_batch b = {0};
    struct eval_score sc = {0};
    float *lg = malloc(sizeof(float) * VOCAB * 10);
    float row[VOCAB];
    for (int k = 0; k < nw; k++) {
        CHECK(eq_ids(p.seq[k].tok, p.seq[k].n, want_in[k], ctx), "half window %d input (bos %d, ctx %d)", k, bos, ctx);
        CHECK(eq_ids(p.req[k].cont, p.req[k].n_cont, want_tg[k], ntg), "half window %d targets", k);
        CHECK(p.seq[k].n_rows == ntg && p.seq[k].pos[0] == ctx / 2, "half window %d: %d rows from position %d", k,
              p.seq[k].n_rows, p.seq[k].pos[0]);
        // the logits rows computed are the scored ones only, and score as a naive sum
        eval_batch_next(&b, &p, k, k + 1, 64, 100, &e);
        CHECK(b.n_out == ntg, "half window %d: %d logits rows computed, want %d", k, b.n_out, ntg);
        toy_forward(NULL, b.tok, b.seq_len, b.n_seq, b.out_pos, b.n_out, lg, &e);
        eval_batch_score(&sc, &p, &b, (struct eval_logits){lg, VOCAB, NULL}, 1, &e);
        double naive = 0;
        for (int j = 0; j < ntg; j++) {
            toy_row(row, want_in[k], ctx / 2 + j);
            naive += eval_logprob(row, VOCAB, want_tg[k][j], NULL);
        }
        CHECK_CLOSE(sc.ll[0], naive, 1e-12, 1e-13);
        eval_score_free(&sc);
    }
    free(lg);
    eval_batch_free(&b);
    eval_plan_free(&p);
}

static void test_ppl_half(void) {
    int32_t t[10];
    for (int i = 0; i < 10; i++) t[i] = 100 + 7 * i;
    const int32_t in_b[2][6] = {{BOS, t[0], t[1], t[2]}, {BOS, t[4], t[5], t[6]}}, tg_b[2][3] = {{t[2]}, {t[6]}};
    half_case(BOS, t, 4, 2, in_b, tg_b, 1);
    const int32_t in_n[2][6] = {{t[0], t[1], t[2], t[3]}, {t[4], t[5], t[6], t[7]}}, tg_n[2][3] = {{t[3]}, {t[7]}};
    half_case(-1, t, 4, 2, in_n, tg_n, 1);
    // ctx 6 (odd half): [B t0..t4], positions 3, 4 predict t3, t4; 11 tokens hold one window
    const int32_t in_6[1][6] = {{BOS, t[0], t[1], t[2], t[3], t[4]}}, tg_6[1][3] = {{t[3], t[4]}};
    half_case(BOS, t, 6, 1, in_6, tg_6, 2);
    struct eval_plan p;
    struct err e = {0};
    CHECK(eval_plan_build_ppl_half(&p, t, 10, 12, BOS, 0, &e) == ERR_RANGE, "11 tokens < one window of 12: refused");
    CHECK(strstr(e.msg, "11 tokens") != NULL, "the error names the token count: %s", e.msg);
    CHECK(eval_plan_build_ppl_half(&p, t, 10, 3, BOS, 0, &e) == ERR_RANGE, "ctx 3 refused");
    CHECK(eval_plan_build_ppl_half(&p, t, 10, 4, -1, 1, &e) == 0 && p.n_items == 1, "max_windows keeps 1");
    eval_plan_free(&p);
}

int main(void) {
    test_ppl();
    test_ppl_half();
    test_split();
    test_decisions();
    test_scoring();
    return test_summary("test_eval");
}
