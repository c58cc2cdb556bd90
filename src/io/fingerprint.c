// fingerprint.c: version-2 checkpoint fingerprints (fingerprint.h) and their per-file cache.
#include "io/fingerprint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "base/paths.h"
#include "base/sha256.h"
#include "base/xxh64.h"

// The cache file of one file identity, or "" when it has none (an in-memory checkpoint, no cache root).
static void cache_path(char *out, size_t n, const struct st_map *m, struct stat *sb) {
    char root[4096];
    struct err e = {0};
    out[0] = 0;
    if (m->borrowed || paths_cache(root, sizeof root, &e)) return;
    int k = snprintf(out, n, "%s/fingerprints/xxh64-%llx-%llx-%lld-%lld.%09ld", root, (unsigned long long)sb->st_dev,
                     (unsigned long long)sb->st_ino, (long long)sb->st_size, (long long)sb->st_mtim.tv_sec,
                     (long)sb->st_mtim.tv_nsec);
    if (k < 0 || (size_t)k >= n) out[0] = 0;
}

static int cache_read(const char *path, uint64_t *h) {
    FILE *f = path[0] ? fopen(path, "r") : NULL;
    if (!f) return -1;
    unsigned long long v;
    int ok = fscanf(f, "%16llx", &v) == 1;
    fclose(f);
    if (ok) *h = v;
    return ok ? 0 : -1;
}

static void cache_write(const char *path, uint64_t h) {
    if (!path[0]) return;
    char dir[4200], line[32];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = 0;
    struct err e = {0};
    if (mkdir_p(dir, &e)) return; // no cache: the next run hashes again
    int k = snprintf(line, sizeof line, "%016llx\n", (unsigned long long)h);
    file_write_atomic(path, line, (size_t)k, &e);
}

static uint64_t hash_map(const struct st_map *m) {
    if (!m->borrowed) posix_madvise((void *)m->base, m->size, POSIX_MADV_SEQUENTIAL);
    return xxh64(m->base, m->size, 0);
}

int st_fingerprint_all(const struct safetensors *st, char hex[65], struct st_fingerprint_stats *stats, struct err *e) {
    struct st_fingerprint_stats z = {0};
    double t0 = time_now();
    struct sha256 s;
    sha256_init(&s);
    for (int i = 0; i < st->n_files; i++) {
        const struct st_map *m = &st->files[i];
        struct stat sb = {0};
        if (!m->borrowed && stat(m->path, &sb))
            return err_set(e, ERR_IO, "%s: cannot stat for its fingerprint: %s", m->path, strerror(errno));
        char cp[4600];
        uint64_t h;
        cache_path(cp, sizeof cp, m, &sb);
        if (!m->borrowed && (uint64_t)sb.st_size != m->size) cp[0] = 0; // changed since it was mapped: hash the map
        if (cache_read(cp, &h) == 0) {
            z.cached++;
        } else {
            h = hash_map(m);
            z.bytes_hashed += (double)m->size;
            cache_write(cp, h);
        }
        uint64_t rec[2] = {m->size, h};
        sha256_update(&s, rec, sizeof rec);
    }
    uint8_t d[32];
    sha256_final(&s, d);
    sha256_to_hex(d, hex);
    z.files = st->n_files;
    z.seconds = time_now() - t0;
    if (stats) *stats = z;
    return 0;
}
