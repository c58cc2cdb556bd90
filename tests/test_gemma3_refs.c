// test_gemma3_refs.c: the committed transformers references for Gemma 3 270M
// (tests/data/gemma3/, written by scripts/gemma3_ref.py; format in its README) are whole and
// consistent with themselves, so that a test comparing the C model against them compares
// against what the README says: file sizes match the counts of logits.json, every position's
// argmax and max logit are the first of its top-32 records (bit for bit), the top-32 are
// descending, distinct and in the vocabulary, the sampled logits never exceed the max, the
// logsumexp lies in [max, max + ln V], every prompt starts with BOS; and in arc_easy_100.json
// every item's pred / pred_norm is the argmax of its stored log-likelihoods (per character for
// pred_norm), every option's ids start with BOS and end in n_cont >= 1 continuation tokens.
// The model itself is not run here (that is the Gemma 3 import's test, which needs the GGUF).
#include <stdint.h>
#include <stdlib.h>

#include "base/json_util.h"
#include "test.h"

#define DIR "tests/data/gemma3/"
#define VOCAB 262144
#define BOS 2

static void *read_bin(const char *name, size_t *len) {
    char path[512];
    snprintf(path, sizeof path, DIR "%s", name);
    char *buf = NULL;
    struct err e = {0};
    int rc = file_read_raw(path, &buf, len, &e);
    CHECK(rc == 0, "%s", e.msg);
    return rc ? NULL : buf;
}

struct top_rec { int32_t id; float logit; };

// Checks one position's 32 records against argmax / max / logsumexp; returns 1 when all hold.
static int check_position(const struct top_rec *r, int k, int argmax, double mx, double lse) {
    int ok = r[0].id == argmax && (double)r[0].logit == mx && lse >= mx && lse <= mx + log((double)VOCAB) + 1e-9;
    for (int j = 0; j < k; j++) {
        ok &= r[j].id >= 0 && r[j].id < VOCAB;
        if (j) ok &= r[j].logit <= r[j - 1].logit;
        for (int i = 0; i < j; i++) ok &= r[i].id != r[j].id;
    }
    return ok;
}

static void check_prompt(const cJSON *p, int k, int stride, int n_sample) {
    const char *name = cJSON_GetObjectItem(p, "name")->valuestring;
    int T = cJSON_GetObjectItem(p, "n_tokens")->valueint;
    const cJSON *ids = cJSON_GetObjectItem(p, "ids"), *am = cJSON_GetObjectItem(p, "argmax");
    const cJSON *mx = cJSON_GetObjectItem(p, "max_logit"), *lse = cJSON_GetObjectItem(p, "logsumexp");
    CHECK(cJSON_GetArraySize(ids) == T && cJSON_GetArraySize(am) == T && cJSON_GetArraySize(mx) == T &&
              cJSON_GetArraySize(lse) == T, "%s: array lengths != n_tokens %d", name, T);
    CHECK(T > 60 && cJSON_GetArrayItem(ids, 0)->valueint == BOS, "%s: %d tokens, first must be BOS", name, T);
    size_t nt = 0, ns = 0;
    struct top_rec *top = read_bin(cJSON_GetObjectItem(p, "top32_file")->valuestring, &nt);
    float *smp = read_bin(cJSON_GetObjectItem(p, "sample_file")->valuestring, &ns);
    int rows = cJSON_GetObjectItem(p, "n_sample_rows")->valueint;
    if (!top || !smp) { free(top); free(smp); return; }
    CHECK(nt == (size_t)T * (size_t)k * 8, "%s: top-%d file has %zu bytes for %d positions", name, k, nt, T);
    CHECK(rows == (T + stride - 1) / stride && ns == (size_t)rows * (size_t)n_sample * 4,
          "%s: sample file %zu bytes, %d rows", name, ns, rows);
    int bad = 0, bad_smp = 0;
    for (int t = 0; t < T && nt == (size_t)T * (size_t)k * 8; t++) {
        double m = cJSON_GetArrayItem(mx, t)->valuedouble;
        bad += !check_position(top + (size_t)t * (size_t)k, k, cJSON_GetArrayItem(am, t)->valueint, m,
                               cJSON_GetArrayItem(lse, t)->valuedouble);
        if (t % stride == 0 && t / stride < rows && ns == (size_t)rows * (size_t)n_sample * 4)
            for (int j = 0; j < n_sample; j++) bad_smp += smp[(size_t)(t / stride) * (size_t)n_sample + (size_t)j] > m;
    }
    CHECK(bad == 0, "%s: %d positions whose top-%d records disagree with argmax/max/logsumexp", name, bad, k);
    CHECK(bad_smp == 0, "%s: %d sampled logits above the position's max", name, bad_smp);
    free(top);
    free(smp);
}

