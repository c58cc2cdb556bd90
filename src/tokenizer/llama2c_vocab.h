// llama2c_vocab.h: converts a llama2.c tokenizer.bin (SentencePiece-derived vocab with scores)
// into an HF tokenizer.json whose encoding reproduces llama2.c's encode() (BOS + dummy-prefix
// space, score-ordered merges, byte fallback). Used by `import-llama2c`.
#ifndef HIFA4_TOK_LLAMA2C_H
#define HIFA4_TOK_LLAMA2C_H

#include "base/common.h"

// Reads `path` (llama2.c tokenizer format: int32 max_token_length, then vocab_size records of
// float score, int32 len, len bytes) and returns a malloc'd NUL-terminated tokenizer.json text
// in *json. Errors name the file and the record.
int tok_llama2c_to_json(const char *path, int vocab_size, char **json, struct err *e);

#endif
