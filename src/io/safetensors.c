// safetensors.c: validated read-only mmap of safetensors files and shards, and the atomic
// writer (see safetensors.h). Every check names the file and the tensor or field.
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json_util.h"
#include "base/sha256.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[ST_DTYPE_COUNT] = {
    [ST_F32] = {"F32", 4}, [ST_F16] = {"F16", 2}, [ST_BF16] = {"BF16", 2}, [ST_I32] = {"I32", 4},
    [ST_I64] = {"I64", 8}, [ST_U8] = {"U8", 1},   [ST_I8] = {"I8", 1},
};

size_t st_dtype_size(enum st_dtype t) { return (unsigned)t < ST_DTYPE_COUNT ? dtypes[t].size : 0; }
const char *st_dtype_name(enum st_dtype t) { return (unsigned)t < ST_DTYPE_COUNT ? dtypes[t].name : "?"; }

static int parse_dtype(const char *s, enum st_dtype *out) {
    for (int i = 0; i < ST_DTYPE_COUNT; i++)
        if (!strcmp(s, dtypes[i].name)) { *out = (enum st_dtype)i; return 0; }
    return -1;
}

static int cmp_tensor(const void *a, const void *b) {
    return strcmp(((const struct st_tensor *)a)->name, ((const struct st_tensor *)b)->name);
}

void st_close(struct safetensors *st) {
    if (!st) return;
    for (int i = 0; i < st->n_files; i++) {
        if (st->files[i].base && !st->files[i].borrowed) munmap((void *)st->files[i].base, st->files[i].size);
        free(st->files[i].path);
    }
    for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    free(st->tensors);
    free(st->metadata_json);
    cJSON_Delete(st->metadata);
    memset(st, 0, sizeof *st);
}

static int map_file(struct st_map *m, const char *path, struct err *e) {
    memset(m, 0, sizeof *m);
    int fd, rc0 = file_open_regular(path, &fd, e);
    if (rc0) return rc0;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return err_set(e, ERR_IO, "%s: %s", path, strerror(errno));
    }
    m->path = str_dup(path);
    if (!m->path) { close(fd); return err_set(e, ERR_NOMEM, "%s: out of memory", path); }
    m->size = (size_t)sb.st_size;
    if (m->size > 0) {
        void *p = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            return err_set(e, ERR_IO, "%s: mmap: %s", path, strerror(errno));
        }
        m->base = p;
    }
    close(fd);
    return 0;
}

// Appends one tensor; grows the array.
static int push_tensor(struct safetensors *st, int *cap, const struct st_tensor *t, struct err *e) {
    if (st->n_tensors == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        struct st_tensor *nt = realloc(st->tensors, (size_t)nc * sizeof *nt);
        if (!nt) return err_set(e, ERR_NOMEM, "safetensors: out of memory");
        st->tensors = nt;
        *cap = nc;
    }
    st->tensors[st->n_tensors++] = *t;
    return 0;
}

