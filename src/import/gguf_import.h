// gguf_import.h: converts a GGUF model (llama.cpp's file) into an HF directory every other
// command opens: model.safetensors (every tensor dequantized to binary32 exactly as
// gguf.quants.dequantize does, then written as F32 or rounded to BF16), config.json from the
// GGUF metadata, tokenizer.json + tokenizer_config.json (gguf_tokenizer.h).
// Architectures (general.architecture): llama -> LlamaForCausalLM, qwen2 -> Qwen2ForCausalLM,
// qwen3 -> Qwen3ForCausalLM, gemma2 -> Gemma2ForCausalLM, phi3 -> Phi3ForCausalLM, gemma3 ->
// Gemma3ForCausalLM (window pattern 6 and local RoPE base 10000: llama.cpp's hard-coded values,
// the files carry neither). Conventions of llama.cpp's convert_hf_to_gguf.py undone: the Q/K row
// permutation of llama-arch models (reversed as transformers' GGUF loader reverses it), Gemma's
// "+1" baked into every norm weight (Gemma3's q/k norms too),
// Llama 3's rope scaling stored as rope_freqs.weight (matched back to HF's llama3 parameters),
// Phi-3's LongRoPE factors stored as tensors. No output.weight means tied embeddings.
// Provenance (GGUF file name, sha256, version, tensor types, file type, what was written) goes
// into the safetensors __metadata__, which run.json records.
#ifndef HIFA4_GGUF_IMPORT_H
#define HIFA4_GGUF_IMPORT_H

#include "base/common.h"
#include "import/gguf_tokenizer.h"

struct gguf_import_opts {
    int bf16;                       // 0 (default): write F32 (the dequantized values exactly); 1: BF16
    enum gguf_tok_policy tok_policy; // published (default) or transformers (gguf_tokenizer.h)
};

struct gguf_import_info {
    char arch[48];                  // HF architecture written to config.json
    int n_tensors;                  // tensors written
    int tied;                       // no output.weight: lm_head = embed_tokens
    char types[256];                // GGUF tensor types with counts, e.g. "Q4_1 x210, F32 x61, Q8_0 x1"
    char sha256[65];                // of the GGUF file
    char file_type[32];             // general.file_type as llama.cpp names it ("MOSTLY_Q4_1")
    int n_vocab;                    // tokenizer tokens
};

// Reads gguf_path (validated by gguf_open), maps its tensors and metadata, builds the tokenizer,
// and only then writes out_dir/{config.json, tokenizer.json, tokenizer_config.json,
// model.safetensors} (created; model.safetensors streamed one tensor at a time). Errors name the
// file and the key or tensor: unsupported architecture or tensor type (ERR_UNSUPPORTED, listing
// what is supported), a tensor the architecture does not use, a missing one, a shape that does
// not fit the metadata, inconsistent sizes (ERR_FORMAT). info may be NULL.
int gguf_import(const char *gguf_path, const char *out_dir, const struct gguf_import_opts *o,
                struct gguf_import_info *info, struct err *e);

// Everything gguf_import checks before writing (architecture, config, tensor plan and types,
// tokenizer) on an already parsed file, writing nothing. Used by the fuzz target.
struct gguf;
int gguf_import_check(const struct gguf *g, enum gguf_tok_policy policy, struct err *e);

// Supported general.architecture values, comma separated (static storage).
const char *gguf_import_arch_names(void);

#endif
