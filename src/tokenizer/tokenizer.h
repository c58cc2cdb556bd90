// tokenizer.h: Hugging Face tokenizer.json (BPE models) -> token ids and back, exactly like the
// Rust `tokenizers` library: added/special tokens split out of the raw text, normalizers (NFC,
// Prepend, Replace, ...), pre-tokenizers (Split with the file's own regex via PCRE2, ByteLevel,
// Metaspace, Digits), byte-level or SentencePiece-style (byte_fallback) BPE, the
// TemplateProcessing post-processor and the decoders. Unigram/WordPiece models are not supported.
#ifndef HIFA4_TOKENIZER_H
#define HIFA4_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

struct tokenizer;

// Loads a tokenizer. path: a directory holding tokenizer.json or tokenizer.json.zst (+ optional
// tokenizer_config.json, read for bos_token/eos_token), or a tokenizer.json[.zst] file.
// *out is owned by the caller (tok_free). Errors: ERR_NOTFOUND (no tokenizer.json), ERR_IO,
// ERR_FORMAT (bad JSON, missing model, bad merges, invalid regex; the message names the file and
// field), ERR_UNSUPPORTED (unknown component type, named in the message), ERR_NOMEM.
int tok_load(struct tokenizer **out, const char *path, struct err *e);
// Frees everything tok_load allocated; NULL is fine.
void tok_free(struct tokenizer *t);

// Encodes len bytes of UTF-8 text (invalid UTF-8 -> ERR_FORMAT naming the byte offset).
// add_special=1 applies the post-processor (BOS/EOS) like HF add_special_tokens=True; added
// tokens in the text are split out either way (HF's default split_special_tokens=False).
// The post-processor is tokenizer.json's, except when tokenizer_config.json names a
// Llama/CodeLlama/Gemma tokenizer_class: then, as transformers does for those classes, it is
// [BOS if add_bos_token (default 1)] text [EOS if add_eos_token (default 0)].
// *ids is malloc'd (caller frees; non-NULL even when *n == 0), *n its length.
// Thread-safe: several threads may encode with one tokenizer at once (t is read-only).
int tok_encode(const struct tokenizer *t, const char *text, size_t len, int add_special, int32_t **ids,
               int *n, struct err *e);
// Decodes ids to UTF-8 text like HF Tokenizer.decode(ids, skip_special_tokens=False) (the
// tokenizers library; no transformers clean_up_tokenization_spaces). *text is malloc'd and
// NUL-terminated (caller frees); *len excludes the NUL. An id outside [0, tok_vocab_size) is
// ERR_RANGE; ids that fall in a gap of the vocabulary are skipped as HF does. Thread-safe.
int tok_decode(const struct tokenizer *t, const int32_t *ids, int n, char **text, size_t *len, struct err *e);

int tok_vocab_size(const struct tokenizer *t);      // including added tokens (max id + 1)
// BOS/EOS: tokenizer_config.json's bos_token/eos_token when present (may be a token the
// post-processor does not add, as for Llama 3; Llama/Gemma classes default to <s>/</s> and
// <bos>/<eos>); otherwise the first/last special token of the post-processor template, or for
// EOS a token named </s>, <|endoftext|>, <eos> or <|end_of_text|>.
int tok_bos_id(const struct tokenizer *t);          // -1 if none
int tok_eos_id(const struct tokenizer *t);          // -1 if none
int tok_adds_bos(const struct tokenizer *t);        // 1 if add_special=1 prepends BOS
// Vocabulary string of id (added token content first, as HF id_to_token), or NULL for an id
// out of range or in a gap. Points into t; valid until tok_free.
const char *tok_piece(const struct tokenizer *t, int id);
// sha256 (src/sha256.h) of the tokenizer.json bytes (decompressed when read from .zst): 64
// lower-case hex digits + NUL. Returns 0.
int tok_hash(const struct tokenizer *t, char hex[65]);

// ---- additions ----
// 1 if add_special=1 appends EOS (TemplateProcessing ending with a special token).
int tok_adds_eos(const struct tokenizer *t);
// Id of a vocabulary or added-token string (exact bytes), or -1.
int tok_piece_id(const struct tokenizer *t, const char *piece, size_t len);
// Loads from tokenizer.json text already in memory (ctx names it in errors; config_json may
// be NULL or the text of tokenizer_config.json). Same contract as tok_load.
int tok_load_json(struct tokenizer **out, const char *json, size_t len, const char *config_json,
                  const char *ctx, struct err *e);

#endif
