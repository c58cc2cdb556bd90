// fetch_archive.c: the members of a task's tar archive (ustar / GNU / pax, uncompressed)
// unpacked into their destinations (fetch_internal.h).
#include "net/fetch.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/json_util.h"
#include "base/paths.h"
#include "base/sha256.h"

#define URL_MAX 4096
#define PATH_MAX_ 4096

#include "net/fetch_internal.h"

// ---- tar archives (ustar / GNU / pax; uncompressed) ----
// Member names from the archive are only compared with the manifest's, never used as paths.
static int64_t tar_num(const unsigned char *f, int n) {
    if (f[0] & 0x80) { // GNU base-256
        int64_t v = f[0] & 0x3f;
        for (int i = 1; i < n; i++) v = (v << 8) | f[i];
        return v;
    }
    int64_t v = 0;
    int i = 0;
    while (i < n && (f[i] == ' ' || f[i] == 0)) i++;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) v = v * 8 + (f[i] - '0');
    return v;
}

static int read_exact(FILE *f, void *buf, size_t n) { return fread(buf, 1, n, f) == n ? 0 : -1; }

// Copies `size` bytes of the open archive into x->dest via .part, checking size and sha256.
static int tar_copy(FILE *f, int64_t size, struct fetch_entry *x, const char *tar, struct err *e) {
    char part[PATH_MAX_ + 8], dir[PATH_MAX_];
    snprintf(part, sizeof part, "%s.part", x->dest);
    snprintf(dir, sizeof dir, "%s", x->dest);
    char *sl = strrchr(dir, '/');
    if (sl && sl != dir) {
        *sl = 0;
        int rc = mkdir_p(dir, e);
        if (rc) return rc;
    }
    if (x->size >= 0 && size != x->size)
        return err_set(e, ERR_MISMATCH, "%s: member %s has %lld bytes, the manifest says %lld", tar, x->member,
                       (long long)size, (long long)x->size);
    FILE *o = fopen(part, "wb");
    if (!o) return err_set(e, ERR_IO, "%s: %s", part, strerror(errno));
    struct sha256 h;
    sha256_init(&h);
    static unsigned char buf[1 << 16];
    int64_t left = size;
    while (left > 0) {
        size_t c = left < (int64_t)sizeof buf ? (size_t)left : sizeof buf;
        if (read_exact(f, buf, c)) { fclose(o); unlink(part); return err_set(e, ERR_FORMAT, "%s: truncated in member %s", tar, x->member); }
        if (fwrite(buf, 1, c, o) != c) { fclose(o); unlink(part); return err_set(e, ERR_IO, "%s: write failed", part); }
        sha256_update(&h, buf, c);
        left -= (int64_t)c;
    }
    if (fflush(o) != 0 || fsync(fileno(o)) != 0 || fclose(o) != 0) { unlink(part); return err_set(e, ERR_IO, "%s: %s", part, strerror(errno)); }
    uint8_t d[32];
    char got[65];
    sha256_final(&h, d);
    sha256_to_hex(d, got);
    if (x->sha256[0] && strcasecmp(got, x->sha256) != 0) {
        unlink(part);
        return err_set(e, ERR_MISMATCH, "%s: member %s: sha256 mismatch (expected %s from the manifest, got %s); not kept",
                       tar, x->member, x->sha256, got);
    }
    if (rename(part, x->dest) != 0) return err_set(e, ERR_IO, "rename %s: %s", part, strerror(errno));
    x->present = 1;
    return 0;
}

// Unpacks the missing member entries of archive entry ai (0-based) from its tar file.
int fetch_tar_extract(struct fetch_plan *p, int ai, struct err *e) {
    const char *tar = p->v[ai].dest;
    FILE *f = fopen(tar, "rb");
    if (!f) return err_set(e, ERR_IO, "%s: %s", tar, strerror(errno));
    unsigned char h[512];
    char name[PATH_MAX_], longname[PATH_MAX_] = "";
    int rc = 0;
    int64_t off = 0;
    for (;;) {
        size_t r = fread(h, 1, 512, f);
        if (r == 0) break;
        if (r != 512) { rc = err_set(e, ERR_FORMAT, "%s: truncated header at byte %lld", tar, (long long)off); break; }
        int zero = 1;
        for (int i = 0; i < 512 && zero; i++) zero = h[i] == 0;
        if (zero) break; // end-of-archive marker
        int64_t sum = 0, want = tar_num(h + 148, 8);
        for (int i = 0; i < 512; i++) sum += (i >= 148 && i < 156) ? ' ' : h[i];
        if (sum != want) {
            rc = err_set(e, ERR_FORMAT, "%s: not a tar archive (bad header checksum at byte %lld%s)", tar, (long long)off,
                         off == 0 && h[0] == 0x1f && h[1] == 0x8b ? "; it is gzip-compressed" : "");
            break;
        }
        int64_t size = tar_num(h + 124, 12);
        char type = (char)h[156];
        int64_t pad = (512 - size % 512) % 512;
        off += 512;
        if (type == 'L' || type == 'x') { // GNU long name / pax header: the next member's name
            char *meta = malloc((size_t)size + 1);
            if (!meta || size > (1 << 20) || read_exact(f, meta, (size_t)size) || fseeko(f, pad, SEEK_CUR)) {
                free(meta);
                rc = err_set(e, ERR_FORMAT, "%s: bad %s header at byte %lld", tar, type == 'L' ? "long-name" : "pax", (long long)off);
                break;
            }
            meta[size] = 0;
            if (type == 'L') snprintf(longname, sizeof longname, "%s", meta);
            else {
                for (char *q = meta; q < meta + size;) { // records "LEN key=value\n"
                    long len = strtol(q, NULL, 10);
                    char *sp = strchr(q, ' ');
                    if (len <= 0 || !sp || q + len > meta + size) break;
                    if (!strncmp(sp + 1, "path=", 5)) snprintf(longname, sizeof longname, "%.*s", (int)(q + len - (sp + 6) - 1), sp + 6);
                    q += len;
                }
            }
            free(meta);
            off += size + pad;
            continue;
        }
        if (longname[0]) {
            snprintf(name, sizeof name, "%s", longname);
            longname[0] = 0;
        } else if (!memcmp(h + 257, "ustar", 5) && h[345])
            snprintf(name, sizeof name, "%.155s/%.100s", (const char *)h + 345, (const char *)h);
        else
            snprintf(name, sizeof name, "%.100s", (const char *)h);
        const char *nm = name;
        while (!strncmp(nm, "./", 2)) nm += 2;
        struct fetch_entry *hit = NULL;
        if (type == '0' || type == 0 || type == '7')
            for (int i = 0; i < p->n; i++)
                if (p->v[i].archive == ai + 1 && !p->v[i].present && !strcmp(p->v[i].member, nm)) hit = &p->v[i];
        if (hit) {
            if ((rc = tar_copy(f, size, hit, tar, e))) break;
            if (fseeko(f, pad, SEEK_CUR)) { rc = err_set(e, ERR_FORMAT, "%s: truncated", tar); break; }
            log_info("unpacked %s", hit->rel);
        } else if (fseeko(f, size + pad, SEEK_CUR)) {
            rc = err_set(e, ERR_FORMAT, "%s: truncated", tar);
            break;
        }
        off += size + pad;
    }
    fclose(f);
    if (rc) return rc;
    for (int i = 0; i < p->n; i++)
        if (p->v[i].archive == ai + 1 && !p->v[i].present)
            return err_set(e, ERR_NOTFOUND, "%s: member %s (for %s) is not in the archive", tar, p->v[i].member, p->v[i].rel);
    return 0;
}

