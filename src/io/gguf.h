// gguf.h: validated read-only access to GGUF files (llama.cpp's container: versions 2 and 3,
// little-endian). Knows no model: it yields typed metadata values and tensor descriptors whose
// data point into the file. Format: "GGUF", u32 version, u64 tensor_count, u64 kv_count, the
// key/value pairs (key string, u32 value type, value; strings are u64 length + bytes; arrays
// are u32 element type + u64 count + elements), the tensor infos (name, u32 n_dims, u64 ne[n],
// u32 ggml type, u64 offset), padding to general.alignment (default 32), then the data.
#ifndef HIFA4_GGUF_H
#define HIFA4_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

#define GGUF_MAX_DIMS 4              // GGML_MAX_DIMS
#define GGUF_MAX_KEY 65535           // the GGUF spec's key length limit
#define GGUF_MAX_NAME 1024           // tensor name bytes (ggml itself keeps 63)
#define GGUF_DEFAULT_ALIGNMENT 32

enum gguf_vtype {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5, GGUF_F32 = 6,
    GGUF_BOOL = 7, GGUF_STR = 8, GGUF_ARR = 9, GGUF_U64 = 10, GGUF_I64 = 11, GGUF_F64 = 12,
    GGUF_VTYPE_COUNT
};

// A string value: bytes inside the file (not NUL-terminated; may hold any bytes).
struct gguf_str {
    const char *s;
    size_t len;
};

struct gguf_kv {
    char *key;                  // NUL-terminated copy (owned by struct gguf)
    enum gguf_vtype type;       // GGUF_ARR for an array
    enum gguf_vtype elem;       // element type of an array (= type for a scalar); never GGUF_ARR
    uint64_t n;                 // number of elements (1 for a scalar)
    const uint8_t *data;        // numbers and bools: n little-endian values in the file
    struct gguf_str *strs;      // GGUF_STR values and string arrays: n entries (owned), else NULL
    size_t offset;              // file offset of the value (for messages)
};

struct gguf_tensor {
    char *name;                 // NUL-terminated copy (owned by struct gguf)
    uint32_t type;              // enum ggml_type (io/ggml_quants.h); a type ggml defines
    int n_dims;                 // 1..4
    int64_t ne[GGUF_MAX_DIMS];  // ggml order: ne[0] is the contiguous (row) length; unused = 1
    int64_t numel;
    uint64_t offset;            // relative to the data section (a multiple of the alignment)
    const uint8_t *data;        // inside the file; any alignment relative to the process
    size_t nbytes;
};

struct gguf {
    char *path;                 // file path, or the context name of gguf_parse
    const uint8_t *base;        // whole file (mmap'd by gguf_open, borrowed by gguf_parse)
    size_t size;
    int mapped;
    uint32_t version;
    uint32_t alignment;
    size_t data_offset;         // file offset of the data section
    int64_t n_kv;
    struct gguf_kv *kv;         // file order
    int64_t n_tensors;
    struct gguf_tensor *tensors; // file order
    struct gguf_tensor **by_name; // the tensors sorted by name
};

// Maps `path` read-only and parses it with gguf_parse. Zeroed struct on error; gguf_close is
// safe on it.
int gguf_open(struct gguf *g, const char *path, struct err *e);
// Parses size bytes at buf (borrowed: must outlive g) as a GGUF file; ctx names it in errors.
// Validates everything before any allocation is sized by it: magic, version (2 or 3; 1 and
// big-endian files are ERR_UNSUPPORTED), counts against the bytes left, string lengths, key
// length and bytes (no NUL), value types (nested arrays are refused, as ggml does), bools 0/1,
// duplicate keys, general.alignment (a u32 power of two), tensor names (non-empty, no NUL,
// unique), n_dims 1..4, dims and their product, ggml type ids, offsets (aligned, data inside
// the file, no two tensors overlapping). Every error is one line naming the file, the key or
// tensor (or the byte offset for truncation) and the bad value.
int gguf_parse(struct gguf *g, const void *buf, size_t size, const char *ctx, struct err *e);
void gguf_close(struct gguf *g);

const char *gguf_vtype_name(uint32_t t); // "UINT32", ... or "?"

const struct gguf_kv *gguf_find_kv(const struct gguf *g, const char *key);
const struct gguf_tensor *gguf_find_tensor(const struct gguf *g, const char *name);

// Typed getters. required = 0: a missing key leaves *out unchanged and returns 0. A present
// key of the wrong type is ERR_FORMAT "<file>: key '<key>': expected <what>, got <TYPE>".
// Integers: any integer type (a u64 above INT64_MAX is ERR_RANGE). Floats: F32, F64 or any
// integer type. Strings: *out points into the file.
int gguf_get_int(const struct gguf *g, const char *key, int64_t *out, int required, struct err *e);
int gguf_get_float(const struct gguf *g, const char *key, double *out, int required, struct err *e);
int gguf_get_bool(const struct gguf *g, const char *key, int *out, int required, struct err *e);
int gguf_get_str(const struct gguf *g, const char *key, struct gguf_str *out, int required, struct err *e);
// An array whose elements are of class `elem` (GGUF_STR, or GGUF_I64 for any integer type,
// GGUF_F64 for any float type); *out is NULL when absent and not required.
int gguf_get_arr(const struct gguf *g, const char *key, enum gguf_vtype elem, const struct gguf_kv **out,
                 int required, struct err *e);
// Element i (< kv->n) of a numeric array or scalar, converted.
int64_t gguf_kv_int(const struct gguf_kv *kv, uint64_t i);
double gguf_kv_float(const struct gguf_kv *kv, uint64_t i);

// sha256 of the whole file (64 hex digits + NUL).
void gguf_sha256(const struct gguf *g, char hex[65]);

#endif
