// llama2c.h: converts a llama2.c checkpoint (legacy version-0 export: 7 int32 header, fp32
// weights, shared or separate classifier) and its tokenizer.bin into an HF Llama directory
// (config.json, model.safetensors in F32, tokenizer.json). llama2.c rotates interleaved pairs
// (2i, 2i+1) of each head while HF Llama rotates halves (i, i + head_dim/2); the q/k rows are
// permuted so the HF-convention forward reproduces llama2.c exactly.
#ifndef HIFA4_LLAMA2C_H
#define HIFA4_LLAMA2C_H

#include "base/common.h"

struct llama2c_header {
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int shared_classifier; // vocab_size was positive in the file
};

// Reads and validates model_bin (header sizes positive and consistent, file size exactly the
// weights the header implies) and writes out_dir/config.json and out_dir/model.safetensors.
// Then converts tok_bin with tok_llama2c_to_json into out_dir/tokenizer.json; if that
// conversion fails the weights and config are kept, the reason is logged as a warning and
// *tok_ok is set to 0 (the command still succeeds: logits need no tokenizer). tok_bin may be
// NULL (no tokenizer written). Errors name the file and the bad header field.
int llama2c_import(const char *model_bin, const char *tok_bin, const char *out_dir, int *tok_ok, struct err *e);

// Parses the 28-byte header of buf (len bytes) and checks that len matches.
int llama2c_parse_header(struct llama2c_header *h, const void *buf, size_t len, const char *ctx, struct err *e);

#endif
