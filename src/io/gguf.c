// gguf.c: validated GGUF reader (see gguf.h). Every count and length is checked against the
// bytes left in the file before anything is allocated from it, so a hostile header can neither
// read outside the buffer nor make us allocate more than a small multiple of the file size.
#include "io/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sha256.h"
#include "io/ggml_quants.h"

static const char *const vtype_names[GGUF_VTYPE_COUNT] = {
    "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
    "BOOL",  "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64",
};
static const uint8_t vtype_size[GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *gguf_vtype_name(uint32_t t) { return t < GGUF_VTYPE_COUNT ? vtype_names[t] : "?"; }

// ---- cursor over the file bytes ----
struct cur {
    const uint8_t *p;
    size_t size, pos;
    const char *ctx;
    struct err *e;
};

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static int truncated(struct cur *c, size_t need, const char *what) {
    return err_set(c->e, ERR_FORMAT, "%s: truncated: %s needs %zu bytes at offset %zu, file is %zu bytes", c->ctx,
                   what, need, c->pos, c->size);
}

static int rd(struct cur *c, int n, uint64_t *v, const char *what) {
    *v = 0;
    if (c->size - c->pos < (size_t)n) return truncated(c, (size_t)n, what);
    *v = le(c->p + c->pos, n);
    c->pos += (size_t)n;
    return 0;
}

// Printable, bounded rendering of untrusted bytes for messages.
static const char *brief(const char *s, size_t n, char *buf, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\\') buf[o++] = (char)ch;
        else o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
        if (i + 1 < n && o + 8 >= cap) { memcpy(buf + o, "...", 3); o += 3; break; }
    }
    buf[o] = 0;
    return buf;
}

// A string: u64 length, then the bytes, which must fit in the file.
static int rd_str(struct cur *c, struct gguf_str *s, const char *what) {
    uint64_t len = 0;
    s->s = NULL;
    s->len = 0;
    int rc = rd(c, 8, &len, what);
    if (rc) return rc;
    if (len > c->size - c->pos)
        return err_set(c->e, ERR_FORMAT, "%s: %s: string length %llu at offset %zu runs past the end of the file (%zu bytes)",
                       c->ctx, what, (unsigned long long)len, c->pos - 8, c->size);
    s->s = (const char *)c->p + c->pos;
    s->len = (size_t)len;
    c->pos += (size_t)len;
    return 0;
}

// Key or tensor name: non-empty, at most max bytes, no NUL; returns a NUL-terminated copy.
static int rd_name(struct cur *c, char **out, size_t max, const char *what) {
    struct gguf_str s = {0};
    int rc = rd_str(c, &s, what);
    if (rc) return rc;
    char b[128];
    if (s.len == 0) return err_set(c->e, ERR_FORMAT, "%s: %s at offset %zu is empty", c->ctx, what, c->pos - 8);
    if (s.len > max)
        return err_set(c->e, ERR_FORMAT, "%s: %s '%s' is %zu bytes long (max %zu)", c->ctx, what,
                       brief(s.s, s.len, b, sizeof b), s.len, max);
    if (memchr(s.s, 0, s.len))
        return err_set(c->e, ERR_FORMAT, "%s: %s '%s' contains a NUL byte", c->ctx, what, brief(s.s, s.len, b, sizeof b));
    *out = malloc(s.len + 1);
    if (!*out) return err_set(c->e, ERR_NOMEM, "%s: out of memory", c->ctx);
    memcpy(*out, s.s, s.len);
    (*out)[s.len] = 0;
    return 0;
}

