// test_k_source.c: where K outliers come from (diag/k_source.c). The RoPE pairing and one
// layer's summary on hand-worked values; then `diagnose` on make-model qwen2 checkpoints: a band
// of three K channels planted in layer 0's k_proj bias (--plant-k-bias, Qwen2.5-Coder-1.5B's
// case) is found at the planted channels and attributed to the bias; the same model without the
// plant has no layer-0 outlier the bias explains; a model without biases says so.
#include <math.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "diag/k_source.h"
#include "test.h"

static void test_partner(void) {
    CHECK(k_source_partner(0, 128) == 64 && k_source_partner(63, 128) == 127 && k_source_partner(64, 128) == 0 &&
              k_source_partner(127, 128) == 63,
          "rotate-half pairs c and c + 64 of 128");
    CHECK(k_source_partner(5, 8) == 1 && k_source_partner(8, 8) == -1 && k_source_partner(31, 8) == -1,
          "partial rotary (rope_dim 8 of 32): channels >= 8 are left alone");
}

static void test_layer_of(void) {
    // 2 kv heads x 4 channels, rope_dim 4 (pairs 0-2, 1-3)
    const float kmax[8] = {1, 2, 1, 1, 10, 6, 2, 8}, bias[8] = {0, 0, 0, 0, 6, 3, 8, 4};
    struct k_source_layer s = k_source_layer_of(kmax, bias, 2, 4, 4);
    // top: head 1 channel 0 (10); its pair is channel 2: sqrt(6^2 + 8^2) = 10
    CHECK(s.head == 1 && s.channel == 0 && s.kmax == 10 && s.bias == 6 && fabs(s.bias_pair - 10) < 1e-12 &&
              fabs(s.share - 1) < 1e-12,
          "top (h %d, c %d), max %g, bias %g, pair %g, share %g (want 1, 0, 10, 6, 10, 1)", s.head, s.channel, s.kmax,
          s.bias, s.bias_pair, s.share);
    // band: >= 5 -> h1 c0 (10), c1 (6), c3 (8); bias pairs: c0 10 >= 5, c1 sqrt(9 + 16) = 5 >= 3, c3 5 >= 4
    CHECK(s.n_band == 3 && s.n_band_bias == 3, "band %d (from the bias %d), want 3 (3)", s.n_band, s.n_band_bias);
    struct k_source_layer n = k_source_layer_of(kmax, NULL, 2, 4, 4);
    CHECK(n.bias == 0 && n.bias_pair == 0 && n.share == 0 && n.n_band == 3 && n.n_band_bias == 0,
          "no bias: share 0, band 3 (0)");
}

static char tmp[1024];
static const char *bin;

// diagnose.json's k_source of `dir` (cJSON_Delete), or NULL
static cJSON *diagnose(const char *dir, const char *name) {
    CHECK(test_sh("%s --quiet diagnose --model %s --out %s/%s-diag > %s/%s.log 2>&1", bin, dir, tmp, name, tmp, name) == 0,
          "diagnose %s", name);
    char p[1400], *text = NULL;
    size_t n = 0;
    struct err e = {0};
    snprintf(p, sizeof p, "%s/%s-diag/diagnose.json", tmp, name);
    if (file_read_all(p, &text, &n, &e)) return NULL;
    cJSON *j = cJSON_Parse(text);
    free(text);
    cJSON *k = cJSON_DetachItemFromObject(j, "k_source");
    cJSON_Delete(j);
    return k;
}

static double num(const cJSON *layer, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(layer, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void test_planted(void) {
    char planted[1100], plain[1100], nobias[1100];
    snprintf(planted, sizeof planted, "%s/planted", tmp);
    snprintf(plain, sizeof plain, "%s/plain", tmp);
    snprintf(nobias, sizeof nobias, "%s/nobias", tmp);
    const char *shape = "--layers 2 --dim 256 --heads 4 --kv-heads 2 --head-dim 128 --ffn 512 --seed 5 --force";
    // kv channels 61-63 of head 0: the lowest-frequency rotary pairs, where Qwen2.5's band sits
    CHECK(test_sh("%s make-model --arch qwen2 %s --plant-k-bias 0:61:40,0:62:-38,0:63:36 --out %s >/dev/null 2>&1", bin,
                  shape, planted) == 0 &&
              test_sh("%s make-model --arch qwen2 %s --out %s >/dev/null 2>&1", bin, shape, plain) == 0 &&
              test_sh("%s make-model --arch qwen3 %s --out %s >/dev/null 2>&1", bin, shape, nobias) == 0,
          "make-model: planted, plain, no bias");
    CHECK(test_sh("%s make-model --arch qwen3 %s --plant-k-bias 0:1:9 --out %s/x >/dev/null 2>&1", bin, shape, tmp) == 2,
          "--plant-k-bias on an architecture without biases: usage error");
    CHECK(test_sh("%s make-model --arch qwen2 %s --plant-k-bias 0:256:9 --out %s/x >/dev/null 2>&1", bin, shape, tmp) == 2,
          "--plant-k-bias channel 256 of 2 x 128: usage error");
    cJSON *p = diagnose(planted, "planted"), *q = diagnose(plain, "plain"), *n = diagnose(nobias, "nobias");
    const cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "per_layer"), 0);
    const double ch = num(p0, "channel"), share = num(p0, "bias_share");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(p, "has_k_bias")) && num(p0, "kv_head") == 0 && ch >= 61 && ch <= 63 &&
              share > 0.8 && share < 1.2 && num(p0, "band_from_bias") == 3 && num(p0, "band") == 3,
          "planted: layer 0 top (h %g, c %g), share %.3f, band %g (from the bias %g); want h 0, c 61-63, ~1, 3 (3)",
          num(p0, "kv_head"), ch, share, num(p0, "band"), num(p0, "band_from_bias"));
    const cJSON *q0 = cJSON_GetArrayItem(cJSON_GetObjectItem(q, "per_layer"), 0);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(q, "has_k_bias")) && num(q0, "bias_share") < 0.2 &&
              num(q0, "band_from_bias") == 0,
          "plain: layer 0 bias share %.3f, band from the bias %g (want < 0.2, 0)", num(q0, "bias_share"),
          num(q0, "band_from_bias"));
    CHECK(n && cJSON_IsFalse(cJSON_GetObjectItem(n, "has_k_bias")) &&
              test_sh("grep -q 'has no k_proj bias' %s/nobias.log", tmp) == 0,
          "no bias: has_k_bias false, said in the report");
    CHECK(test_sh("grep -q 'Where the K outliers come from: k_proj bias' %s/planted.log", tmp) == 0,
          "planted: the report has the table");
    cJSON_Delete(p);
    cJSON_Delete(q);
    cJSON_Delete(n);
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    bin = getenv("HIFA4_BIN");
    if (!bin) bin = "./hifa4-eval";
    snprintf(tmp, sizeof tmp, "%s/k_source", t ? t : "build/tmp");
    struct err e = {0};
    mkdir_p(tmp, &e);
    test_partner();
    test_layer_of();
    test_planted();
    return test_summary("test_k_source");
}
