// gguf_fuzz_seeds.c: writes the seed inputs of tests/fuzz/fuzz_gguf.c into
// tests/data/fuzz/seeds/gguf/: a file with every metadata value type and three tensor types
// (reader coverage) and two tiny complete models that import-gguf accepts - a llama with a
// byte-level (gpt2, smollm) tokenizer and every supported quantized type among its matrices,
// and a qwen3 with a SentencePiece (llama) vocabulary - so the fuzzer starts inside the
// importer's checks. Deterministic. The bad-*.gguf seeds beside them are the malformed files
// tests/test_gguf.c writes to $HIFA4_TMP/gguf/ (one per refusal it checks), copied by hand.
// Build and run from the repository root:
//   cc -Isrc -Itests -o build/gguf_fuzz_seeds tests/gen/gguf_fuzz_seeds.c && build/gguf_fuzz_seeds
#include <stdio.h>

#include "gguf_build.h"

static uint64_t s = 0x243f6a8885a308d3ull;
static uint8_t rnd(void) { s = s * 6364136223846793005ull + 1442695040888963407ull; return (uint8_t)(s >> 56); }

static void put(const char *name, const uint8_t *b, size_t n) {
    char p[256];
    snprintf(p, sizeof p, "tests/data/fuzz/seeds/gguf/%s", name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f)) { perror(p); return; }
    printf("%s: %zu bytes\n", p, n);
}

// Random bytes with every fp16 scale field set to 0x1000 (small, finite) every type_size bytes.
static uint8_t *blocks(size_t n_blocks, size_t tsize, const int *fp16_off, int n_off) {
    uint8_t *b = malloc(n_blocks * tsize);
    for (size_t i = 0; i < n_blocks * tsize; i++) b[i] = rnd();
    for (size_t k = 0; k < n_blocks; k++)
        for (int j = 0; j < n_off; j++) b[k * tsize + (size_t)fp16_off[j]] = 0x00, b[k * tsize + (size_t)fp16_off[j] + 1] = 0x10;
    return b;
}

static const char *byte_char(int b, char *out) { // GPT-2 bytes_to_unicode
    int cp = b;
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
        int n = 0;
        for (int x = 0; x < b; x++) n += !((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255));
        cp = 256 + n;
    }
    if (cp < 0x80) out[0] = (char)cp, out[1] = 0;
    else out[0] = (char)(0xc0 | cp >> 6), out[1] = (char)(0x80 | (cp & 63)), out[2] = 0;
    return out;
}

static void llama_kvs(struct gb *kv, uint64_t *n, const char *arch, int spm) {
    char k[96];
#define KU(x, v) (snprintf(k, sizeof k, "%s." x, arch), gb_kv_u32(kv, k, v), (*n)++)
    gb_kv_str(kv, "general.architecture", arch), (*n)++;
    KU("block_count", 1);
    KU("context_length", 64);
    KU("embedding_length", 256);
    KU("feed_forward_length", 32);
    KU("attention.head_count", 2);
    KU("attention.head_count_kv", 1);
    KU("attention.key_length", 16);
    snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", arch), gb_kv_f32(kv, k, 1e-5f), (*n)++;
    snprintf(k, sizeof k, "%s.rope.freq_base", arch), gb_kv_f32(kv, k, 10000.0f), (*n)++;
#undef KU
    static char toks[300][8];
    const char *tp[300];
    int32_t types[300];
    float scores[300];
    int V = 0;
    if (!spm) {
        for (int b = 0; b < 256; b++) byte_char(b, toks[V]), types[V] = 1, V++;
        const char *more[] = {"\xc4\xa0t", "he", "\xc4\xa0the", "<|endoftext|>"};
        for (int i = 0; i < 4; i++) strcpy(toks[V], more[i]), types[V] = i == 3 ? 3 : 1, V++;
    } else {
        strcpy(toks[V], "<unk>"), types[V++] = 2;
        strcpy(toks[V], "<s>"), types[V++] = 3;
        strcpy(toks[V], "</s>"), types[V++] = 3;
        for (int b = 0; b < 256; b++) snprintf(toks[V], 8, "<0x%02X>", b), types[V++] = 6;
        const char *more[] = {"\xe2\x96\x81", "t", "h", "e", "\xe2\x96\x81t", "he", "\xe2\x96\x81the"};
        for (int i = 0; i < 7; i++) strcpy(toks[V], more[i]), types[V++] = 1;
    }
    for (int i = 0; i < V; i++) tp[i] = toks[i], scores[i] = -(float)i;
    gb_kv_str(kv, "tokenizer.ggml.model", spm ? "llama" : "gpt2"), (*n)++;
    if (!spm) gb_kv_str(kv, "tokenizer.ggml.pre", "smollm"), (*n)++;
    gb_kv_strs(kv, "tokenizer.ggml.tokens", tp, (size_t)V), (*n)++;
    gb_kv_i32s(kv, "tokenizer.ggml.token_type", types, (size_t)V), (*n)++;
    if (spm) gb_kv_f32s(kv, "tokenizer.ggml.scores", scores, (size_t)V), (*n)++;
    if (!spm) {
        const char *merges[] = {"\xc4\xa0 t", "h e", "\xc4\xa0t he"};
        gb_kv_strs(kv, "tokenizer.ggml.merges", merges, 3), (*n)++;
    }
    gb_kv_u32(kv, "tokenizer.ggml.bos_token_id", spm ? 1 : 259), (*n)++;
    gb_kv_u32(kv, "tokenizer.ggml.eos_token_id", spm ? 2 : 259), (*n)++;
}

