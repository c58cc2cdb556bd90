// split.c: the tasks of one attention call (split.h). Only decides who computes which rows and
// heads; the numerics are the kernels'.
#include "attention/split.h"

#include <stdlib.h>

static int past_n(const struct attn_split_in *in, int s) { return in->past ? in->past[s].n : 0; }

// Visible (row, key) pairs of the rows [a, b): row i sees min(i + 1, W) keys (W = 0: i + 1).
static double rows_work(int a, int b, int W) {
    if (b <= a) return 0;
    int m = W <= 0 ? b : W < a ? a : W > b ? b : W; // rows [a, m) see i + 1 keys, [m, b) see W
    return 0.5 * ((double)m * (m + 1) - (double)a * (a + 1)) + (double)(b - m) * (W > 0 ? W : 0);
}

double attn_split_work(const struct attn_split_in *in) {
    double w = 0;
    for (int s = 0; s < in->n_seq; s++) {
        const int q0 = past_n(in, s), T = q0 + in->seq_len[s];
        w += rows_work(q0, T, in->window) * in->H * in->d + 8.0 * T * in->Hkv * in->d;
    }
    return w;
}

int attn_split_cap(int n_threads, int g) { return 8 * n_threads + 4 * n_threads * (g + 1) + 16; }

static int by_work(const void *pa, const void *pb) {
    const struct attn_task *a = pa, *b = pb;
    if (a->work != b->work) return a->work > b->work ? -1 : 1;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    if (a->h0 != b->h0) return a->h0 < b->h0 ? -1 : 1;
    return (a->r0 > b->r0) - (a->r0 < b->r0);
}

// Row ranges of sequence s (rows [q0, T) over nb query tiles from tile b0) into R parts of about
// equal work, cut on tile starts; one task per (range, kv head) with all the group's heads.
static int split_rows(struct attn_task *t, const struct attn_split_in *in, int s, int q0, int T, int R) {
    const int Bc = in->tile, W = in->window, g = in->H / in->Hkv, b0 = q0 / Bc, b1 = (T - 1) / Bc;
    const double total = rows_work(q0, T, W);
    double acc = 0;
    int n = 0, a = q0, k = 1;
    for (int b = b0; b <= b1; b++) {
        const int lo = b * Bc > q0 ? b * Bc : q0, e = (b + 1) * Bc < T ? (b + 1) * Bc : T;
        acc += rows_work(lo, e, W);
        if (e < T && !(k < R && acc >= total * k / R)) continue;
        for (int kh = 0; kh < in->Hkv; kh++)
            t[n++] = (struct attn_task){s, kh * g, (kh + 1) * g, a, e, rows_work(a, e, W) * g};
        a = e;
        k++;
    }
    return n;
}

int attn_split(struct attn_task *t, const struct attn_split_in *in) {
    const int pairs = in->n_seq * in->Hkv, nt = in->n_threads, g = in->H / in->Hkv;
    if (pairs >= 4 * nt) return 0;
    const int want = (8 * nt + pairs - 1) / pairs;
    int n = 0;
    for (int s = 0; s < in->n_seq; s++) {
        const int q0 = past_n(in, s), T = q0 + in->seq_len[s];
        const int tiles = (T - 1) / in->tile - q0 / in->tile + 1, R = tiles < want ? tiles : want;
        if (R >= 2) {
            n += split_rows(t + n, in, s, q0, T, R);
            continue;
        }
        // one query tile: slice the group's query heads (only when too few pairs for the threads)
        int split = pairs < 2 * nt ? (2 * nt + pairs - 1) / pairs : 1;
        if (split > g) split = g;
        const double w = rows_work(q0, T, in->window);
        for (int kh = 0; kh < in->Hkv; kh++)
            for (int part = 0; part < split; part++) {
                const int h0 = kh * g + part * g / split, h1 = kh * g + (part + 1) * g / split;
                t[n++] = (struct attn_task){s, h0, h1, q0, T, w * (h1 - h0)};
            }
    }
    qsort(t, (size_t)n, sizeof *t, by_work);
    return n;
}
