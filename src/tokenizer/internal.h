// internal.h: data structures shared by the tokenizer's files. The folder is layered, each file
// calling only the ones listed before it:
//   text.c       string pool, hash tables, UTF-8, piece/match lists, byte buffer, ByteLevel alphabet
//   bpe.c        the BPE merge loop on one word
//   pretok.c     regexes, added-token matching, normalizers, pre-tokenizers
//   decoder.c    decoders
//   tokenizer.c  loading tokenizer.json and the encode/decode pipeline (the public API)
//   llama2c_vocab.c  llama2c tokenizer.bin -> tokenizer.json (uses text.c only)
// Not a public API: only src/tokenizer/*.c and tests/test_tokenizer.c include it.
#ifndef HIFA4_TOK_INTERNAL_H
#define HIFA4_TOK_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/common.h"

#define TOK_MAX_VOCAB (1 << 24)   // ids beyond this are rejected (sizes the id -> piece table)
#define TOK_MAX_STEPS 32          // flattened normalizer / pre-tokenizer / decoder steps

// ---- string arena (all strings the tokenizer keeps live here) ----
struct tok_pool {
    char **blocks;
    int n, cap;
    char *cur;
    size_t left;
};
char *pool_add(struct tok_pool *p, const char *s, size_t len); // NUL-terminated copy or NULL
void pool_free(struct tok_pool *p);

// ---- string -> id hash table (open addressing, keys point into the pool) ----
struct strmap_slot { uint64_t h; const char *s; uint32_t len; int32_t id; };
struct strmap { struct strmap_slot *slots; uint32_t cap, n; };
uint64_t tok_hash_bytes(const char *s, size_t len);
int strmap_init(struct strmap *m, uint32_t expected);
// Sets s -> id (replacing an existing key's id). s must stay valid (pool). 0 or ERR_NOMEM.
int strmap_put(struct strmap *m, const char *s, uint32_t len, int32_t id);
int32_t strmap_get(const struct strmap *m, const char *s, size_t len); // -1 if absent
void strmap_free(struct strmap *m);

// ---- (left id, right id) -> (rank, merged id) ----
struct merge_slot { uint64_t key; uint32_t rank; int32_t id; };
struct mergemap { struct merge_slot *slots; uint32_t cap, n; };
int mergemap_init(struct mergemap *m, uint32_t expected);
int mergemap_put(struct mergemap *m, int32_t a, int32_t b, uint32_t rank, int32_t id);
// Returns 1 and fills rank/id if (a, b) is a merge.
int mergemap_get(const struct mergemap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *id);
void mergemap_free(struct mergemap *m);

// ---- regex (PCRE2, UTF + UCP, JIT when available) ----
struct tok_regex {
    pcre2_code *code;
    char where[200]; // "<file>: <component>.pattern: regex '<pattern>'" for match errors
};
// Compiles an HF (Oniguruma) pattern; \s/\S are rewritten to Unicode White_Space so PCRE2
// matches like Oniguruma (U+0085 yes, U+180E and U+FEFF no). ctx names it in errors.
int regex_compile(struct tok_regex *r, const char *pat, size_t len, const char *ctx, struct err *e);
void regex_free(struct tok_regex *r);

// ---- piece lists: the text as it moves through the pipeline ----
struct piece {
    size_t off;     // into the list's buf
    size_t len;
    int32_t tok;    // >= 0: an added token already resolved to this id; -1: text
    int first;      // the piece starts at offset 0 of the original text (Metaspace "first")
};
struct plist {
    char *buf;
    size_t len, cap;
    struct piece *p;
    int n, cap_p;
};
void plist_reset(struct plist *l);
void plist_free(struct plist *l);
int plist_push(struct plist *l, const char *s, size_t len, int32_t tok, int first);
// Appends bytes to the buffer only (building a piece in place); returns 0 or ERR_NOMEM.
int plist_append(struct plist *l, const char *s, size_t len);
// Registers buf[off, len) as a piece (after plist_append calls); 0 or ERR_NOMEM.
int plist_piece(struct plist *l, size_t off, int32_t tok, int first);

// ---- match lists (HF Pattern::find_matches: the matches and the gaps between them) ----
struct mlist { struct mrange { size_t s, e; int m; } *r; int n, cap; };
int mlist_add(struct mlist *ml, size_t s, size_t e, int m);
// Non-overlapping occurrences of a literal pattern, left to right, with the gaps.
int literal_matches(const char *pat, size_t plen, const char *s, size_t len, struct mlist *ml);

// ---- normalizers ----
enum norm_type { NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_LOWERCASE, NORM_PREPEND, NORM_REPLACE,
                 NORM_STRIP };
struct norm_step {
    enum norm_type type;
    char *a; size_t alen;      // PREPEND: text; REPLACE: literal pattern (when re.code is NULL)
    char *b; size_t blen;      // REPLACE: content
    struct tok_regex re;       // REPLACE with a Regex pattern
    int left, right;           // STRIP
};

// ---- pre-tokenizers ----
enum split_behavior { SPLIT_REMOVED, SPLIT_ISOLATED, SPLIT_MERGED_PREV, SPLIT_MERGED_NEXT, SPLIT_CONTIGUOUS };
enum pretok_type { PT_SPLIT, PT_BYTELEVEL, PT_METASPACE, PT_DIGITS };
enum prepend_scheme { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER };
struct pretok_step {
    enum pretok_type type;
    struct tok_regex re;           // SPLIT with a regex; BYTELEVEL with use_regex (GPT-2 pattern)
    char *lit; size_t litlen;      // SPLIT with a literal String pattern
    enum split_behavior behavior;
    int invert;
    int add_prefix_space;          // BYTELEVEL
    int use_regex;                 // BYTELEVEL
    char *repl; size_t repllen;    // METASPACE replacement (UTF-8 of one char)
    enum prepend_scheme scheme;    // METASPACE
    int split;                     // METASPACE
    int individual;                // DIGITS
};

