// test_logits_modes.c: whole-model logits under the tiled and 4-bit attention modes against
// the independent goldens (goldens/README.md of the test data): qwen3-tiny and qwen3-outlier with
// --act f32, attention bf16 / direct / hifa4 (tile 128, the golden Smooth-QK scales).
// Tolerances are the goldens README's suggested ones: the goldens use binary64 non-attention
// math, so a binary32 forward occasionally flips a bf16 input rounding, an HiF4 group scale,
// Q-Mean mu or an fp16 state value (README: measured 2.5e-7 .. 2.6e-3 for a binary32 torch).
#include <stdlib.h>

#include "attention/attn.h"
#include "attention/scales.h"
#include "model/config.h"
#include "model/model.h"
#include "model_util.h"
#include "io/safetensors.h"
#include "test.h"

struct mode_case {
    const char *mode, *tensor;
    double max_rel, min_top1;
};

static const struct mode_case cases[] = {
    {"bf16", "logits_bf16attn", 5e-3, 0.98},
    {"direct", "logits_direct", 2e-2, 0.97},
    {"hifa4", "logits_hifa4", 2e-2, 0.97},
};

static void check_model(const char *name) {
    const char *gpath = TEST_NEED("goldens/logits/%s.safetensors", name);
    const char *mdir = gpath ? TEST_NEED("goldens/models/%s", name) : NULL;
    if (!mdir) return;
    struct safetensors g;
    struct err e = {0};
    if (st_open(&g, gpath, &e)) { CHECK(0, "%s", e.msg); return; }
    const struct st_tensor *ti = st_find(&g, "input_ids");
    int T = (int)ti->numel;
    int32_t *ids = malloc((size_t)T * sizeof *ids);
    st_to_i32(ids, ti, &e);
    struct model_opts mo;
    model_opts_default(&mo);
    mo.act_bf16 = 0;
    mo.max_tokens = T;
    mo.max_seq = T;
    struct model *m = NULL;
    struct attn_ctx *ctx = NULL;
    if (model_open(&m, mdir, &mo, &e)) { CHECK(0, "%s: %s", name, e.msg); st_close(&g); free(ids); return; }
    const struct model_config *c = model_cfg(m);
    float *scales = NULL;
    CHECK(attn_scales_load(&scales, gpath, c->n_layers, c->n_kv_heads, c->head_dim, model_hash(m), &e) == 0,
          "%s: scales: %s", name, e.msg);
    int V = c->vocab_size;
    float *lg = malloc((size_t)T * V * sizeof *lg), *want = malloc((size_t)T * V * sizeof *want);
    int *pos = malloc((size_t)T * sizeof *pos);
    for (int i = 0; i < T; i++) pos[i] = i;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct attn_opts ao;
        attn_opts_default(&ao);
        ao.tile = 128;
        const struct model_batch b = test_batch(ids, &T, 1, pos, T);
        if (test_attn_reopen(&ctx, m, cases[k].mode, &ao, scales, &e) || model_forward(m, ctx, NULL, &b, lg, &e)) {
            CHECK(0, "%s %s: %s", name, cases[k].mode, e.msg);
            continue;
        }
        const struct st_tensor *tw = st_find(&g, cases[k].tensor);
        CHECK(tw && tw->numel == (int64_t)T * V, "%s: golden %s", name, cases[k].tensor);
        if (!tw) continue;
        st_to_f32(want, tw, &e);
        double rel = test_rel_l2(lg, want, (size_t)T * V);
        int same = 0;
        for (int i = 0; i < T; i++) {
            int a = 0, b = 0;
            for (int v = 1; v < V; v++) {
                if (lg[(size_t)i * V + v] > lg[(size_t)i * V + a]) a = v;
                if (want[(size_t)i * V + v] > want[(size_t)i * V + b]) b = v;
            }
            same += a == b;
        }
        double top1 = (double)same / T;
        CHECK(rel <= cases[k].max_rel && top1 >= cases[k].min_top1, "%s %s: rel-L2 %.3g (<= %g), top-1 %.4f (>= %.2f)",
              name, cases[k].mode, rel, cases[k].max_rel, top1, cases[k].min_top1);
        printf("%-14s %-7s rel-L2 %.3g  top-1 %.4f\n", name, cases[k].mode, rel, top1);
    }
    free(lg);
    free(want);
    free(pos);
    free(scales);
    free(ids);
    attn_ctx_free(ctx);
    model_free(m);
    st_close(&g);
}

int main(void) {
    check_model("qwen3-tiny");
    check_model("qwen3-outlier");
    return test_summary("test_logits_modes");
}