// Parses and validates the header of mapped file `fi`, appending its tensors.
static int parse_file(struct safetensors *st, int fi, int *cap, struct err *e) {
    const struct st_map *m = &st->files[fi];
    const char *path = m->path;
    if (m->size < 8) return err_set(e, ERR_FORMAT, "%s: file too short (%zu bytes) for a safetensors header", path, m->size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | m->base[i];
    if (hlen > ST_MAX_HEADER)
        return err_set(e, ERR_FORMAT, "%s: header length %llu exceeds the 100 MB limit", path, (unsigned long long)hlen);
    if (hlen > m->size - 8)
        return err_set(e, ERR_FORMAT, "%s: header length %llu runs past the end of the file (%zu bytes)",
                       path, (unsigned long long)hlen, m->size);
    const char *hdr = (const char *)m->base + 8;
    size_t data_start = 8 + (size_t)hlen, data_size = m->size - data_start;
    cJSON *root = NULL;
    int rc = json_parse(&root, hdr, (size_t)hlen, path, e);
    if (rc) return rc;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return err_set(e, ERR_FORMAT, "%s: header is not a JSON object", path);
    }
    // data offsets must tile the data area without overlap: collect and check after
    const cJSON *it;
    cJSON_ArrayForEach(it, root) {
        const char *name = it->string;
        if (!strcmp(name, "__metadata__")) {
            if (!cJSON_IsObject(it)) { rc = err_set(e, ERR_FORMAT, "%s: __metadata__ is not an object", path); goto fail; }
            const cJSON *kv;
            cJSON_ArrayForEach(kv, it) if (!cJSON_IsString(kv)) {
                rc = err_set(e, ERR_FORMAT, "%s: __metadata__ '%s' is not a string", path, kv->string);
                goto fail;
            }
            if (fi == 0 && !st->metadata_json) {
                st->metadata_json = cJSON_PrintUnformatted(it);
                st->metadata = cJSON_Duplicate(it, 1);
                if (!st->metadata_json || !st->metadata) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto fail; }
            }
            continue;
        }
        if (!cJSON_IsObject(it)) { rc = err_set(e, ERR_FORMAT, "%s: tensor '%s': entry is not an object", path, name); goto fail; }
        char ctx[512];
        snprintf(ctx, sizeof ctx, "%s: tensor '%s'", path, name);
        const char *dts = NULL;
        const cJSON *shape = NULL, *offs = NULL;
        if ((rc = json_need_str(it, "dtype", &dts, ctx, e))) goto fail;
        if ((rc = json_need_arr(it, "shape", &shape, ctx, e))) goto fail;
        if ((rc = json_need_arr(it, "data_offsets", &offs, ctx, e))) goto fail;
        struct st_tensor t = {0};
        if (parse_dtype(dts, &t.dtype)) {
            rc = err_set(e, ERR_UNSUPPORTED, "%s: dtype '%s' is not supported (supported: F32, F16, BF16, I32, I64, U8, I8)", ctx, dts);
            goto fail;
        }
        int nd = cJSON_GetArraySize(shape);
        if (nd > ST_MAX_DIMS) { rc = err_set(e, ERR_FORMAT, "%s: %d dimensions (max %d)", ctx, nd, ST_MAX_DIMS); goto fail; }
        t.ndim = nd;
        size_t numel = 1;
        for (int d = 0; d < nd; d++) {
            const cJSON *v = cJSON_GetArrayItem(shape, d);
            double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
            if (!cJSON_IsNumber(v) || !(x >= 0 && x <= 9.0e15) || x != floor(x)) { // range before any cast
                rc = err_set(e, ERR_FORMAT, "%s: shape[%d] = %s is not a non-negative integer", ctx, d, json_brief(v));
                goto fail;
            }
            t.shape[d] = (int64_t)x;
            if (mul_size(numel, (size_t)t.shape[d], &numel)) {
                rc = err_set(e, ERR_FORMAT, "%s: shape overflows", ctx);
                goto fail;
            }
        }
        t.numel = (int64_t)numel;
        if (cJSON_GetArraySize(offs) != 2) { rc = err_set(e, ERR_FORMAT, "%s: data_offsets must have 2 entries", ctx); goto fail; }
        double b0 = -1, b1 = -1;
        const cJSON *o0 = cJSON_GetArrayItem(offs, 0), *o1 = cJSON_GetArrayItem(offs, 1);
        if (cJSON_IsNumber(o0)) b0 = o0->valuedouble;
        if (cJSON_IsNumber(o1)) b1 = o1->valuedouble;
        // range before any cast (a double beyond 2^64 converted to uint64_t is undefined)
        if (!(b0 >= 0 && b0 <= 9.0e15) || !(b1 >= 0 && b1 <= 9.0e15) || b0 != floor(b0) || b1 != floor(b1) || b1 < b0) {
            rc = err_set(e, ERR_FORMAT, "%s: bad data_offsets [%s, %s]", ctx, json_brief(o0), json_brief(o1));
            goto fail;
        }
        if (b1 > (double)data_size) {
            rc = err_set(e, ERR_FORMAT, "%s: data_offsets [%.0f, %.0f] outside the data area (%zu bytes)", ctx, b0, b1, data_size);
            goto fail;
        }
        size_t want = 0;
        if (mul_size(numel, st_dtype_size(t.dtype), &want) || want != (size_t)(b1 - b0)) {
            rc = err_set(e, ERR_FORMAT, "%s: shape x %s size = %zu bytes but data_offsets span %.0f bytes", ctx,
                         dts, want, b1 - b0);
            goto fail;
        }
        t.nbytes = want;
        t.data = m->base + data_start + (size_t)b0;
        t.file = fi;
        t.name = str_dup(name);
        if (!t.name) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto fail; }
        if ((rc = push_tensor(st, cap, &t, e))) { free(t.name); goto fail; }
    }
    cJSON_Delete(root);
    return 0;
