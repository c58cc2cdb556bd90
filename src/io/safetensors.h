// safetensors.h: read-only mmap of safetensors checkpoints (one file, or the shards of a
// model.safetensors.index.json) with full header validation, and an atomic writer. Knows
// nothing about any model. Format: 8-byte little-endian header length N, N bytes of JSON
// {name: {dtype, shape, data_offsets:[begin,end]}, "__metadata__": {str: str}}, then data.
#ifndef HIFA4_SAFETENSORS_H
#define HIFA4_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

struct cJSON;

#define ST_MAX_DIMS 8
#define ST_MAX_FILES 256
#define ST_MAX_HEADER (100u << 20) // 100 MB (issue: header length <= 100 MB)

enum st_dtype { ST_F32, ST_F16, ST_BF16, ST_I32, ST_I64, ST_U8, ST_I8, ST_DTYPE_COUNT };

struct st_tensor {
    char *name;                  // owned by struct safetensors
    enum st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    int64_t numel;
    const void *data;            // points into the read-only mapping; may be unaligned
    size_t nbytes;
    int file;                    // index of the shard it lives in
};

struct st_map {
    char *path;
    const unsigned char *base;   // mmap'd file (PROT_READ, MAP_PRIVATE), or the caller's buffer
    size_t size;
    int borrowed;                // 1: base is the caller's (st_open_mem), never unmapped
};

struct safetensors {
    int n_files;
    struct st_map files[ST_MAX_FILES];
    int n_tensors;
    struct st_tensor *tensors;   // sorted by name
    char *metadata_json;         // "__metadata__" of the first file as JSON text, or NULL
    struct cJSON *metadata;      // the same, parsed (owned), or NULL
};

// Opens `path`: a .safetensors file, a *.index.json (shards resolved next to it), or a
// directory holding model.safetensors.index.json or model.safetensors. Validates everything
// (header length within file and <= 100 MB, JSON types, dtype names, shape * dsize == bytes,
// offsets inside the data area, overflow, duplicate names across shards); errors name the
// file, tensor and field. An unsupported dtype (e.g. F8_E4M3) is an ERR_UNSUPPORTED naming
// tensor and dtype. Zeroed struct on error; st_close is safe on it.
int st_open(struct safetensors *st, const char *path, struct err *e);
// The same validation over one safetensors file already in memory (fuzzing, tests): buf must
// stay valid and unchanged until st_close, which does not free it; name stands for the path in
// errors. No shards.
int st_open_mem(struct safetensors *st, const void *buf, size_t len, const char *name, struct err *e);
void st_close(struct safetensors *st);

const struct st_tensor *st_find(const struct safetensors *st, const char *name);
// String value of a __metadata__ key of the first file, or NULL. Points into st (valid until
// st_close), so several values can be held at once.
const char *st_meta(const struct safetensors *st, const char *key);

size_t st_dtype_size(enum st_dtype t);
const char *st_dtype_name(enum st_dtype t);

// Converts a float tensor (F32/F16/BF16) to binary32 (exact widening). I32/I64 -> float is
// an error. dst must hold t->numel floats.
int st_to_f32(float *dst, const struct st_tensor *t, struct err *e);
// Copies an integer tensor (I32/I64/U8/I8) into int32 (range-checked).
int st_to_i32(int32_t *dst, const struct st_tensor *t, struct err *e);
// The dtypes st_check accepts: any, or a floating one (F32/F16/BF16).
enum st_dtype_class { ST_ANY_DTYPE, ST_FLOATING };
// Checks that t exists with the given dtype class and shape; message names tensor and shapes.
// ndim < 0 skips the shape check.
int st_check(const struct safetensors *st, const char *name, enum st_dtype_class cls, int ndim,
             const int64_t *shape, const struct st_tensor **out, struct err *e);

// Fingerprint of the checkpoint: sha256 over every shard's header bytes and size plus three
// 4 KiB windows (start, middle, end) of every tensor's data. Cheap for 16 GB models (reads
// ~12 KiB per tensor) and changes when any name, shape, dtype, offset or sampled weight does.
int st_fingerprint(const struct safetensors *st, char hex[65], struct err *e);

// ---- writer ----
struct st_wtensor {
    const char *name;
    enum st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const void *data;            // numel * dtype size bytes, little-endian
};
// Writes tensors in the given order (offsets 8-byte aligned as HF does) with string
// metadata pairs meta[2i] = key, meta[2i+1] = value (n_meta pairs), atomically (tmp + rename).
int st_write(const char *path, const struct st_wtensor *ts, int n, const char *const *meta,
             int n_meta, struct err *e);
// What produces the bytes of a streamed tensor: fn(ctx, i, dst, e) writes tensor i into dst.
struct st_fill {
    int (*fn)(void *ctx, int i, void *dst, struct err *e);
    void *ctx;
};
// The same file, streamed: ts[i].data is ignored and fill.fn(fill.ctx, i, dst, e) writes tensor
// i's bytes into dst (sized for it), one tensor at a time, so the peak memory is the largest
// tensor, not the checkpoint. An error from fill aborts the write (no file is left behind).
int st_write_stream(const char *path, const struct st_wtensor *ts, int n, const char *const *meta, int n_meta,
                    struct st_fill fill, struct err *e);

#endif