// ---- metadata ----
static int rd_value(struct cur *c, struct gguf_kv *kv) {
    uint64_t t = 0, n = 1;
    int rc = rd(c, 4, &t, "value type");
    if (rc) return rc;
    if (t >= GGUF_VTYPE_COUNT)
        return err_set(c->e, ERR_FORMAT, "%s: key '%s': unknown value type %llu", c->ctx, kv->key, (unsigned long long)t);
    kv->type = kv->elem = (enum gguf_vtype)t;
    if (t == GGUF_ARR) {
        if ((rc = rd(c, 4, &t, "array element type")) || (rc = rd(c, 8, &n, "array length"))) return rc;
        if (t == GGUF_ARR)
            return err_set(c->e, ERR_UNSUPPORTED, "%s: key '%s': nested arrays are not supported (as in ggml)", c->ctx, kv->key);
        if (t >= GGUF_VTYPE_COUNT)
            return err_set(c->e, ERR_FORMAT, "%s: key '%s': unknown array element type %llu", c->ctx, kv->key,
                           (unsigned long long)t);
        kv->elem = (enum gguf_vtype)t;
        // every element takes at least one byte (8 for strings): bound n by the bytes left
        size_t min = t == GGUF_STR ? 8 : vtype_size[t];
        if (n > (c->size - c->pos) / min)
            return err_set(c->e, ERR_FORMAT, "%s: key '%s': array of %llu %s elements needs more than the %zu bytes left",
                           c->ctx, kv->key, (unsigned long long)n, vtype_names[t], c->size - c->pos);
    }
    kv->n = n;
    kv->offset = c->pos;
    if (kv->elem == GGUF_STR) {
        kv->strs = malloc((size_t)(n ? n : 1) * sizeof *kv->strs);
        if (!kv->strs) return err_set(c->e, ERR_NOMEM, "%s: key '%s': out of memory for %llu strings", c->ctx, kv->key,
                                      (unsigned long long)n);
        char what[160];
        for (uint64_t i = 0; i < n; i++) {
            snprintf(what, sizeof what, "key '%.100s' string %llu", kv->key, (unsigned long long)i);
            if ((rc = rd_str(c, &kv->strs[i], what))) return rc;
        }
        return 0;
    }
    size_t bytes = (size_t)n * vtype_size[kv->elem];
    if (bytes > c->size - c->pos) return truncated(c, bytes, "metadata value");
    kv->data = c->p + c->pos;
    c->pos += bytes;
    if (kv->elem == GGUF_BOOL)
        for (uint64_t i = 0; i < n; i++)
            if (kv->data[i] > 1)
                return err_set(c->e, ERR_FORMAT, "%s: key '%s': bool value %u is not 0 or 1", c->ctx, kv->key, kv->data[i]);
    return 0;
}

static int key_cmp(const void *a, const void *b) {
    return strcmp((*(const struct gguf_kv *const *)a)->key, (*(const struct gguf_kv *const *)b)->key);
}

// A key given twice: sorted, O(n log n) (a pairwise scan took minutes on 300,000 keys).
static int dup_keys(const struct gguf *g, struct cur *c) {
    if (g->n_kv < 2) return 0;
    const struct gguf_kv **k = malloc((size_t)g->n_kv * sizeof *k);
    if (!k) return err_set(c->e, ERR_NOMEM, "%s: out of memory for %lld keys", c->ctx, (long long)g->n_kv);
    for (int64_t i = 0; i < g->n_kv; i++) k[i] = &g->kv[i];
    qsort(k, (size_t)g->n_kv, sizeof *k, key_cmp);
    int rc = 0;
    for (int64_t i = 1; i < g->n_kv && !rc; i++)
        if (!strcmp(k[i - 1]->key, k[i]->key)) rc = err_set(c->e, ERR_FORMAT, "%s: duplicate key '%s'", c->ctx, k[i]->key);
    free(k);
    return rc;
}

static int read_kvs(struct gguf *g, struct cur *c, uint64_t n_kv) {
    g->kv = calloc((size_t)(n_kv ? n_kv : 1), sizeof *g->kv);
    if (!g->kv) return err_set(c->e, ERR_NOMEM, "%s: out of memory for %llu keys", c->ctx, (unsigned long long)n_kv);
    int rc;
    for (uint64_t i = 0; i < n_kv; i++) {
        struct gguf_kv *kv = &g->kv[i];
        char what[64];
        snprintf(what, sizeof what, "key %llu", (unsigned long long)i);
        if ((rc = rd_name(c, &kv->key, GGUF_MAX_KEY, what))) return rc;
        g->n_kv = (int64_t)i + 1;
        if ((rc = rd_value(c, kv))) return rc;
    }
    if ((rc = dup_keys(g, c))) return rc;
    const struct gguf_kv *al = gguf_find_kv(g, "general.alignment");
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    if (al) {
        if (al->type != GGUF_U32)
            return err_set(c->e, ERR_FORMAT, "%s: key 'general.alignment': expected UINT32, got %s", c->ctx,
                           vtype_names[al->type]);
        uint32_t a = (uint32_t)le(al->data, 4);
        if (a == 0 || (a & (a - 1)))
            return err_set(c->e, ERR_FORMAT, "%s: key 'general.alignment' = %u is not a power of two", c->ctx, a);
        g->alignment = a;
    }
    return 0;
}

