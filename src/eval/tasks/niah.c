// niah.c: needle in a haystack, likelihood variant (spec/tasks.md section 2; paper Table 4).
// For every haystack size T (tokens, --niah-lengths) and depth d in {0, .25, .5, .75, 1}, and
// niah_per_cell different magic numbers N (7 digits, seeded): the context is a prefix of the
// haystack text with "The special magic number is N." inserted at a sentence start near
// fraction d of the prefix (in bytes; the nearest ". " boundary), followed by
// "\nWhat is the special magic number? The special magic number is". The choices are N and 9
// distinct distractor numbers in seeded order (continuation " " + number); gold = N's index.
// The generation form (o->niah_generate, `--niah-form generate`; the paper's): the run
// greedy-decodes NIAH_GEN_TOKENS tokens after the context and the item is correct when the
// decoded text contains choices[gold] (eval/run_generate.c); the choices stay for the record.
// The prefix is the longest (on a whitespace boundary) whose whole context, counted with
// o->count_tokens (the model's tokenizer, no BOS), has at most T tokens. The haystack is --task-file
// or the WikiText-2 test text of the ppl task. Items ordered by T, depth, k; id
// "T<T>/d<percent>/<k>"; subject "T<T>/d<percent>" so per-subject accuracy is the per-cell
// retrieval accuracy.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/tasks/task.h"

int task_load_ppl(struct task_set *s, const struct task_opts *o, struct err *e);

static const char k_question[] = "\nWhat is the special magic number? The special magic number is";
static const double k_depths[5] = {0.0, 0.25, 0.5, 0.75, 1.0};

// Builds hay[0..L) with the needle inserted at depth d into a malloc'd string.
static char *build(const char *hay, size_t L, double d, unsigned n) {
    size_t pos = (size_t)(d * (double)L);
    if (d >= 1.0) pos = L;
    // move to the nearest sentence start (just after ". "; ties and no match go backwards, to
    // the start of the text at worst); d = 1 appends after the whole prefix
    if (pos < L) {
        size_t b = pos, f = pos;
        while (b > 0 && !(b >= 2 && hay[b - 2] == '.' && hay[b - 1] == ' ')) b--;
        while (f < L && !(f >= 2 && hay[f - 2] == '.' && hay[f - 1] == ' ')) f++;
        pos = (f < L && f - pos < pos - b) ? f : b;
    }
    struct sbuf b = {0};
    int rc = sb_putn(&b, hay, pos);
    if (!rc && pos == L && pos > 0 && hay[pos - 1] != ' ' && hay[pos - 1] != '\n') rc = sb_puts(&b, " ");
    if (!rc) rc = sb_printf(&b, "The special magic number is %07u.", n);
    if (!rc && pos < L) rc = sb_puts(&b, " ");
    if (!rc) rc = sb_putn(&b, hay + pos, L - pos);
    if (!rc) rc = sb_puts(&b, k_question);
    if (rc) { free(b.p); return NULL; }
    return sb_take(&b);
}

// Tokens of the context for prefix length L (needle at depth d); negative on error.
static int ctx_tokens(const struct task_opts *o, const char *hay, size_t L, double d, unsigned n) {
    char *c = build(hay, L, d, n);
    if (!c) return ERR_NOMEM;
    int t = o->count_tokens(o->count_ctx, c, strlen(c));
    free(c);
    return t;
}

// Where the needle goes and what it says: depth d in [0, 1], magic number n.
struct needle {
    double d;
    unsigned n;
};

// Largest whitespace boundary L with ctx_tokens(L) <= T, into *L. Starts from the hint *L
// holds on entry (the previous item's L for the same cell, or 0) and a window that doubles
// until it overshoots, so the tokenizer only sees contexts of about T tokens; then binary
// search. Token counts grow with L up to merges at the cut, which the final back-off absorbs.
static int fit_prefix(size_t *L, const struct task_opts *o, const char *hay, size_t len, int T, struct needle nd,
                      struct err *e) {
    const size_t hint = *L;
    const double d = nd.d;
    const unsigned n = nd.n;
    int t = ctx_tokens(o, hay, 0, d, n);
    if (t < 0) return err_set(e, t == ERR_NOMEM ? ERR_NOMEM : ERR_INTERNAL, "niah: token counter failed (%d)", t);
    if (t > T) return err_set(e, ERR_RANGE, "niah: T=%d is smaller than needle + question (%d tokens)", T, t);
    size_t lo = 0, hi = hint ? hint : (size_t)T * 4;
    if (hi > len) hi = len;
    for (;;) {  // grow hi until it overshoots T or reaches the end of the haystack
        t = ctx_tokens(o, hay, hi, d, n);
        if (t < 0) return err_set(e, ERR_INTERNAL, "niah: token counter failed (%d)", t);
        if (t > T) break;
        lo = hi;
        if (hi == len) break;
        hi = hi * 2 > len ? len : hi * 2;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        t = ctx_tokens(o, hay, mid, d, n);
        if (t < 0) return err_set(e, ERR_INTERNAL, "niah: token counter failed (%d)", t);
        if (t <= T) lo = mid;
        else hi = mid - 1;
    }
    // back off to a whitespace boundary (never cut a word or a UTF-8 sequence)
    while (lo > 0 && lo < len && hay[lo] != ' ' && hay[lo] != '\n') lo--;
    while (lo > 0 && ctx_tokens(o, hay, lo, d, n) > T) {
        lo--;
        while (lo > 0 && hay[lo] != ' ' && hay[lo] != '\n') lo--;
    }
    *L = lo;
    return 0;
}

