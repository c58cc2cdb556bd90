// gguf_tokenizer.h: the tokenizer.ggml.* metadata of a GGUF file -> an HF tokenizer.json and
// tokenizer_config.json that src/tokenizer/ (and the Rust `tokenizers` library) encode with.
//   model "gpt2"  -> byte-level BPE (vocab + merges) with the pre-tokenizer tokenizer.ggml.pre
//                    names, as llama.cpp's llama-vocab.cpp splits: smollm (and starcoder,
//                    refact, command-r, codeshell: every \p{N} alone, then the GPT-2 regex),
//                    gpt2/default/olmo/mpt (the GPT-2 regex), llama-bpe/llama3/dbrx/smaug
//                    (Llama 3's regex; merges ignored for whole-word vocabulary hits), qwen2/
//                    stablelm2 (Qwen2's regex, NFC like Qwen's own tokenizer.json).
//   model "llama" -> SentencePiece-style BPE: merges of every vocabulary piece into two pieces
//                    ranked by the piece's score, byte fallback, "▁" dummy prefix
//                    (tokenizer.ggml.add_space_prefix, default on).
// Token types: CONTROL and UNKNOWN -> special added tokens, USER_DEFINED -> non-special added
// tokens (both split out of raw text, as llama.cpp does). BOS/EOS: tokenizer.ggml.bos/eos_token_id
// and add_bos_token/add_eos_token (llama.cpp's defaults when absent: BOS on for "llama" and
// llama-bpe, off for other gpt2 vocabularies).
#ifndef HIFA4_GGUF_TOKENIZER_H
#define HIFA4_GGUF_TOKENIZER_H

#include "base/common.h"
#include "io/gguf.h"

enum gguf_tok_policy {
    GGUF_TOK_PUBLISHED = 0,    // the GGUF metadata as llama.cpp reads it (= the model's own tokenizer)
    // The ids transformers 4.45 AutoTokenizer.from_pretrained(dir, gguf_file=...) gives for a
    // llama-architecture GGUF with a gpt2 vocabulary (its GGUFLlamaConverter): the GPT-2 regex
    // whatever tokenizer.ggml.pre says, bytes missing from the vocabulary -> the unknown token
    // (byte_fallback, fuse_unk), BOS always added. Other files: the same as PUBLISHED.
    GGUF_TOK_TRANSFORMERS = 1,
};

struct gguf_tok_out {
    char *tokenizer_json;        // malloc'd, NUL-terminated
    char *config_json;           // tokenizer_config.json text, malloc'd
    int n_vocab;                 // tokens in tokenizer.ggml.tokens
    int bos_id, eos_id;          // -1 when absent
    int add_bos, add_eos;
    char model[16], pre[48];     // tokenizer.ggml.model / .pre ("" when absent)
};

// Builds both texts from g's tokenizer.ggml.* keys. Errors name the file and key, token index or
// merge index: missing tokens, a token that is not valid UTF-8 or duplicates another, merges
// whose parts or result are not tokens, array lengths that differ, an id out of range
// (ERR_FORMAT); an unknown model or pre-tokenizer (ERR_UNSUPPORTED, listing the supported ones).
// *out is zeroed first; free with gguf_tok_out_free (safe on a zeroed struct).
int gguf_tokenizer_build(const struct gguf *g, enum gguf_tok_policy policy, struct gguf_tok_out *out, struct err *e);
void gguf_tok_out_free(struct gguf_tok_out *o);

// The supported tokenizer.ggml.pre names, comma separated (static storage).
const char *gguf_tok_pre_names(void);

#endif