// A one-layer model: dim 256, 2 heads of 16 (1 KV head), ffn 32, vocab = the tokenizer's.
static void tiny_model(const char *file, const char *arch, int spm) {
    struct gb kv = {0};
    uint64_t n_kv = 0;
    llama_kvs(&kv, &n_kv, arch, spm);
    const int V = spm ? 266 : 260, D = 256;
    static const int o2[] = {0}, o2b[] = {0, 2}, o208[] = {208}, o108[] = {108}, o80[] = {80, 82};
    struct { const char *name; int n_dims; int64_t ne0, ne1; uint32_t type; size_t tsize; int bs; const int *off; int noff; } t[] = {
        {"token_embd.weight", 2, D, V, 10, 84, 256, o80, 2},           // Q2_K
        {"output_norm.weight", 1, D, 1, 0, 4, 1, NULL, 0},             // F32
        {"blk.0.attn_norm.weight", 1, D, 1, 1, 2, 1, NULL, 0},         // F16
        {"blk.0.ffn_norm.weight", 1, D, 1, 30, 2, 1, NULL, 0},         // BF16
        {"blk.0.attn_q.weight", 2, D, 32, 2, 18, 32, o2, 1},           // Q4_0
        {"blk.0.attn_k.weight", 2, D, 16, 3, 20, 32, o2b, 2},          // Q4_1
        {"blk.0.attn_v.weight", 2, D, 16, 6, 22, 32, o2, 1},           // Q5_0
        {"blk.0.attn_output.weight", 2, 32, D, 7, 24, 32, o2b, 2},     // Q5_1
        {"blk.0.ffn_gate.weight", 2, D, 32, 14, 210, 256, o208, 1},    // Q6_K
        {"blk.0.ffn_up.weight", 2, D, 32, 11, 110, 256, o108, 1},      // Q3_K
        {"blk.0.ffn_down.weight", 2, 32, D, 8, 34, 32, o2, 1},         // Q8_0
        {"blk.0.attn_q_norm.weight", 1, 16, 1, 0, 4, 1, NULL, 0},      // qwen3 only
        {"blk.0.attn_k_norm.weight", 1, 16, 1, 0, 4, 1, NULL, 0},
    };
    int n = spm ? 13 : 11;
    struct gb_tensor ts[13];
    uint8_t *data[13];
    for (int i = 0; i < n; i++) {
        size_t nb = (size_t)(t[i].ne0 / t[i].bs * t[i].ne1);
        data[i] = blocks(nb, t[i].tsize, t[i].off, t[i].noff);
        if (t[i].type == 0) for (size_t k = 0; k < nb; k++) data[i][4 * k + 3] = 0x3f; // F32 near 1
        if (t[i].type == 1 || t[i].type == 30) for (size_t k = 0; k < nb; k++) data[i][2 * k + 1] = 0x3c; // ~1
        ts[i] = (struct gb_tensor){t[i].name, t[i].n_dims, {t[i].ne0, t[i].ne1, 1, 1}, t[i].type, data[i], nb * t[i].tsize};
    }
    size_t size;
    uint8_t *f = gguf_build(&kv, n_kv, ts, n, 32, &size);
    put(file, f, size);
    free(f), free(kv.b);
    for (int i = 0; i < n; i++) free(data[i]);
}

int main(void) {
    tiny_model("tiny-llama-gpt2.gguf", "llama", 0);
    tiny_model("tiny-qwen3-spm.gguf", "qwen3", 1);
    return 0;
}
