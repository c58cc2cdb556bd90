// common.c: errors, logging, timer, fp16 conversion, file and UTF-8 helpers (see common.h).
#include "base/common.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

// ---- errors ----
int err_set(struct err *e, int code, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        e->code = code;
    }
    return code;
}

int err_prefix(struct err *e, const char *fmt, ...) {
    if (!e) return ERR_INTERNAL;
    char pre[ERR_MSG_MAX], old[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    size_t lp = strnlen(pre, sizeof e->msg - 3);
    memcpy(e->msg, pre, lp);
    memcpy(e->msg + lp, ": ", 2);
    size_t room = sizeof e->msg - lp - 3, lo = strnlen(old, room);
    memcpy(e->msg + lp + 2, old, lo);
    e->msg[lp + 2 + lo] = 0;
    return e->code;
}

const char *err_code_name(int code) {
    switch (code) {
    case ERR_OK: return "ok";
    case ERR_IO: return "io";
    case ERR_FORMAT: return "format";
    case ERR_NOMEM: return "out of memory";
    case ERR_USAGE: return "usage";
    case ERR_UNSUPPORTED: return "unsupported";
    case ERR_RANGE: return "range";
    case ERR_MISMATCH: return "mismatch";
    case ERR_NET: return "network";
    case ERR_NOTFOUND: return "not found";
    default: return "internal";
    }
}

// ---- logging ----
static int g_log_level = LOG_INFO;
void log_set_level(int level) { g_log_level = level; }
int log_get_level(void) { return g_log_level; }

static volatile int g_live_line; // a progress line sits on the terminal (progress.h)
void log_set_live_line(int on) { g_live_line = on; }

void log_msg(int level, const char *fmt, ...) {
    if (level > g_log_level) return;
    if (g_live_line) fputs("\r\033[K", stderr); // the log line replaces it; the ticker redraws it below
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    size_t n = strlen(fmt);
    if (n == 0 || (fmt[n - 1] != '\n' && fmt[n - 1] != '\r')) fputc('\n', stderr);
}

// ---- time ----
double time_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ---- fp16 ----
float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13)); // inf / nan
    if (exp == 0) {
        // zero or subnormal: value = man * 2^-24, exact in binary32
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t f32_to_f16(float x) {
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u | (uint16_t)((a >> 13) & 0x3ffu); // NaN
    if (a >= 0x477ff000u) return sign | 0x7c00u; // >= 65520 rounds to inf (and inf)
    if (a < 0x38800000u) {
        // result is subnormal or zero in fp16: round a * 2^24 to an integer, RNE
        if (a < 0x33000000u) return sign; // < 2^-25: rounds to 0 (2^-25 exactly ties to 0)
        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)e; // m * 2^(e-150) * 2^24 = m >> (126 - e)
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return sign | (uint16_t)q;
    }
    // normal: rebias exponent, round the 13 dropped mantissa bits RNE (carry may bump exp)
    uint32_t r = a - 0x38000000u; // exponent 127 -> 15
    r += 0xfffu + ((r >> 13) & 1u);
    return sign | (uint16_t)(r >> 13);
}

void round_bf16_n(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = round_bf16(x[i]);
}