// ---- tensors ----
static int read_tensor_info(struct gguf *g, struct cur *c, struct gguf_tensor *t, uint64_t i) {
    char what[64];
    snprintf(what, sizeof what, "tensor %llu name", (unsigned long long)i);
    int rc = rd_name(c, &t->name, GGUF_MAX_NAME, what);
    if (rc) return rc;
    g->n_tensors = (int64_t)i + 1;
    uint64_t nd = 0, v = 0;
    snprintf(what, sizeof what, "tensor '%.40s' header", t->name);
    if ((rc = rd(c, 4, &nd, what))) return rc;
    if (nd < 1 || nd > GGUF_MAX_DIMS)
        return err_set(c->e, ERR_FORMAT, "%s: tensor '%s': n_dims = %llu (must be 1..%d)", c->ctx, t->name,
                       (unsigned long long)nd, GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    size_t numel = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d >= t->n_dims) continue;
        if ((rc = rd(c, 8, &v, what))) return rc;
        if (v > (uint64_t)INT64_MAX || mul_size(numel, (size_t)v, &numel) || numel > (size_t)INT64_MAX)
            return err_set(c->e, ERR_FORMAT, "%s: tensor '%s': ne[%d] = %llu makes the element count overflow", c->ctx,
                           t->name, d, (unsigned long long)v);
        t->ne[d] = (int64_t)v;
    }
    t->numel = (int64_t)numel;
    if ((rc = rd(c, 4, &v, what))) return rc;
    if (!ggml_type_name((uint32_t)v) || v >= GGML_TYPE_MAX)
        return err_set(c->e, ERR_FORMAT, "%s: tensor '%s': unknown ggml type %llu", c->ctx, t->name, (unsigned long long)v);
    t->type = (uint32_t)v;
    if (t->ne[0] % ggml_blck_size(t->type))
        return err_set(c->e, ERR_FORMAT, "%s: tensor '%s': row length ne[0] = %lld is not a multiple of the %s block size %d",
                       c->ctx, t->name, (long long)t->ne[0], ggml_type_name(t->type), ggml_blck_size(t->type));
    struct err e2 = {0};
    if (ggml_row_bytes(t->type, t->numel, &t->nbytes, &e2))
        return err_set(c->e, ERR_FORMAT, "%s: tensor '%s': %s", c->ctx, t->name, e2.msg);
    if ((rc = rd(c, 8, &t->offset, what))) return rc;
    if (t->offset % g->alignment)
        return err_set(c->e, ERR_FORMAT, "%s: tensor '%s': offset %llu is not a multiple of the alignment %u", c->ctx,
                       t->name, (unsigned long long)t->offset, g->alignment);
    return 0;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp((*(const struct gguf_tensor *const *)a)->name, (*(const struct gguf_tensor *const *)b)->name);
}
static int cmp_offset(const void *a, const void *b) {
    uint64_t x = (*(const struct gguf_tensor *const *)a)->offset, y = (*(const struct gguf_tensor *const *)b)->offset;
    return x < y ? -1 : x > y;
}