fail:
    cJSON_Delete(root);
    return rc;
}

static int open_index(struct safetensors *st, const char *index_path, int *cap, struct err *e) {
    cJSON *root = NULL;
    int rc = json_parse_file(&root, index_path, e);
    if (rc) return rc;
    const cJSON *wm = NULL;
    if ((rc = json_need_obj(root, "weight_map", &wm, index_path, e))) goto out;
    // directory of the index
    char dir[4096];
    const char *slash = strrchr(index_path, '/');
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - index_path), index_path);
    else snprintf(dir, sizeof dir, ".");
    const cJSON *it;
    cJSON_ArrayForEach(it, wm) {
        if (!cJSON_IsString(it)) {
            rc = err_set(e, ERR_FORMAT, "%s: weight_map '%s': expected a file name", index_path, it->string);
            goto out;
        }
        const char *fname = it->valuestring;
        if (!fname[0] || strchr(fname, '/') || !strcmp(fname, "..")) {
            rc = err_set(e, ERR_FORMAT, "%s: weight_map '%s': shard name '%s' must be a plain file name",
                         index_path, it->string, fname);
            goto out;
        }
        char path[4096];
        if ((rc = path_join(path, sizeof path, dir, fname, e))) goto out;
        int seen = 0;
        for (int i = 0; i < st->n_files; i++)
            if (!strcmp(st->files[i].path, path)) seen = 1;
        if (seen) continue;
        if (st->n_files >= ST_MAX_FILES) {
            rc = err_set(e, ERR_RANGE, "%s: more than %d shards", index_path, ST_MAX_FILES);
            goto out;
        }
        if ((rc = map_file(&st->files[st->n_files], path, e))) goto out;
        st->n_files++;
        if ((rc = parse_file(st, st->n_files - 1, cap, e))) goto out;
    }
    // every tensor named in the map must exist in its shard (checked after sorting below)
    cJSON_ArrayForEach(it, wm) {
        int found = 0;
        for (int i = 0; i < st->n_tensors && !found; i++) found = !strcmp(st->tensors[i].name, it->string);
        if (!found) {
            rc = err_set(e, ERR_FORMAT, "%s: tensor '%s' listed in weight_map is not in shard %s", index_path,
                         it->string, it->valuestring);
            goto out;
        }
    }
out:
    cJSON_Delete(root);
    return rc;
}

// Sorts the tensors by name and refuses a name that two shards (or one header) both hold.
static int finish_open(struct safetensors *st, const char *path, struct err *e) {
    // a header without tensors leaves tensors NULL, and qsort(NULL, 0) is undefined (fuzz_scales)
    if (st->n_tensors > 1) qsort(st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, cmp_tensor);
    for (int i = 1; i < st->n_tensors; i++)
        if (!strcmp(st->tensors[i].name, st->tensors[i - 1].name)) {
            int rc = err_set(e, ERR_FORMAT, "%s: duplicate tensor name '%s' (in %s and %s)", path, st->tensors[i].name,
                             st->files[st->tensors[i - 1].file].path, st->files[st->tensors[i].file].path);
            st_close(st);
            return rc;
        }
    return 0;
}

// A directory holding both model.safetensors and an index whose shards are other files (issue
// 36): transformers loads model.safetensors, this tool read the index - two different models
// from one directory. Refused naming both unless the index maps every tensor to
// model.safetensors itself.
static int single_and_index(const char *dir, const char *index, struct err *e) {
    char single[4096];
    int rc = path_join(single, sizeof single, dir, "model.safetensors", e);
    if (rc || !file_exists(single)) return rc;
    cJSON *root = NULL;
    const cJSON *wm = NULL, *it;
    if ((rc = json_parse_file(&root, index, e)) || (rc = json_need_obj(root, "weight_map", &wm, index, e))) {
        cJSON_Delete(root);
        return rc;
    }
    cJSON_ArrayForEach(it, wm) {
        if (cJSON_IsString(it) && !strcmp(it->valuestring, "model.safetensors")) continue;
        rc = err_set(e, ERR_MISMATCH, "%s: holds both %s and %s, whose weight_map names other shards ('%s' -> %s): "
                     "transformers reads model.safetensors, so one of them is stale; remove it", dir, single, index,
                     it->string, json_brief(it));
        break;
    }
    cJSON_Delete(root);
    return rc;
}