// ---- files ----
static const char *file_kind(mode_t m) {
    return S_ISFIFO(m) ? "a FIFO (named pipe)" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int file_open_regular(const char *path, int *fd_out, struct err *e) {
    *fd_out = -1;
    // O_NONBLOCK: opening a FIFO for reading waits for a writer - a hang, not an error
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return err_set(e, errno == ENOENT ? ERR_NOTFOUND : ERR_IO, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int en = errno;
        close(fd);
        return err_set(e, ERR_IO, "%s: %s", path, strerror(en));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return err_set(e, ERR_IO, "%s: %s, not a regular file (inputs are read whole from regular files)", path,
                       file_kind(sb.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *fd_out = fd;
    return 0;
}

int file_read_raw(const char *path, char **buf, size_t *len, struct err *e) {
    int fd, rc = file_open_regular(path, &fd, e);
    if (rc) return rc;
    FILE *f = fdopen(fd, "rb");
    if (!f) { close(fd); return err_set(e, ERR_IO, "%s: %s", path, strerror(errno)); }
    char *b = NULL;
    size_t cap = 0, n = 0;
    // a regular file's size is known: allocate it (+1 for the NUL, + a block to see EOF)
    // instead of 1 MiB for every small file (task loaders read dozens per task)
    struct stat sb;
    size_t first = 1 << 20;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size >= 0 && (uint64_t)sb.st_size < SIZE_MAX / 4)
        first = (size_t)sb.st_size + 65536 + 1;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            size_t nc = cap ? cap * 2 : first;
            char *nb = realloc(b, nc);
            if (!nb) { free(b); fclose(f); return err_set(e, ERR_NOMEM, "%s: out of memory", path); }
            b = nb;
            cap = nc;
        }
        size_t got = fread(b + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(b); return err_set(e, ERR_IO, "%s: read error", path); }
    b[n] = 0;
    *buf = b;
    *len = n;
    return 0;
}

int zst_decompress(const char *path, const char *src, size_t n, char **buf, size_t *len, struct err *e) {
    ZSTD_DStream *ds = ZSTD_createDStream();
    if (!ds) return err_set(e, ERR_NOMEM, "%s: zstd init failed", path);
    size_t cap = n * 4 + 65536, out = 0;
    char *b = malloc(cap + 1);
    if (!b) { ZSTD_freeDStream(ds); return err_set(e, ERR_NOMEM, "%s: out of memory", path); }
    ZSTD_inBuffer in = {src, n, 0};
    size_t ret = 1, frames_end = 0; // bytes of the complete frames read so far
    while (in.pos < in.size) {
        if (cap - out < 65536) {
            char *nb = realloc(b, cap * 2 + 1);
            if (!nb) { free(b); ZSTD_freeDStream(ds); return err_set(e, ERR_NOMEM, "%s: out of memory", path); }
            b = nb;
            cap *= 2;
        }
        ZSTD_outBuffer ob = {b + out, cap - out, 0};
        ret = ZSTD_decompressStream(ds, &ob, &in);
        if (ZSTD_isError(ret)) {
            free(b);
            ZSTD_freeDStream(ds);
            if (frames_end > 0) // complete frames, then other bytes: appended by a copy, an editor, a concatenation
                return err_set(e, ERR_FORMAT, "%s: %zu bytes after its complete zstd frames (byte %zu on) are not zstd data "
                               "(%s): appended to the file; --resume does not repair it - truncate them (truncate -s %zu "
                               "FILE), or remove the file and --resume writes it again", path, n - frames_end, frames_end,
                               ZSTD_getErrorName(ret), frames_end);
            return err_set(e, ERR_FORMAT, "%s: zstd: %s", path, ZSTD_getErrorName(ret));
        }
        if (ret == 0) frames_end = in.pos;
        out += ob.pos;
    }
    ZSTD_freeDStream(ds);
    // no frame at all (an empty file) is an empty text; a frame cut short is an error
    if (ret != 0 && n > 0) { free(b); return err_set(e, ERR_FORMAT, "%s: truncated zstd stream", path); }
    b[out] = 0;
    *buf = b;
    *len = out;
    return 0;
}

int file_read_all(const char *path, char **buf, size_t *len, struct err *e) {
    char *raw = NULL;
    size_t n = 0;
    int rc = file_read_raw(path, &raw, &n, e);
    if (rc) return rc;
    if (!str_ends_with(path, ".zst")) { *buf = raw; *len = n; return 0; }
    rc = zst_decompress(path, raw, n, buf, len, e);
    free(raw);
    return rc;
}

void file_clear_stale_tmp(const char *path) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".") >= (int)sizeof dir) return;
    if (slash && slash == path) snprintf(dir, sizeof dir, "/");
    DIR *d = opendir(dir);
    if (!d) return;
    const size_t nb = strlen(base);
    for (struct dirent *de; (de = readdir(d));) {
        const char *n = de->d_name;
        if (strncmp(n, base, nb) || strncmp(n + nb, ".tmp.", 5)) continue;
        long long pid;
        if (str_to_int(n + nb + 5, 1, 4194304, &pid) || pid == getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; // alive (or not ours to know)
        char p[8192];
        if (snprintf(p, sizeof p, "%s/%s", dir, n) < (int)sizeof p && !unlink(p))
            log_warn("%s: removed %s, left by process %lld that no longer runs", path, n, pid);
    }
    closedir(d);
}