static cJSON *parse(const char *path) {
    cJSON *root = NULL;
    struct err e = {0};
    int rc = json_parse_file(&root, path, &e);
    CHECK(rc == 0, "%s", e.msg);
    return rc ? NULL : root;
}

static void test_logits(void) {
    cJSON *root = parse(DIR "logits.json");
    if (!root) return;
    int k = cJSON_GetObjectItem(root, "topk")->valueint, stride = cJSON_GetObjectItem(root, "sample_stride")->valueint;
    const cJSON *sid = cJSON_GetObjectItem(root, "sample_ids"), *p;
    int n_sample = cJSON_GetArraySize(sid), asc = 1, n_long = 0;
    for (int j = 0; j < n_sample; j++) {
        int v = cJSON_GetArrayItem(sid, j)->valueint;
        asc &= v >= 0 && v < VOCAB && (j == 0 || v > cJSON_GetArrayItem(sid, j - 1)->valueint);
    }
    CHECK(k == 32 && stride >= 1 && n_sample == 1024 && asc, "topk %d, stride %d, %d sample ids (ascending: %d)", k, stride, n_sample, asc);
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(root, "prompts")) {
        check_prompt(p, k, stride, n_sample);
        n_long += cJSON_GetObjectItem(p, "n_tokens")->valueint > 600;
    }
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(root, "prompts")) >= 3 && n_long >= 1,
          "need 3+ prompts, one > 600 tokens (the 512 window)");
    cJSON_Delete(root);
}

// One ARC item: pred / pred_norm are the argmaxes of the stored lls; ids are BOS + ... + n_cont.
static int check_item(const cJSON *it) {
    const cJSON *o, *opts = cJSON_GetObjectItem(it, "options");
    int n = cJSON_GetArraySize(opts), c = 0, best = 0, best_norm = 0, ok = n >= 2;
    double bl = -INFINITY, bn = -INFINITY;
    cJSON_ArrayForEach(o, opts) {
        double ll = cJSON_GetObjectItem(o, "ll")->valuedouble;
        int nch = cJSON_GetObjectItem(o, "n_chars")->valueint, ncont = cJSON_GetObjectItem(o, "n_cont")->valueint;
        const cJSON *ids = cJSON_GetObjectItem(o, "ids");
        double norm = ll / (nch > 0 ? nch : 1);
        if (ll > bl) { bl = ll; best = c; }
        if (norm > bn) { bn = norm; best_norm = c; }
        ok &= ll < 0 && ncont >= 1 && cJSON_GetArraySize(ids) > ncont + 1 && cJSON_GetArrayItem(ids, 0)->valueint == BOS;
        c++;
    }
    int gold = cJSON_GetObjectItem(it, "gold")->valueint;
    return ok && gold >= 0 && gold < n && cJSON_GetObjectItem(it, "pred")->valueint == best &&
           cJSON_GetObjectItem(it, "pred_norm")->valueint == best_norm;
}

static void test_arc(void) {
    cJSON *root = parse(DIR "arc_easy_100.json");
    if (!root) return;
    const cJSON *it;
    int n = 0, bad = 0, acc = 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "items")) {
        n++;
        bad += !check_item(it);
        acc += cJSON_GetObjectItem(it, "pred")->valueint == cJSON_GetObjectItem(it, "gold")->valueint;
    }
    CHECK(n == 100 && n == cJSON_GetObjectItem(root, "n_items")->valueint, "%d items", n);
    CHECK(bad == 0, "%d items whose pred/pred_norm/ids disagree with their options", bad);
    CHECK_CLOSE(cJSON_GetObjectItem(root, "acc")->valuedouble, acc / (double)(n ? n : 1), 1e-12, 0);
    cJSON_Delete(root);
}

int main(void) {
    test_logits();
    test_arc();
    return test_summary("test_gemma3_refs");
}
