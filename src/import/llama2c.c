// llama2c.c: llama2.c checkpoint -> HF Llama directory (see llama2c.h). Weight order of the
// legacy export (llama2.c run.c memory_map_weights): token_embedding, rms_att, wq, wk, wv, wo,
// rms_ffn, w1, w2, w3, rms_final, freq_cis_real, freq_cis_imag, [wcls].
#include "import/llama2c.h"

#include <stdio.h>
#include <stdlib.h>

#include "model/config.h"
#include "io/safetensors.h"
#include "tokenizer/llama2c_vocab.h"

int llama2c_parse_header(struct llama2c_header *h, const void *buf, size_t len, const char *ctx, struct err *e) {
    memset(h, 0, sizeof *h);
    if (len < 28) return err_set(e, ERR_FORMAT, "%s: %zu bytes, too short for a llama2.c header", ctx, len);
    int32_t v[7];
    memcpy(v, buf, sizeof v);
    if ((uint32_t)v[0] == 0x616b3432u)
        return err_set(e, ERR_UNSUPPORTED, "%s: llama2.c export version >= 1 ('ak42' magic) is not supported; "
                       "use the legacy (version 0) export", ctx);
    static const char *names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
    for (int i = 0; i < 7; i++) {
        // in 64 bits: a vocab_size of INT32_MIN has no int32 negation (fuzz_llama2c)
        int64_t x = i == 5 && v[i] < 0 ? -(int64_t)v[i] : v[i];
        if (x <= 0 || x > (1 << 24))
            return err_set(e, ERR_FORMAT, "%s: header field %s = %d out of range", ctx, names[i], v[i]);
    }
    h->dim = v[0], h->hidden_dim = v[1], h->n_layers = v[2], h->n_heads = v[3], h->n_kv_heads = v[4];
    h->shared_classifier = v[5] > 0;
    h->vocab_size = v[5] > 0 ? v[5] : -v[5];
    h->seq_len = v[6];
    if (h->dim % h->n_heads || (h->dim / h->n_heads) % 2 || h->n_heads % h->n_kv_heads || h->n_layers > CFG_MAX_LAYERS)
        return err_set(e, ERR_FORMAT, "%s: inconsistent header: dim %d, n_heads %d, n_kv_heads %d, n_layers %d", ctx,
                       h->dim, h->n_heads, h->n_kv_heads, h->n_layers);
    const int64_t D = h->dim, F = h->hidden_dim, L = h->n_layers, hs = D / h->n_heads, kvd = hs * h->n_kv_heads;
    const int64_t V = h->vocab_size, S = h->seq_len;
    int64_t n = V * D + L * (D + D * D + 2 * D * kvd + D * D + D + 3 * D * F) + D + S * hs;
    if (!h->shared_classifier) n += V * D;
    if ((int64_t)len != 28 + 4 * n)
        return err_set(e, ERR_FORMAT, "%s: %zu bytes, but the header (dim %d, hidden %d, layers %d, heads %d/%d, vocab %d%s, "
                       "seq_len %d) implies %lld", ctx, len, h->dim, h->hidden_dim, h->n_layers, h->n_heads, h->n_kv_heads,
                       h->vocab_size, h->shared_classifier ? "" : " unshared", h->seq_len, (long long)(28 + 4 * n));
    return 0;
}

// HF row h*hs + i (i < hs/2) <- llama2.c row h*hs + 2i; HF row h*hs + hs/2 + i <- row h*hs + 2i + 1.
static void permute_rows(float *dst, const float *src, int n_heads, int hs, int cols) {
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < hs / 2; i++) {
            memcpy(dst + ((size_t)h * hs + i) * cols, src + ((size_t)h * hs + 2 * i) * cols, sizeof(float) * cols);
            memcpy(dst + ((size_t)h * hs + hs / 2 + i) * cols, src + ((size_t)h * hs + 2 * i + 1) * cols,
                   sizeof(float) * cols);
        }
}