int file_write_atomic(const char *path, const void *buf, size_t len, struct err *e) {
    char tmp[4096];
    file_clear_stale_tmp(path);
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
        return err_set(e, ERR_RANGE, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return err_set(e, ERR_IO, "%s: %s", tmp, strerror(errno));
    size_t w = len ? fwrite(buf, 1, len, f) : 0;
    int bad = (w != len) | (fflush(f) != 0) | (fsync(fileno(f)) != 0);
    bad |= fclose(f) != 0;
    if (bad) { unlink(tmp); return err_set(e, ERR_IO, "%s: write failed: %s", path, strerror(errno)); }
    if (rename(tmp, path) != 0) {
        int er = errno;
        unlink(tmp);
        return err_set(e, ERR_IO, "%s: rename failed: %s", path, strerror(er));
    }
    return 0;
}

int file_exists(const char *path) {
    struct stat st;
    // not only regular files: a FIFO or device where a file belongs must reach the reader, which
    // names what it is (file_open_regular), instead of passing for a missing file
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

int dir_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int mkdir_p(const char *path, struct err *e) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return err_set(e, ERR_RANGE, "mkdir: bad path '%s'", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return err_set(e, ERR_IO, "mkdir %s: %s", buf, strerror(errno));
            buf[i] = c;
        }
    }
    if (!dir_exists(path)) return err_set(e, ERR_IO, "mkdir %s: not a directory", path);
    return 0;
}

int path_join(char *out, size_t n, const char *a, const char *b, struct err *e) {
    size_t la = strlen(a);
    int r = (la && a[la - 1] == '/') ? snprintf(out, n, "%s%s", a, b) : snprintf(out, n, "%s/%s", a, b);
    if (r < 0 || (size_t)r >= n) return err_set(e, ERR_RANGE, "path too long: %s/%s", a, b);
    return 0;
}

void path_basename(char *out, size_t n, const char *path) {
    size_t l = strlen(path);
    while (l > 1 && path[l - 1] == '/') l--;
    size_t s = l;
    while (s > 0 && path[s - 1] != '/') s--;
    snprintf(out, n, "%.*s", (int)(l - s), path + s);
}

// ---- strings ----
char *str_dup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int str_ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

int str_to_int(const char *s, long long lo, long long hi, long long *out) {
    const char *p = s + (s[0] == '-');
    if (*p < '0' || *p > '9') return -1; // also refuses strtoll's leading blanks and '+'
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int str_to_ints(const char *s, char sep, int n, long long lo, long long hi, long long *out) {
    char buf[128];
    if (strlen(s) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", s);
    char *p = buf;
    for (int i = 0; i < n; i++) {
        char *q = strchr(p, sep);
        if ((q != NULL) != (i < n - 1)) return -1; // too few or too many fields
        if (q) *q = 0;
        if (str_to_int(p, lo, hi, &out[i])) return -1;
        if (q) p = q + 1;
    }
    return 0;
}

int utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        if (c < 0x80) { i++; continue; }
        int len;
        uint32_t cp, min;
        if ((c & 0xe0) == 0xc0) { len = 2; cp = c & 0x1f; min = 0x80; }
        else if ((c & 0xf0) == 0xe0) { len = 3; cp = c & 0x0f; min = 0x800; }
        else if ((c & 0xf8) == 0xf0) { len = 4; cp = c & 0x07; min = 0x10000; }
        else return 0;
        if (i + (size_t)len > n) return 0;
        for (int k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += (size_t)len;
    }
    return 1;
}

size_t utf8_count(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80) c++;
    return c;
}

void num_shortest(char *out, size_t n, double d) {
    for (int p = 15; p <= 17; p++)
        if (snprintf(out, n, "%.*g", p, d) > 0 && strtod(out, NULL) == d) return;
}