// ---- decoders ----
enum dec_type { DEC_BYTELEVEL, DEC_METASPACE, DEC_REPLACE, DEC_BYTEFALLBACK, DEC_FUSE, DEC_STRIP };
struct dec_step {
    enum dec_type type;
    char *a; size_t alen;          // REPLACE pattern / STRIP content / METASPACE replacement
    char *b; size_t blen;          // REPLACE content
    int start, stop;               // STRIP
    enum prepend_scheme scheme;    // METASPACE
};

// ---- added tokens: byte trie for leftmost-longest matching on raw text ----
struct trie_node { int32_t child; int32_t sibling; int32_t tok; uint8_t byte; };
struct added_token {
    const char *content; size_t len;
    int32_t id;
    int special, lstrip, rstrip, single_word, normalized;
};
struct trie { struct trie_node *nodes; int n, cap; uint8_t first[256]; };

// ---- the tokenizer ----
struct tokenizer {
    struct tok_pool pool;
    char sha[65];
    // model (BPE)
    struct strmap vocab;             // model vocabulary
    struct mergemap merges;
    const char **id_piece;           // [vocab_size]: added content or vocab string, or NULL
    int vocab_size;
    int32_t *cp_id;                  // [0x10000]: id of a single-code-point piece or -1
    int32_t byte_id[256];            // byte_fallback: id of "<0xXX>" or -1
    int byte_fallback, ignore_merges, fuse_unk;
    int32_t unk_id;                  // -1 if none
    // added tokens
    struct added_token *added;
    int n_added;
    struct strmap added_map;         // content -> index into added
    struct trie trie_raw, trie_norm; // normalized:false / normalized:true tokens
    // pipeline
    struct norm_step norm[TOK_MAX_STEPS]; int n_norm;
    struct pretok_step pretok[TOK_MAX_STEPS]; int n_pretok;
    struct dec_step dec[TOK_MAX_STEPS]; int n_dec;
    int has_decoder;
    // post-processor (single-sequence template)
    int32_t *tpl_pre; int n_pre;     // ids before the sequence
    int32_t *tpl_post; int n_post;   // ids after the sequence
    int bos_id, eos_id;
    int cache_min_pieces;            // encode builds its per-call word cache from this many pre-tokens
};

// ---- pipeline stages (pretok.c, decoder.c; the shared helpers at the end are text.c's) ----
int trie_add(struct trie *tr, const char *s, size_t len, int32_t tok);
void trie_free(struct trie *tr);
// Splits every text piece of in by the added tokens of tr into out (text pieces and resolved
// token pieces). Leftmost-longest, honouring lstrip/rstrip/single_word like HF.
int split_added(const struct tokenizer *t, const struct trie *tr, const struct plist *in, struct plist *out,
                struct err *e);
// Runs the normalizer chain on one string, appending the result as one piece to out.
int normalize_piece(const struct tokenizer *t, const char *s, size_t len, int first, struct plist *out,
                    pcre2_match_data *md, struct err *e);
// Runs one pre-tokenizer step over every text piece of in into out.
int pretok_apply(const struct pretok_step *st, const struct plist *in, struct plist *out, pcre2_match_data *md,
                 struct err *e);
// Decoder chain over tokens (one string per piece); out gets the concatenated text (one piece).
int decode_chain(const struct tokenizer *t, struct plist *toks, struct plist *tmp, struct err *e);
// ByteLevel alphabet (GPT-2 bytes_to_unicode): byte -> UTF-8 (1-2 bytes) and code point -> byte.
const char *bytelevel_char(uint8_t b, int *len, char buf[4]); // returns buf
int bytelevel_byte(uint32_t cp); // -1 if cp is not in the alphabet
// Rust String::from_utf8_lossy: appends s with each maximal invalid subpart replaced by U+FFFD.
int utf8_lossy_append(struct plist *out, const char *s, size_t len);
// Decodes one code point of valid UTF-8 at s (returns its byte length).
int utf8_next(const char *s, size_t len, uint32_t *cp);
// Encodes cp as UTF-8 into out[0..4) (returns its byte length).
int utf8_put(char *out, uint32_t cp);

// ---- BPE (bpe.c) ----
struct bpe_scratch {
    struct bpe_sym { int32_t id; int32_t prev, next; uint32_t len; } *sym;
    int cap_sym;
    struct bpe_merge { uint32_t rank; uint32_t pos; int32_t id, left, right; } *heap; // left/right: pair when queued
    int cap_heap;
};
void bpe_scratch_free(struct bpe_scratch *s);
// Tokenizes one pre-token word with the BPE model, appending ids to *ids (capacity *cap).
int bpe_word(const struct tokenizer *t, const char *w, size_t len, struct bpe_scratch *s, int32_t **ids, int *n,
             int *cap);

// Growable NUL-terminated byte buffer shared by the normalizers and decoders (text.c).
struct tok_sbuf {
    char *s;
    size_t len, cap;
};
// Appends len bytes; 0 or ERR_NOMEM (the buffer is unchanged then).
int tok_sbuf_put(struct tok_sbuf *b, const char *s, size_t len);

#endif
