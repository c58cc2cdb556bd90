// gguf_build.h: writes GGUF bytes for tests (and the fuzz seeds): byte-level primitives for
// hand-made malformed files, and gguf_build() for well-formed ones (header, key/value pairs,
// tensor infos, padding, aligned data), the layout llama.cpp's gguf writer produces.
#ifndef HIFA4_TEST_GGUF_BUILD_H
#define HIFA4_TEST_GGUF_BUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct gb {
    uint8_t *b;
    size_t n, cap;
};

static inline void gb_raw(struct gb *g, const void *p, size_t n) {
    if (g->n + n > g->cap) {
        g->cap = (g->n + n) * 2 + 64;
        g->b = realloc(g->b, g->cap);
    }
    memcpy(g->b + g->n, p, n);
    g->n += n;
}
static inline void gb_le(struct gb *g, uint64_t v, int n) {
    uint8_t x[8];
    for (int i = 0; i < n; i++) x[i] = (uint8_t)(v >> (8 * i));
    gb_raw(g, x, (size_t)n);
}
static inline void gb_u32(struct gb *g, uint32_t v) { gb_le(g, v, 4); }
static inline void gb_u64(struct gb *g, uint64_t v) { gb_le(g, v, 8); }
static inline void gb_f32(struct gb *g, float f) { uint32_t u; memcpy(&u, &f, 4); gb_u32(g, u); }
static inline void gb_strn(struct gb *g, const char *s, size_t n) { gb_u64(g, n); gb_raw(g, s, n); }
static inline void gb_str(struct gb *g, const char *s) { gb_strn(g, s, strlen(s)); }
static inline void gb_pad(struct gb *g, size_t align) { while (g->n % align) gb_raw(g, "", 1); }

// key/value helpers (value types: gguf.h enum gguf_vtype)
static inline void gb_kv_u32(struct gb *g, const char *k, uint32_t v) { gb_str(g, k); gb_u32(g, 4); gb_u32(g, v); }
static inline void gb_kv_f32(struct gb *g, const char *k, float v) { gb_str(g, k); gb_u32(g, 6); gb_f32(g, v); }
static inline void gb_kv_bool(struct gb *g, const char *k, int v) { uint8_t b = (uint8_t)v; gb_str(g, k); gb_u32(g, 7); gb_raw(g, &b, 1); }
static inline void gb_kv_str(struct gb *g, const char *k, const char *v) { gb_str(g, k); gb_u32(g, 8); gb_str(g, v); }
static inline void gb_kv_strs(struct gb *g, const char *k, const char *const *v, size_t n) {
    gb_str(g, k), gb_u32(g, 9), gb_u32(g, 8), gb_u64(g, n);
    for (size_t i = 0; i < n; i++) gb_str(g, v[i]);
}
static inline void gb_kv_i32s(struct gb *g, const char *k, const int32_t *v, size_t n) {
    gb_str(g, k), gb_u32(g, 9), gb_u32(g, 5), gb_u64(g, n);
    for (size_t i = 0; i < n; i++) gb_u32(g, (uint32_t)v[i]);
}
static inline void gb_kv_f32s(struct gb *g, const char *k, const float *v, size_t n) {
    gb_str(g, k), gb_u32(g, 9), gb_u32(g, 6), gb_u64(g, n);
    for (size_t i = 0; i < n; i++) gb_f32(g, v[i]);
}

struct gb_tensor {
    const char *name;
    int n_dims;
    int64_t ne[4];
    uint32_t type;
    const void *data;
    size_t nbytes;
};

// A whole file: header (version 3), the n_kv pairs already encoded in kv, the tensor infos
// (offsets packed in order, each padded to `align`), padding, the data. Returns the buffer
// (caller frees) and its size in *size.
static inline uint8_t *gguf_build(const struct gb *kv, uint64_t n_kv, const struct gb_tensor *ts, int n_t,
                                  size_t align, size_t *size) {
    struct gb g = {0};
    gb_raw(&g, "GGUF", 4);
    gb_u32(&g, 3);
    gb_u64(&g, (uint64_t)n_t);
    gb_u64(&g, n_kv);
    if (kv && kv->n) gb_raw(&g, kv->b, kv->n);
    size_t off = 0;
    for (int i = 0; i < n_t; i++) {
        gb_str(&g, ts[i].name);
        gb_u32(&g, (uint32_t)ts[i].n_dims);
        for (int d = 0; d < ts[i].n_dims; d++) gb_u64(&g, (uint64_t)ts[i].ne[d]);
        gb_u32(&g, ts[i].type);
        gb_u64(&g, off);
        off += (ts[i].nbytes + align - 1) / align * align;
    }
    gb_pad(&g, align);
    for (int i = 0; i < n_t; i++) {
        gb_raw(&g, ts[i].data, ts[i].nbytes);
        gb_pad(&g, align);
    }
    *size = g.n;
    return g.b;
}

#endif