// Places the data section and checks every tensor's bytes: inside the file, no overlaps,
// unique names. Leaves g->by_name sorted by name.
static int place_tensors(struct gguf *g, struct cur *c) {
    size_t a = g->alignment, off = c->pos;
    size_t pad = (a - off % a) % a;
    g->data_offset = off + pad;
    if (g->n_tensors > 0 && g->data_offset > c->size)
        return err_set(c->e, ERR_FORMAT, "%s: truncated: the data section would start at offset %zu, file is %zu bytes",
                       c->ctx, g->data_offset, c->size);
    size_t data_size = g->n_tensors > 0 ? c->size - g->data_offset : 0;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        struct gguf_tensor *t = &g->tensors[i];
        if (t->offset > data_size || t->nbytes > data_size - t->offset)
            return err_set(c->e, ERR_FORMAT, "%s: tensor '%s': data [%llu, +%zu) lies outside the data section (%zu bytes "
                           "from offset %zu)", c->ctx, t->name, (unsigned long long)t->offset, t->nbytes, data_size,
                           g->data_offset);
        t->data = c->p + g->data_offset + t->offset;
    }
    g->by_name = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *g->by_name);
    if (!g->by_name) return err_set(c->e, ERR_NOMEM, "%s: out of memory", c->ctx);
    for (int64_t i = 0; i < g->n_tensors; i++) g->by_name[i] = &g->tensors[i];
    qsort(g->by_name, (size_t)g->n_tensors, sizeof *g->by_name, cmp_offset);
    for (int64_t i = 1; i < g->n_tensors; i++) {
        const struct gguf_tensor *p = g->by_name[i - 1], *t = g->by_name[i];
        if (p->nbytes && t->nbytes && p->offset + p->nbytes > t->offset)
            return err_set(c->e, ERR_FORMAT, "%s: tensor '%s' (bytes %llu..%llu) overlaps tensor '%s' (from %llu)", c->ctx,
                           p->name, (unsigned long long)p->offset, (unsigned long long)(p->offset + p->nbytes), t->name,
                           (unsigned long long)t->offset);
    }
    qsort(g->by_name, (size_t)g->n_tensors, sizeof *g->by_name, cmp_name);
    for (int64_t i = 1; i < g->n_tensors; i++)
        if (!strcmp(g->by_name[i - 1]->name, g->by_name[i]->name))
            return err_set(c->e, ERR_FORMAT, "%s: duplicate tensor name '%s'", c->ctx, g->by_name[i]->name);
    return 0;
}

static int read_header(struct gguf *g, struct cur *c, uint64_t *n_t, uint64_t *n_kv) {
    uint64_t magic = 0, ver = 0;
    int rc;
    if ((rc = rd(c, 4, &magic, "magic"))) return rc;
    if (magic != 0x46554747u) { // "GGUF"
        char b[32];
        return err_set(c->e, ERR_FORMAT, "%s: not a GGUF file (magic '%s', expected 'GGUF')", c->ctx,
                       brief((const char *)c->p, 4, b, sizeof b));
    }
    if ((rc = rd(c, 4, &ver, "version"))) return rc;
    if (ver == 0x02000000u || ver == 0x03000000u)
        return err_set(c->e, ERR_UNSUPPORTED, "%s: big-endian GGUF (version bytes %08llx) is not supported", c->ctx,
                       (unsigned long long)ver);
    if (ver == 1)
        return err_set(c->e, ERR_UNSUPPORTED, "%s: GGUF version 1 is not supported (only 2 and 3)", c->ctx);
    if (ver != 2 && ver != 3)
        return err_set(c->e, ERR_FORMAT, "%s: unknown GGUF version %llu (supported: 2, 3)", c->ctx, (unsigned long long)ver);
    g->version = (uint32_t)ver;
    if ((rc = rd(c, 8, n_t, "tensor count")) || (rc = rd(c, 8, n_kv, "metadata count"))) return rc;
    // a key/value pair takes >= 13 bytes (u64 length, u32 type, 1 byte), a tensor info >= 32
    size_t left = c->size - c->pos;
    if (*n_kv > left / 13)
        return err_set(c->e, ERR_FORMAT, "%s: metadata count %llu cannot fit in the %zu bytes left", c->ctx,
                       (unsigned long long)*n_kv, left);
    if (*n_t > left / 32)
        return err_set(c->e, ERR_FORMAT, "%s: tensor count %llu cannot fit in the %zu bytes left", c->ctx,
                       (unsigned long long)*n_t, left);
    return 0;
}