int task_load_niah(struct task_set *s, const struct task_opts *o, struct err *e) {
    if (!o->count_tokens)
        return err_set(e, ERR_USAGE, "niah: sizes its haystack in tokens, so it needs the model's tokenizer (prompts: "
                       "--tokenizer DIR)");
    struct task_set hs;
    int rc = task_load_ppl(&hs, o, e);
    if (!rc && hs.text_len == 0) rc = err_set(e, ERR_FORMAT, "%s: the haystack text is empty", hs.source);
    if (rc) { task_set_free(&hs); return err_prefix(e, "niah haystack"); }
    task_set_begin(s, "niah", TASK_METRIC_ACC, o->niah_generate ? "niah-gen-v1" : "niah-ll-v1", o);
    s->generate = o->niah_generate ? NIAH_GEN_TOKENS : 0;
    task_source_add(s, "haystack %s", hs.source);
    if (o->niah_generate) task_source_add(s, "generation form: greedy %d tokens", NIAH_GEN_TOKENS);
    char lens[256];
    snprintf(lens, sizeof lens, "%s", o->niah_lengths ? o->niah_lengths : "1024,2048,4096");
    int per = o->niah_per_cell > 0 ? o->niah_per_cell : 4;
    for (char *tok = lens, *next; tok && !rc; tok = next) { // every element counts: "" and "1024," are errors
        next = strchr(tok, ',');
        if (next) *next++ = 0;
        long long T;
        if (str_to_int(tok, 16, 1 << 24, &T)) { rc = err_set(e, ERR_USAGE, "niah: bad haystack length '%s'", tok); break; }
        int dup = 0; // the same cells twice (the elements before tok are NUL-cut)
        for (const char *q = lens; q < tok; q += strlen(q) + 1) dup |= atoll(q) == T;
        if (dup) { rc = err_set(e, ERR_USAGE, "niah: haystack length %lld given twice in --niah-lengths", T); break; }
        for (int di = 0; di < 5 && !rc; di++) {
            size_t L = 0;
            for (int k = 0; k < per && !rc; k++) {
                uint64_t st = o->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(T * 131 + di * 17 + k + 1));
                unsigned nums[10];
                for (int c = 0; c < 10; c++) {
                    int dup;
                    do {
                        nums[c] = 1000000u + (unsigned)(task_rng_next(&st) % 9000000u);
                        dup = 0;
                        for (int j = 0; j < c; j++) dup |= nums[j] == nums[c];
                    } while (dup);
                }
                int gold = (int)(task_rng_next(&st) % 10u);  // nums[0] is N; swap it to gold
                unsigned N = nums[0];
                nums[0] = nums[gold];
                nums[gold] = N;
                if ((rc = fit_prefix(&L, o, hs.text, hs.text_len, (int)T, (struct needle){k_depths[di], N}, e))) break;
                if (L == hs.text_len && ctx_tokens(o, hs.text, L, k_depths[di], N) < T * 9 / 10)
                    log_warn("niah: haystack shorter than T=%lld tokens; using all of it", T);
                char *ctx = build(hs.text, L, k_depths[di], N);
                char ch[10][16], id[64], subj[48];
                const char *cp[10];
                for (int c = 0; c < 10; c++) { snprintf(ch[c], sizeof ch[c], "%07u", nums[c]); cp[c] = ch[c]; }
                snprintf(subj, sizeof subj, "T%lld/d%d", T, (int)(k_depths[di] * 100));
                snprintf(id, sizeof id, "%s/%d", subj, k);
                if (task_push_item_own(s, id, subj, ctx, cp, 10, gold)) rc = err_set(e, ERR_NOMEM, "niah: out of memory");
            }
        }
    }
    task_set_free(&hs);
    if (rc) return rc;
    task_source_add(s, "T in {%s}, depths 0/25/50/75/100%%, %d per cell, seed %llu", o->niah_lengths ? o->niah_lengths : "1024,2048,4096",
                    per, (unsigned long long)o->seed);
    task_apply_limit(s, o);
    return 0;
}