int st_open(struct safetensors *st, const char *path, struct err *e) {
    memset(st, 0, sizeof *st);
    int cap = 0, rc;
    char buf[4096];
    if (dir_exists(path)) {
        if ((rc = path_join(buf, sizeof buf, path, "model.safetensors.index.json", e))) return rc;
        if (file_exists(buf) && (rc = single_and_index(path, buf, e))) return rc;
        if (!file_exists(buf)) {
            if ((rc = path_join(buf, sizeof buf, path, "model.safetensors", e))) return rc;
            if (!file_exists(buf))
                return err_set(e, ERR_NOTFOUND, "%s: no model.safetensors or model.safetensors.index.json", path);
        }
        path = buf;
    }
    if (str_ends_with(path, ".json")) {
        rc = open_index(st, path, &cap, e);
    } else {
        rc = map_file(&st->files[0], path, e);
        if (!rc) {
            st->n_files = 1;
            rc = parse_file(st, 0, &cap, e);
        }
    }
    if (rc) { st_close(st); return rc; }
    return finish_open(st, path, e);
}

int st_open_mem(struct safetensors *st, const void *buf, size_t len, const char *name, struct err *e) {
    memset(st, 0, sizeof *st);
    int cap = 0, rc;
    struct st_map *m = &st->files[0];
    m->path = str_dup(name ? name : "(memory)");
    if (!m->path) return err_set(e, ERR_NOMEM, "safetensors: out of memory");
    m->base = buf;
    m->size = len;
    m->borrowed = 1;
    st->n_files = 1;
    if ((rc = parse_file(st, 0, &cap, e))) { st_close(st); return rc; }
    return finish_open(st, m->path, e);
}