int gguf_parse(struct gguf *g, const void *buf, size_t size, const char *ctx, struct err *e) {
    memset(g, 0, sizeof *g);
    g->path = str_dup(ctx ? ctx : "<memory>");
    if (!g->path) return err_set(e, ERR_NOMEM, "gguf: out of memory");
    g->base = buf;
    g->size = size;
    struct cur c = {.p = buf, .size = size, .pos = 0, .ctx = g->path, .e = e};
    uint64_t n_t = 0, n_kv = 0;
    int rc = read_header(g, &c, &n_t, &n_kv);
    if (!rc) rc = read_kvs(g, &c, n_kv);
    if (!rc) {
        g->tensors = calloc((size_t)(n_t ? n_t : 1), sizeof *g->tensors);
        if (!g->tensors) rc = err_set(e, ERR_NOMEM, "%s: out of memory for %llu tensors", g->path, (unsigned long long)n_t);
    }
    for (uint64_t i = 0; !rc && i < n_t; i++) rc = read_tensor_info(g, &c, &g->tensors[i], i);
    if (!rc) rc = place_tensors(g, &c);
    if (rc) gguf_close(g); // not mapped yet: gguf_open maps and unmaps
    return rc;
}

int gguf_open(struct gguf *g, const char *path, struct err *e) {
    memset(g, 0, sizeof *g);
    int fd, rc0 = file_open_regular(path, &fd, e);
    if (rc0) return rc0;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return err_set(e, ERR_IO, "%s: %s", path, strerror(errno));
    }
    size_t size = (size_t)sb.st_size;
    void *p = NULL;
    if (size > 0) {
        p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            return err_set(e, ERR_IO, "%s: mmap: %s", path, strerror(errno));
        }
    }
    close(fd);
    int rc = gguf_parse(g, p ? p : "", size, path, e);
    if (rc) {
        if (p) munmap(p, size);
        memset(g, 0, sizeof *g);
        return rc;
    }
    g->mapped = p != NULL;
    return 0;
}

void gguf_close(struct gguf *g) {
    if (!g) return;
    for (int64_t i = 0; i < g->n_kv; i++) {
        free(g->kv[i].key);
        free(g->kv[i].strs);
    }
    free(g->kv);
    for (int64_t i = 0; i < g->n_tensors; i++) free(g->tensors[i].name);
    free(g->tensors);
    free(g->by_name);
    free(g->path);
    if (g->mapped && g->base) munmap((void *)g->base, g->size);
    memset(g, 0, sizeof *g);
}

