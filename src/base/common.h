// common.h: the error type, the stderr logger, a monotonic timer, 16-bit float conversions
// and small file helpers shared by every module. Knows nothing about models or attention.
// Nothing here exits; errors are returned as negative enum err_code with a message in
// struct err (STYLE.md section 4).
#ifndef HIFA4_COMMON_H
#define HIFA4_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HIFA4_PI 3.14159265358979323846

// ---- errors ----
enum err_code {
    ERR_OK = 0,
    ERR_IO = -1,          // open/read/write/mmap failed
    ERR_FORMAT = -2,      // malformed input file (header, JSON, dataset row)
    ERR_NOMEM = -3,       // allocation failed
    ERR_USAGE = -4,       // bad command line (exit status 2)
    ERR_UNSUPPORTED = -5, // valid input we do not support (dtype, architecture, component)
    ERR_RANGE = -6,       // value out of range / overflow / capacity exceeded
    ERR_MISMATCH = -7,    // inconsistent inputs (hash, shape)
    ERR_NET = -8,         // network / HTTP failure
    ERR_NOTFOUND = -9,    // missing file / tensor / name
    ERR_INTERNAL = -10,   // broken invariant between our own modules
};

#define ERR_MSG_MAX 1024
struct err {
    int code;               // last error code (0 = none)
    char msg[ERR_MSG_MAX];  // one line, no trailing newline
};

// Fills e (may be NULL) with code and a printf-style one-line message; returns code, so
// callers write `return err_set(e, ERR_FORMAT, "%s: field 'x': ...", path);`.
int err_set(struct err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
// Prepends "prefix: " to an existing message (adds context while unwinding); returns e->code.
int err_prefix(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *err_code_name(int code);

// ---- logging (stderr only; the only way code below main.c prints) ----
enum log_level { LOG_QUIET = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };
void log_set_level(int level);
int log_get_level(void);
// on = 1 while a progress line is rewritten in place on the terminal (base/progress.h): each log
// line then clears it first instead of being appended to it.
void log_set_live_line(int on);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

// ---- time ----
double time_now(void); // monotonic seconds

// ---- 16-bit floats (binary32 <-> bfloat16 / binary16, round to nearest even) ----
// bf16: NaN stays NaN (quiet), overflow rounds to +-inf as IEEE RNE does.
// fp16: keeps subnormals, overflow gives +-inf, NaN stays NaN (spec/attention.md section 7.5).
static inline uint32_t f32_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static inline float bits_f32(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static inline float bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }
static inline uint16_t f32_to_bf16(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static inline float round_bf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float x);
static inline float round_fp16(float x) { return f16_to_f32(f32_to_f16(x)); }
// Rounds n floats in place to bf16 (vectorizable).
void round_bf16_n(float *x, size_t n);

// ---- checked arithmetic ----
// Returns 0 and sets *out, or -1 on overflow.
static inline int mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return -1;
    *out = a * b;
    return 0;
}

// ---- files ----
// Reads a whole file into a NUL-terminated malloc'd buffer (*len excludes the NUL). A path
// ending in ".zst" is decompressed with zstd. Errors name the path.
int file_read_all(const char *path, char **buf, size_t *len, struct err *e);
// The same without decompression: the file's bytes as stored (NUL-terminated).
int file_read_raw(const char *path, char **buf, size_t *len, struct err *e);
// Opens path for reading if it is a regular file (a link to one is followed): a FIFO, device,
// directory or socket is ERR_IO naming what it is, without blocking (a FIFO hung).
// *fd is the caller's to close.
int file_open_regular(const char *path, int *fd, struct err *e);
// Decompresses a zstd stream of n bytes (any number of frames; n == 0 is an empty text) into a
// NUL-terminated malloc'd buffer; name stands for the file in errors.
int zst_decompress(const char *name, const char *src, size_t n, char **buf, size_t *len, struct err *e);
// Writes len bytes to path atomically (path.tmp.PID + fsync + rename; stale temporaries of
// path first removed: file_clear_stale_tmp).
int file_write_atomic(const char *path, const void *buf, size_t len, struct err *e);
// Removes path.tmp.PID files beside path whose process PID no longer exists (a writer killed
// between creating its temporary and the rename left it). Another live writer's stay.
void file_clear_stale_tmp(const char *path);
// 1 when path (links followed) exists and is not a directory: a regular file, or a FIFO, device
// or socket that readers then refuse by name (file_open_regular).
int file_exists(const char *path);
int dir_exists(const char *path);
// mkdir -p; 0 or error.
int mkdir_p(const char *path, struct err *e);
// Last component of a path, trailing '/' ignored ("a/b/" -> "b"), truncated to n bytes.
void path_basename(char *out, size_t n, const char *path);
// snprintf that reports truncation as ERR_RANGE.
int path_join(char *out, size_t n, const char *a, const char *b, struct err *e);

// ---- strings ----
// The shortest of %.15g, %.16g, %.17g that reads back as d (0.10000000000000001 -> "0.1"): for
// numbers a person reads; %.17g where every bit must be written.
void num_shortest(char *out, size_t n, double d);
char *str_dup(const char *s);            // NULL on OOM (or NULL input)
int str_ends_with(const char *s, const char *suffix);
// A decimal integer in [lo, hi]: optional '-', then digits, and nothing else (no blanks, no
// '+', no hex). 0, or -1 when s is no such integer or is out of range - it never wraps
// (4294967298 is not 2). The one integer parser of options and option lists.
int str_to_int(const char *s, long long lo, long long hi, long long *out);
// Exactly n such integers separated by sep ("1/4", "32:32:8:128"); 0 or -1 as str_to_int.
int str_to_ints(const char *s, char sep, int n, long long lo, long long hi, long long *out);
// Validates UTF-8 (no overlongs, no surrogates, <= U+10FFFF). Returns 1 if valid.
int utf8_valid(const char *s, size_t n);
// Number of code points in valid UTF-8.
size_t utf8_count(const char *s, size_t n);

#endif