const struct st_tensor *st_find(const struct safetensors *st, const char *name) {
    int lo = 0, hi = st->n_tensors - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(st->tensors[mid].name, name);
        if (!c) return &st->tensors[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

const char *st_meta(const struct safetensors *st, const char *key) {
    const cJSON *v = st->metadata ? cJSON_GetObjectItemCaseSensitive(st->metadata, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int st_to_f32(float *dst, const struct st_tensor *t, struct err *e) {
    const unsigned char *p = t->data;
    size_t n = (size_t)t->numel;
    switch (t->dtype) {
    case ST_F32: memcpy(dst, p, n * 4); return 0;
    case ST_BF16:
        for (size_t i = 0; i < n; i++) dst[i] = bf16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        return 0;
    case ST_F16:
        for (size_t i = 0; i < n; i++) dst[i] = f16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        return 0;
    default:
        return err_set(e, ERR_UNSUPPORTED, "tensor '%s': dtype %s is not a float type", t->name, st_dtype_name(t->dtype));
    }
}

int st_to_i32(int32_t *dst, const struct st_tensor *t, struct err *e) {
    const unsigned char *p = t->data;
    size_t n = (size_t)t->numel;
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        switch (t->dtype) {
        case ST_I32: { int32_t x; memcpy(&x, p + 4 * i, 4); v = x; break; }
        case ST_I64: memcpy(&v, p + 8 * i, 8); break;
        case ST_U8: v = p[i]; break;
        case ST_I8: v = (int8_t)p[i]; break;
        default:
            return err_set(e, ERR_UNSUPPORTED, "tensor '%s': dtype %s is not an integer type", t->name, st_dtype_name(t->dtype));
        }
        if (v < INT32_MIN || v > INT32_MAX)
            return err_set(e, ERR_RANGE, "tensor '%s'[%zu] = %lld does not fit int32", t->name, i, (long long)v);
        dst[i] = (int32_t)v;
    }
    return 0;
}

int st_check(const struct safetensors *st, const char *name, enum st_dtype_class cls, int ndim, const int64_t *shape,
             const struct st_tensor **out, struct err *e) {
    const struct st_tensor *t = st_find(st, name);
    if (out) *out = t;
    if (!t) return err_set(e, ERR_NOTFOUND, "%s: missing tensor '%s'", st->n_files ? st->files[0].path : "?", name);
    const char *file = st->files[t->file].path;
    if (cls == ST_FLOATING && t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16)
        return err_set(e, ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s, expected F32, F16 or BF16", file, name,
                       st_dtype_name(t->dtype));
    if (ndim < 0) return 0;
    int ok = t->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++) ok = t->shape[d] == shape[d];
    if (!ok) {
        char a[128] = "", b[128] = "";
        size_t la = 0, lb = 0;
        for (int d = 0; d < t->ndim && la < sizeof a; d++)
            la += (size_t)snprintf(a + la, sizeof a - la, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        for (int d = 0; d < ndim && lb < sizeof b; d++)
            lb += (size_t)snprintf(b + lb, sizeof b - lb, "%s%lld", d ? "," : "", (long long)shape[d]);
        return err_set(e, ERR_MISMATCH, "%s: tensor '%s' has shape [%s], expected [%s]", file, name, a, b);
    }
    return 0;
}

int st_fingerprint(const struct safetensors *st, char hex[65], struct err *e) {
    struct sha256 s;
    uint8_t d[32];
    sha256_init(&s);
    for (int i = 0; i < st->n_files; i++) {
        const struct st_map *m = &st->files[i];
        if (m->size < 8) return err_set(e, ERR_FORMAT, "%s: too short", m->path);
        uint64_t hlen = 0;
        for (int k = 7; k >= 0; k--) hlen = hlen << 8 | m->base[k];
        sha256_update(&s, m->base, 8 + (size_t)hlen);
        uint64_t sz = m->size;
        sha256_update(&s, &sz, sizeof sz);
    }
    // Headers alone cannot tell two checkpoints of one shape apart (a re-seeded synthetic
    // model, a fine-tune): add up to three 4 KiB windows (start, middle, end) of every
    // tensor's bytes, in name order. Reads at most 12 KiB per tensor.
    for (int i = 0; i < st->n_tensors; i++) {
        const struct st_tensor *t = &st->tensors[i];
        const unsigned char *p = t->data;
        size_t w = 4096, n = t->nbytes;
        sha256_update(&s, t->name, strlen(t->name) + 1);
        if (n <= 3 * w) {
            sha256_update(&s, p, n);
        } else {
            sha256_update(&s, p, w);
            sha256_update(&s, p + n / 2 - w / 2, w);
            sha256_update(&s, p + n - w, w);
        }
    }
    sha256_final(&s, d);
    sha256_to_hex(d, hex);
    return 0;
}

// ---- writer ----
// A file's header as build_header lays it out: the JSON text (malloc'd), its length padded to
// 8 bytes, and the size of the data area after it.
struct st_header {
    char *text;
    size_t hpad, data_bytes;
};

// Builds the header text (tensors in order, offsets packed) into *h.
static int build_header(const char *path, const struct st_wtensor *ts, int n, const char *const *meta, int n_meta,
                        struct st_header *h, struct err *e) {
    cJSON *root = cJSON_CreateObject();
    int rc = 0;
    char **hdr = &h->text;
    *hdr = NULL;
    if (!root) return err_set(e, ERR_NOMEM, "%s: out of memory", path);
    if (n_meta > 0) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        for (int i = 0; m && i < n_meta; i++) cJSON_AddStringToObject(m, meta[2 * i], meta[2 * i + 1]);
    }
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        size_t numel = 1, bytes;
        for (int d = 0; d < ts[i].ndim; d++)
            if (ts[i].shape[d] < 0 || mul_size(numel, (size_t)ts[i].shape[d], &numel)) {
                rc = err_set(e, ERR_RANGE, "%s: tensor '%s': bad shape", path, ts[i].name);
                goto out;
            }
        if (mul_size(numel, st_dtype_size(ts[i].dtype), &bytes)) {
            rc = err_set(e, ERR_RANGE, "%s: tensor '%s': too large", path, ts[i].name);
            goto out;
        }
        cJSON *t = cJSON_AddObjectToObject(root, ts[i].name);
        cJSON *sh = cJSON_CreateArray(), *of = cJSON_CreateArray();
        if (!t || !sh || !of) { cJSON_Delete(sh); cJSON_Delete(of); rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto out; }
        cJSON_AddStringToObject(t, "dtype", st_dtype_name(ts[i].dtype));
        for (int d = 0; d < ts[i].ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)ts[i].shape[d]));
        cJSON_AddItemToObject(t, "shape", sh);
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)(off + bytes)));
        cJSON_AddItemToObject(t, "data_offsets", of);
        off += bytes;
    }
    *hdr = cJSON_PrintUnformatted(root);
    if (!*hdr) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto out; }
    size_t hl = strlen(*hdr);
    h->hpad = (hl + 7) & ~(size_t)7; // data starts 8-byte aligned
    h->data_bytes = off;