// ---- lookup and typed access ----
const struct gguf_kv *gguf_find_kv(const struct gguf *g, const char *key) {
    for (int64_t i = 0; i < g->n_kv; i++)
        if (g->kv[i].key && !strcmp(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

const struct gguf_tensor *gguf_find_tensor(const struct gguf *g, const char *name) {
    int64_t lo = 0, hi = g->n_tensors - 1;
    while (g->by_name && lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const struct gguf_tensor *t = g->by_name[mid];
        int c = strcmp(t->name, name);
        if (!c) return t;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

static int is_int_type(enum gguf_vtype t) {
    return t == GGUF_U8 || t == GGUF_I8 || t == GGUF_U16 || t == GGUF_I16 || t == GGUF_U32 || t == GGUF_I32 ||
           t == GGUF_U64 || t == GGUF_I64;
}

int64_t gguf_kv_int(const struct gguf_kv *kv, uint64_t i) {
    const uint8_t *p = kv->data + i * vtype_size[kv->elem];
    switch (kv->elem) {
    case GGUF_U8: case GGUF_BOOL: return p[0];
    case GGUF_I8: return (int8_t)p[0];
    case GGUF_U16: return (uint16_t)le(p, 2);
    case GGUF_I16: return (int16_t)(uint16_t)le(p, 2);
    case GGUF_U32: return (uint32_t)le(p, 4);
    case GGUF_I32: return (int32_t)(uint32_t)le(p, 4);
    case GGUF_U64: { uint64_t v = le(p, 8); return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }
    case GGUF_I64: return (int64_t)le(p, 8);
    case GGUF_F32: return (int64_t)bits_f32((uint32_t)le(p, 4));
    case GGUF_F64: { uint64_t u = le(p, 8); double d; memcpy(&d, &u, 8); return (int64_t)d; }
    default: return 0;
    }
}

double gguf_kv_float(const struct gguf_kv *kv, uint64_t i) {
    const uint8_t *p = kv->data + i * vtype_size[kv->elem];
    if (kv->elem == GGUF_F32) return bits_f32((uint32_t)le(p, 4));
    if (kv->elem == GGUF_F64) {
        uint64_t u = le(p, 8);
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    if (kv->elem == GGUF_U64) return (double)le(p, 8);
    return (double)gguf_kv_int(kv, i);
}

static int get(const struct gguf *g, const char *key, int required, const struct gguf_kv **kv, struct err *e) {
    *kv = gguf_find_kv(g, key);
    if (!*kv && required) return err_set(e, ERR_NOTFOUND, "%s: missing key '%s'", g->path, key);
    return 0;
}

static int wrong(const struct gguf *g, const struct gguf_kv *kv, const char *want, struct err *e) {
    if (kv->type == GGUF_ARR)
        return err_set(e, ERR_FORMAT, "%s: key '%s': expected %s, got ARRAY[%s] of %llu", g->path, kv->key, want,
                       vtype_names[kv->elem], (unsigned long long)kv->n);
    return err_set(e, ERR_FORMAT, "%s: key '%s': expected %s, got %s", g->path, kv->key, want, vtype_names[kv->type]);
}

int gguf_get_int(const struct gguf *g, const char *key, int64_t *out, int required, struct err *e) {
    const struct gguf_kv *kv;
    int rc = get(g, key, required, &kv, e);
    if (rc || !kv) return rc;
    if (kv->type == GGUF_ARR || !is_int_type(kv->type)) return wrong(g, kv, "an integer", e);
    if (kv->type == GGUF_U64 && le(kv->data, 8) > (uint64_t)INT64_MAX)
        return err_set(e, ERR_RANGE, "%s: key '%s' = %llu is out of range", g->path, key, (unsigned long long)le(kv->data, 8));
    *out = gguf_kv_int(kv, 0);
    return 0;
}

int gguf_get_float(const struct gguf *g, const char *key, double *out, int required, struct err *e) {
    const struct gguf_kv *kv;
    int rc = get(g, key, required, &kv, e);
    if (rc || !kv) return rc;
    if (kv->type == GGUF_ARR || !(is_int_type(kv->type) || kv->type == GGUF_F32 || kv->type == GGUF_F64))
        return wrong(g, kv, "a number", e);
    *out = gguf_kv_float(kv, 0);
    return 0;
}

int gguf_get_bool(const struct gguf *g, const char *key, int *out, int required, struct err *e) {
    const struct gguf_kv *kv;
    int rc = get(g, key, required, &kv, e);
    if (rc || !kv) return rc;
    if (kv->type != GGUF_BOOL) return wrong(g, kv, "BOOL", e);
    *out = kv->data[0];
    return 0;
}

int gguf_get_str(const struct gguf *g, const char *key, struct gguf_str *out, int required, struct err *e) {
    const struct gguf_kv *kv;
    int rc = get(g, key, required, &kv, e);
    if (rc || !kv) return rc;
    if (kv->type != GGUF_STR) return wrong(g, kv, "STRING", e);
    *out = kv->strs[0];
    return 0;
}

int gguf_get_arr(const struct gguf *g, const char *key, enum gguf_vtype elem, const struct gguf_kv **out,
                 int required, struct err *e) {
    const struct gguf_kv *kv;
    *out = NULL;
    int rc = get(g, key, required, &kv, e);
    if (rc || !kv) return rc;
    int ok = kv->type == GGUF_ARR;
    if (ok && elem == GGUF_STR) ok = kv->elem == GGUF_STR;
    else if (ok && elem == GGUF_I64) ok = is_int_type(kv->elem);
    else if (ok && elem == GGUF_F64) ok = kv->elem == GGUF_F32 || kv->elem == GGUF_F64;
    else if (ok) ok = kv->elem == elem;
    if (!ok) {
        const char *w = elem == GGUF_STR ? "an array of strings" : elem == GGUF_I64 ? "an array of integers"
                        : elem == GGUF_F64                     ? "an array of floats" : "an array";
        return wrong(g, kv, w, e);
    }
    *out = kv;
    return 0;
}

void gguf_sha256(const struct gguf *g, char hex[65]) { sha256_hex(g->base, g->size, hex); }