int llama2c_import(const char *model_bin, const char *tok_bin, const char *out_dir, int *tok_ok, struct err *e) {
    char *buf = NULL, *cfg_json = NULL, *tok_json = NULL;
    size_t len = 0;
    float *perm = NULL;
    struct st_wtensor *ts = NULL;
    char (*names)[96] = NULL;
    char path[4096];
    struct llama2c_header h;
    *tok_ok = 0;
    int rc = file_read_all(model_bin, &buf, &len, e);
    if (rc) return rc;
    if ((rc = llama2c_parse_header(&h, buf, len, model_bin, e))) goto done;
    const int D = h.dim, F = h.hidden_dim, L = h.n_layers, hs = D / h.n_heads, kvd = hs * h.n_kv_heads, V = h.vocab_size;
    // copy the weights to an aligned buffer (file_read_all's buffer + 28 is aligned, but be explicit)
    const float *w = (const float *)(void *)(buf + 28);
    float *aligned = NULL;
    if ((uintptr_t)w % 4) {
        aligned = malloc(len - 28);
        if (!aligned) { rc = err_set(e, ERR_NOMEM, "import: out of memory"); goto done; }
        memcpy(aligned, buf + 28, len - 28);
        w = aligned;
    }
    const float *emb = w, *rms_att = emb + (size_t)V * D, *wq = rms_att + (size_t)L * D;
    const float *wk = wq + (size_t)L * D * D, *wv = wk + (size_t)L * kvd * D, *wo = wv + (size_t)L * kvd * D;
    const float *rms_ffn = wo + (size_t)L * D * D, *w1 = rms_ffn + (size_t)L * D, *w2 = w1 + (size_t)L * F * D;
    const float *w3 = w2 + (size_t)L * D * F, *rms_final = w3 + (size_t)L * F * D;
    const float *wcls = h.shared_classifier ? NULL : rms_final + D + (size_t)h.seq_len * hs;

    const int n_t = 2 + 9 * L + (wcls ? 1 : 0);
    ts = calloc((size_t)n_t, sizeof *ts);
    names = calloc((size_t)n_t, sizeof *names);
    perm = malloc(sizeof(float) * (size_t)L * (D + kvd) * D);
    if (!ts || !names || !perm) { rc = err_set(e, ERR_NOMEM, "import: out of memory"); free(aligned); goto done; }
    int k = 0;
#define ADD(nm, ptr, r, c)                                                                              \
    do {                                                                                                \
        snprintf(names[k], sizeof names[k], "%s", nm);                                                  \
        ts[k] = (struct st_wtensor){.name = names[k], .dtype = ST_F32, .ndim = (c) ? 2 : 1,              \
                                    .shape = {(r), (c)}, .data = (ptr)};                                \
        k++;                                                                                            \
    } while (0)
    ADD("model.embed_tokens.weight", emb, V, D);
    char nm[96];
    for (int l = 0; l < L; l++) {
        float *pq = perm + (size_t)l * (D + kvd) * D, *pk = pq + (size_t)D * D;
        permute_rows(pq, wq + (size_t)l * D * D, h.n_heads, hs, D);
        permute_rows(pk, wk + (size_t)l * kvd * D, h.n_kv_heads, hs, D);
        snprintf(nm, sizeof nm, "model.layers.%d.input_layernorm.weight", l);
        ADD(nm, rms_att + (size_t)l * D, D, 0);
        snprintf(nm, sizeof nm, "model.layers.%d.self_attn.q_proj.weight", l);
        ADD(nm, pq, D, D);
        snprintf(nm, sizeof nm, "model.layers.%d.self_attn.k_proj.weight", l);
        ADD(nm, pk, kvd, D);
        snprintf(nm, sizeof nm, "model.layers.%d.self_attn.v_proj.weight", l);
        ADD(nm, wv + (size_t)l * kvd * D, kvd, D);
        snprintf(nm, sizeof nm, "model.layers.%d.self_attn.o_proj.weight", l);
        ADD(nm, wo + (size_t)l * D * D, D, D);
        snprintf(nm, sizeof nm, "model.layers.%d.post_attention_layernorm.weight", l);
        ADD(nm, rms_ffn + (size_t)l * D, D, 0);
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.gate_proj.weight", l);
        ADD(nm, w1 + (size_t)l * F * D, F, D);
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.down_proj.weight", l);
        ADD(nm, w2 + (size_t)l * D * F, D, F);
        snprintf(nm, sizeof nm, "model.layers.%d.mlp.up_proj.weight", l);
        ADD(nm, w3 + (size_t)l * F * D, F, D);
    }
    ADD("model.norm.weight", rms_final, D, 0);
    if (wcls) ADD("lm_head.weight", wcls, V, D);
#undef ADD

    // a tokenizer given but unusable is an error before anything is written (it was a warning
    // after the weights, exit 0: a model without its tokenizer)
    if (tok_bin && (rc = tok_llama2c_to_json(tok_bin, V, &tok_json, e))) {
        err_prefix(e, "import-llama2c: tokenizer %s is unusable (nothing written; without a tokenizer argument the "
                   "weights import alone)", tok_bin);
        free(aligned);
        goto done;
    }
    if ((rc = mkdir_p(out_dir, e))) { free(aligned); goto done; }
    if ((rc = path_join(path, sizeof path, out_dir, "model.safetensors", e))) { free(aligned); goto done; }
    const char *meta[] = {"format", "pt", "source", "llama2.c import (hifa4-eval import-llama2c)"};
    rc = st_write(path, ts, k, meta, 2, e);
    free(aligned);
    if (rc) goto done;

    struct model_config c = {0};
    c.arch = ARCH_LLAMA;
    c.dim = D, c.hidden_dim = F, c.n_layers = L, c.n_heads = h.n_heads, c.n_kv_heads = h.n_kv_heads;
    c.head_dim = hs, c.vocab_size = V, c.max_seq = h.seq_len;
    c.norm_eps = 1e-5; // run.c rmsnorm
    c.act = ACT_SILU;
    c.tie_embeddings = h.shared_classifier;
    c.rope_theta = 10000.0, c.rope_dim = hs, c.rope_type = ROPE_DEFAULT, c.rope_attn_factor = 1, c.rope_factor = 1;
    c.query_pre_attn_scalar = hs;
    c.bos_id = 1, c.eos_id = 2; // llama2.c sentencepiece convention
    if ((rc = cfg_to_json(&c, "{\"torch_dtype\": \"float32\"}", &cfg_json, e))) goto done;
    if ((rc = path_join(path, sizeof path, out_dir, "config.json", e))) goto done;
    if ((rc = file_write_atomic(path, cfg_json, strlen(cfg_json), e))) goto done;

    if (tok_json) {
        if ((rc = path_join(path, sizeof path, out_dir, "tokenizer.json", e))) goto done;
        if ((rc = file_write_atomic(path, tok_json, strlen(tok_json), e))) goto done;
        *tok_ok = 1;
    }
done:
    free(tok_json);
    free(cfg_json);
    free(perm);
    free(names);
    free(ts);
    free(buf);
    return rc;
}