out:
    cJSON_Delete(root);
    return rc;
}

static size_t wtensor_bytes(const struct st_wtensor *t) {
    size_t numel = 1;
    for (int d = 0; d < t->ndim; d++) numel *= (size_t)t->shape[d];
    return numel * st_dtype_size(t->dtype);
}

int st_write(const char *path, const struct st_wtensor *ts, int n, const char *const *meta, int n_meta,
             struct err *e) {
    struct st_header h;
    int rc = build_header(path, ts, n, meta, n_meta, &h, e);
    if (rc) return rc;
    char *hdr = h.text;
    const size_t hpad = h.hpad, off = h.data_bytes;
    size_t hl = strlen(hdr), total = 8 + hpad + off;
    unsigned char *buf = malloc(total ? total : 1);
    if (!buf) { free(hdr); return err_set(e, ERR_NOMEM, "%s: cannot allocate %zu bytes", path, total); }
    for (int k = 0; k < 8; k++) buf[k] = (unsigned char)((uint64_t)hpad >> (8 * k));
    memcpy(buf + 8, hdr, hl);
    memset(buf + 8 + hl, ' ', hpad - hl);
    size_t pos = 8 + hpad;
    for (int i = 0; i < n; i++) {
        size_t bytes = wtensor_bytes(&ts[i]);
        if (bytes) memcpy(buf + pos, ts[i].data, bytes);
        pos += bytes;
    }
    rc = file_write_atomic(path, buf, total, e);
    free(buf);
    free(hdr);
    return rc;
}

int st_write_stream(const char *path, const struct st_wtensor *ts, int n, const char *const *meta, int n_meta,
                    struct st_fill fill, struct err *e) {
    char tmp[4096];
    size_t maxb = 1;
    unsigned char *buf = NULL;
    FILE *f = NULL;
    struct st_header h;
    int rc = build_header(path, ts, n, meta, n_meta, &h, e);
    if (rc) return rc;
    char *hdr = h.text;
    const size_t hpad = h.hpad;
    for (int i = 0; i < n; i++) if (wtensor_bytes(&ts[i]) > maxb) maxb = wtensor_bytes(&ts[i]);
    file_clear_stale_tmp(path);
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp) {
        tmp[0] = 0;
        rc = err_set(e, ERR_RANGE, "%s: path too long", path);
        goto out;
    }
    buf = malloc(maxb);
    if (!buf) { rc = err_set(e, ERR_NOMEM, "%s: cannot allocate %zu bytes", path, maxb); goto out; }
    if (!(f = fopen(tmp, "wb"))) {
        rc = err_set(e, ERR_IO, "%s: %s", tmp, strerror(errno));
        tmp[0] = 0;
        goto out;
    }
    unsigned char L[8];
    for (int k = 0; k < 8; k++) L[k] = (unsigned char)((uint64_t)hpad >> (8 * k));
    size_t hl = strlen(hdr);
    int bad = fwrite(L, 1, 8, f) != 8 || fwrite(hdr, 1, hl, f) != hl;
    for (size_t k = hl; k < hpad && !bad; k++) bad = fputc(' ', f) == EOF;
    for (int i = 0; i < n && !bad; i++) {
        size_t bytes = wtensor_bytes(&ts[i]);
        if ((rc = fill.fn(fill.ctx, i, buf, e))) goto out;
        bad = bytes && fwrite(buf, 1, bytes, f) != bytes;
    }
    bad |= (fflush(f) != 0) | (fsync(fileno(f)) != 0);
    bad |= fclose(f) != 0;
    f = NULL;
    if (bad) { rc = err_set(e, ERR_IO, "%s: write failed: %s", path, strerror(errno)); goto out; }
    if (rename(tmp, path) != 0) { rc = err_set(e, ERR_IO, "%s: rename failed: %s", path, strerror(errno)); goto out; }
    tmp[0] = 0;
out:
    if (f) fclose(f);
    if (rc && tmp[0]) unlink(tmp);
    free(buf);
    free(hdr);
    return rc;
}
