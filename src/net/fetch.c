// fetch.c: the only network code (libcurl): resumable, verified downloads into the cache,
// plus plans for named models (Hugging Face Hub) and task data manifests. See fetch.h.
// Does not decompress or unpack archives, and never creates a curl handle when offline.
#include "net/fetch.h"

#include <ctype.h>
#include <curl/curl.h>
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
#include "base/progress.h"
#include "base/sha256.h"

#define URL_MAX 4096
#define PATH_MAX_ 4096

// ---- name validation ----
int fetch_check_relpath(const char *path, const char *what, struct err *e) {
    if (!path) return err_set(e, ERR_USAGE, "%s: missing", what);
    size_t n = strlen(path);
    if (n == 0) return err_set(e, ERR_USAGE, "%s '': empty name", what);
    if (n >= 1024) return err_set(e, ERR_USAGE, "%s '%.60s...': longer than 1023 bytes", what, path);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c < 0x20 || c == 0x7f) // the name itself is not echoed: it could garble the terminal
            return err_set(e, ERR_USAGE, "%s: control character 0x%02x at byte %zu of '%.*s...'", what, c, i,
                           (int)i, path);
        if (c == '\\') return err_set(e, ERR_USAGE, "%s '%s': backslash not allowed", what, path);
    }
    if (!utf8_valid(path, n)) return err_set(e, ERR_USAGE, "%s '%s': not valid UTF-8", what, path);
    if (path[0] == '/') return err_set(e, ERR_USAGE, "%s '%s': absolute path not allowed", what, path);
    const char *p = path;
    for (;;) {
        const char *s = strchr(p, '/');
        size_t l = s ? (size_t)(s - p) : strlen(p);
        if (l == 0) return err_set(e, ERR_USAGE, "%s '%s': empty path component", what, path);
        if ((l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
            return err_set(e, ERR_USAGE, "%s '%s': '.' and '..' components not allowed", what, path);
        if (!s) break;
        p = s + 1;
    }
    return 0;
}

int fetch_check_repo(const char *repo, struct err *e) {
    int rc = fetch_check_relpath(repo, "repository", e);
    if (rc) return rc;
    int slashes = 0;
    for (const char *p = repo; *p; p++) {
        if (*p == '/') slashes++;
        else if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return err_set(e, ERR_USAGE, "repository '%s': character '%c' not allowed (use A-Z a-z 0-9 . _ -)",
                           repo, *p);
    }
    if (slashes > 1) return err_set(e, ERR_USAGE, "repository '%s': expected 'owner/name'", repo);
    return 0;
}

// Model / task names become file names under configs/ and datasets/.
static int check_simple_name(const char *name, const char *what, int allow_slash, struct err *e) {
    int rc = fetch_check_relpath(name, what, e);
    if (rc) return rc;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.' && !(allow_slash && *p == '/'))
            return err_set(e, ERR_USAGE, "%s '%s': character '%c' not allowed", what, name, *p);
    if (name[0] == '.') return err_set(e, ERR_USAGE, "%s '%s': must not start with '.'", what, name);
    return 0;
}

static int is_hex64(const char *s) {
    if (!s || strlen(s) != 64) return 0;
    for (int i = 0; i < 64; i++) if (!isxdigit((unsigned char)s[i])) return 0;
    return 1;
}

// ---- options ----
static int env_int(const char *name, int def, int lo, int hi) {
    const char *s = getenv(name);
    if (!s || !*s) return def;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) {
        log_warn("fetch: ignoring %s=%s (expected an integer in [%d, %d])", name, s, lo, hi);
        return def;
    }
    return (int)v;
}

void fetch_opts_init(struct fetch_opts *o, int offline) {
    memset(o, 0, sizeof *o);
    const char *off = getenv("HIFA4_OFFLINE");
    o->offline = offline || (off && *off && strcmp(off, "0") != 0);
    o->retries = env_int("HIFA4_RETRIES", 5, 0, 100);
    o->retry_base_ms = env_int("HIFA4_RETRY_BASE_MS", 1000, 0, 600000);
    o->progress = 1;
    const char *t = getenv("HF_TOKEN");
    o->hf_token = (t && *t) ? t : NULL;
    const char *ep = getenv("HF_ENDPOINT");
    o->hf_endpoint = (ep && *ep) ? ep : "https://huggingface.co";
}

// ---- progress ----
static void fmt_bytes(char *b, size_t n, double v) {
    const char *u[] = {"B", "kB", "MB", "GB", "TB"};
    int i = 0;
    while (v >= 1000 && i < 4) { v /= 1000; i++; }
    snprintf(b, n, i ? "%.2f %s" : "%.0f %s", v, u[i]);
}

static void fmt_eta(char *b, size_t n, double s) {
    if (!(s >= 0) || s > 99 * 3600) { snprintf(b, n, "--"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(b, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(b, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(b, n, "%lds", t);
}

// ---- one transfer ----
struct xfer {
    int fd;                 // .part, opened O_APPEND
    struct sha256 h;        // over the whole .part content
    int64_t have;           // .part bytes before this response's body
    int64_t got;            // body bytes written by this attempt
    int started;            // first body byte seen
    int restarted;          // server ignored Range: .part truncated
    int bad_range;          // 206 with a Content-Range start != have
    int io_errno;           // write failure
    int64_t cr_start, cr_total, clen; // Content-Range start/total, Content-Length (-1 unknown)
    int64_t linked_size;
    char etag[160], linked_etag[160];
    CURL *c;
    // progress
    int show, tty;
    const char *label;
    double t0, last, last_done; // last: time of the last line written (< 0: none yet)
    int printed;
};

static void trim_copy(char *dst, size_t n, const char *v, size_t len) {
    while (len && (*v == ' ' || *v == '\t')) { v++; len--; }
    while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' ')) len--;
    if (len >= n) len = n - 1;
    memcpy(dst, v, len);
    dst[len] = 0;
}

static int hdr_is(const char *line, size_t len, const char *name, const char **val, size_t *vlen) {
    size_t k = strlen(name);
    if (len <= k || strncasecmp(line, name, k) != 0 || line[k] != ':') return 0;
    *val = line + k + 1;
    *vlen = len - k - 1;
    return 1;
}

static size_t on_header(char *buf, size_t sz, size_t nm, void *ud) {
    struct xfer *x = ud;
    size_t len = sz * nm;
    const char *v;
    size_t vl;
    char tmp[160];
    if (len >= 5 && !strncmp(buf, "HTTP/", 5)) { // a new response (redirects give several)
        x->cr_start = x->cr_total = x->clen = -1;
        x->etag[0] = 0;
    } else if (hdr_is(buf, len, "content-range", &v, &vl)) {
        trim_copy(tmp, sizeof tmp, v, vl);
        long long a, b, t;
        if (sscanf(tmp, "bytes %lld-%lld/%lld", &a, &b, &t) == 3) { x->cr_start = a; x->cr_total = t; }
    } else if (hdr_is(buf, len, "content-length", &v, &vl)) {
        trim_copy(tmp, sizeof tmp, v, vl);
        char *end;
        long long n = strtoll(tmp, &end, 10);
        if (!*end && n >= 0) x->clen = n;
    } else if (hdr_is(buf, len, "etag", &v, &vl)) {
        trim_copy(x->etag, sizeof x->etag, v, vl);
    } else if (hdr_is(buf, len, "x-linked-etag", &v, &vl)) {
        trim_copy(x->linked_etag, sizeof x->linked_etag, v, vl);
    } else if (hdr_is(buf, len, "x-linked-size", &v, &vl)) {
        trim_copy(tmp, sizeof tmp, v, vl);
        char *end;
        long long n = strtoll(tmp, &end, 10);
        if (!*end && n >= 0) x->linked_size = n;
    }
    return len;
}

static size_t on_body(char *buf, size_t sz, size_t nm, void *ud) {
    struct xfer *x = ud;
    size_t len = sz * nm;
    if (!x->started) {
        x->started = 1;
        long code = 0;
        curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &code);
        if (code == 200 && x->have > 0) { // server ignored Range: start over
            if (ftruncate(x->fd, 0) != 0) { x->io_errno = errno; return 0; }
            sha256_init(&x->h);
            x->have = 0;
            x->restarted = 1;
        } else if (code == 206 && x->cr_start != x->have) {
            x->bad_range = 1;
            return 0;
        }
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(x->fd, buf + off, len - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            x->io_errno = errno;
            return 0;
        }
        off += (size_t)w;
    }
    sha256_update(&x->h, buf, len);
    x->got += (int64_t)len;
    return len;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ut, curl_off_t un) {
    (void)ut; (void)un;
    struct xfer *x = ud;
    if (!x->show || log_get_level() < LOG_INFO) return 0;
    double now = time_now();
    double done = (double)(x->have + dlnow), total = dltotal > 0 ? (double)(x->have + dltotal) : -1;
    // the cadence of every progress line (base/progress.h): a terminal each second, a log every 30 s or 5%
    if (!progress_due(x->tty, now, done, total, x->last, x->last_done)) return 0;
    x->last = now;
    x->last_done = done;
    double rate = (now - x->t0) > 0 ? (double)dlnow / (now - x->t0) : 0;
    char bd[32], bt[32], br[32], eta[32];
    fmt_bytes(bd, sizeof bd, done);
    fmt_bytes(bt, sizeof bt, total);
    fmt_bytes(br, sizeof br, rate);
    fmt_eta(eta, sizeof eta, (total > 0 && rate > 0) ? (total - done) / rate : -1);
    if (x->tty) {
        char bar[31];
        int fill = total > 0 ? (int)(30 * done / total) : 0;
        for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
        bar[30] = 0;
        fprintf(stderr, "\r%-28.28s [%s] %s / %s  %s/s  ETA %s   ", x->label, bar, bd,
                total > 0 ? bt : "?", br, eta);
        x->printed = 1;
    } else {
        fprintf(stderr, "%s: %s / %s, %s/s, ETA %s\n", x->label, bd, total > 0 ? bt : "?", br, eta);
    }
    fflush(stderr);
    return 0;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

// Hashes the first `len` bytes of the file at path into h. Returns 0 or -errno-ish.
static int hash_file_prefix(const char *path, int64_t len, struct sha256 *h) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    static char buf[1 << 16];
    int64_t left = len;
    while (left > 0) {
        ssize_t r = read(fd, buf, left < (int64_t)sizeof buf ? (size_t)left : sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { close(fd); return -1; }
        sha256_update(h, buf, (size_t)r);
        left -= r;
    }
    close(fd);
    return 0;
}

// The sha256 an ETag names, if it is one (Hub LFS files: 64 hex digits, maybe W/ and quotes).
static int etag_sha(const char *etag, char out[65]) {
    const char *p = etag;
    if (!strncmp(p, "W/", 2)) p += 2;
    size_t n = strlen(p);
    if (n >= 2 && p[0] == '"' && p[n - 1] == '"') { p++; n -= 2; }
    if (n != 64) return 0;
    char t[65];
    memcpy(t, p, 64);
    t[64] = 0;
    if (!is_hex64(t)) return 0;
    for (int i = 0; i < 64; i++) out[i] = (char)tolower((unsigned char)t[i]);
    out[64] = 0;
    return 1;
}

static int curl_retryable(CURLcode rc) {
    switch (rc) {
    case CURLE_COULDNT_CONNECT: case CURLE_OPERATION_TIMEDOUT: case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR: case CURLE_SEND_ERROR: case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR: case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
        return 1;
    default:
        return 0;
    }
}

static int g_curl_ready;

// What every attempt of one fetch_url call shares.
struct dl {
    const char *url, *dest;
    const char *base;              // dest's file name (log lines, progress label)
    int64_t size;                  // expected size, -1 = unknown
    int use_token;
    const struct fetch_opts *o;
    struct fetch_result *r;
    char part[PATH_MAX_];          // dest + ".part"
    char expect[65];               // the caller's sha256 in lower case, "" = none
    CURL *c;
    struct curl_slist *hdrs;       // Authorization, or NULL
};

// Outcomes of the steps of fetch_url other than an error (a negative enum err_code).
enum { STEP_DONE = 0, STEP_RETRY = 1, STEP_GO_ON = 2 };

// An existing dest is trusted when it is a regular file of the expected size (r->already).
// Returns 1 when dest exists, 0 when it does not, or an error.
static int check_existing(const char *dest, int64_t size, struct fetch_result *r, struct err *e) {
    struct stat st;
    if (stat(dest, &st) != 0) return 0;
    if (!S_ISREG(st.st_mode)) return err_set(e, ERR_IO, "%s: exists and is not a regular file", dest);
    if (size >= 0 && (int64_t)st.st_size != size)
        return err_set(e, ERR_MISMATCH, "%s: has %lld bytes, expected %lld; delete it to download again",
                       dest, (long long)st.st_size, (long long)size);
    r->already = 1;
    return 1;
}

// Checks that need no file system and no curl: offline, the expected sha256, the URL scheme.
static int check_request(const char *url, const char *dest, const char *sha256, const struct fetch_opts *o,
                         struct err *e) {
    if (o->offline)
        return err_set(e, ERR_NOTFOUND, "offline: missing %s (expected at %s; source %s)",
                       strrchr(dest, '/') ? strrchr(dest, '/') + 1 : dest, dest, url);
    if (sha256 && *sha256 && !is_hex64(sha256))
        return err_set(e, ERR_INTERNAL, "fetch %s: expected sha256 '%s' is not 64 hex digits", url, sha256);
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
        return err_set(e, ERR_USAGE, "fetch: '%s' is not an http(s) URL", url);
    return 0;
}

// d->part = dest + ".part"; creates dest's directory.
static int make_part_path(struct dl *d, struct err *e) {
    char dir[PATH_MAX_];
    if (snprintf(d->part, sizeof d->part, "%s.part", d->dest) >= (int)sizeof d->part)
        return err_set(e, ERR_RANGE, "path too long: %s", d->dest);
    snprintf(dir, sizeof dir, "%s", d->dest);
    char *sl = strrchr(dir, '/');
    if (sl && sl != dir) {
        *sl = 0;
        int rc = mkdir_p(dir, e);
        if (rc) return rc;
    }
    return 0;
}

static int curl_ready(struct err *e) {
    if (!g_curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return err_set(e, ERR_NET, "fetch: curl_global_init failed");
        g_curl_ready = 1;
    }
    return 0;
}

// The Authorization header when this URL may carry HF_TOKEN; the token goes into a header
// line, so spaces and control characters are refused.
static int auth_header(struct curl_slist **hdrs, int use_token, const struct fetch_opts *o, struct err *e) {
    if (!use_token || !o->hf_token) return 0;
    for (const char *p = o->hf_token; *p; p++)
        if ((unsigned char)*p < 0x21 || *p == 0x7f)
            return err_set(e, ERR_USAGE, "HF_TOKEN contains a space or control character");
    char ah[1024];
    if (snprintf(ah, sizeof ah, "Authorization: Bearer %s", o->hf_token) >= (int)sizeof ah)
        return err_set(e, ERR_USAGE, "HF_TOKEN is too long");
    *hdrs = curl_slist_append(*hdrs, ah);
    if (!*hdrs) return err_set(e, ERR_NOMEM, "fetch: out of memory");
    return 0;
}

// ---- one attempt ----
// A .part of the full size (killed between the last byte and the rename): verify it against
// the manifest's sha256 without the network. STEP_DONE when it matched and became dest,
// STEP_GO_ON when it did not (the caller starts over), or an error (x->fd closed).
static int complete_part(struct dl *d, struct xfer *x, struct err *e) {
    struct sha256 hh;
    uint8_t dg[32];
    char got[65];
    sha256_init(&hh);
    if (hash_file_prefix(d->part, x->have, &hh) != 0) return STEP_GO_ON;
    sha256_final(&hh, dg);
    sha256_to_hex(dg, got);
    if (strcmp(got, d->expect)) return STEP_GO_ON;
    close(x->fd);
    if (rename(d->part, d->dest) != 0)
        return err_set(e, ERR_IO, "rename %s -> %s: %s", d->part, d->dest, strerror(errno));
    d->r->verified_sha = 1;
    memcpy(d->r->sha256, got, 65);
    d->r->resumed_from = x->have;
    log_info("%s: complete .part verified, sha256 ok", d->base);
    return STEP_DONE;
}

// Opens and locks the .part and sets x up to resume from its bytes (hashed into x->h); a
// .part at or past the expected size starts over. Returns STEP_GO_ON with x->fd open,
// STEP_DONE (complete .part verified, see complete_part), or an error with x->fd closed.
static int open_part(struct xfer *x, struct dl *d, struct err *e) {
    int rc;
    memset(x, 0, sizeof *x);
    x->c = d->c;
    x->linked_size = -1;
    x->cr_start = x->cr_total = x->clen = -1;
    x->fd = open(d->part, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (x->fd < 0) return err_set(e, ERR_IO, "%s: %s", d->part, strerror(errno));
    // Two processes appending to one .part would interleave bytes: one writer at a time.
    if (flock(x->fd, LOCK_EX | LOCK_NB) != 0) {
        rc = err_set(e, ERR_IO, "%s: another process is downloading this file (locked)", d->part);
        close(x->fd);
        return rc;
    }
    struct stat ps;
    if (fstat(x->fd, &ps) != 0) { rc = err_set(e, ERR_IO, "%s: %s", d->part, strerror(errno)); close(x->fd); return rc; }
    x->have = ps.st_size;
    if (d->size >= 0 && x->have == d->size && d->expect[0]) {
        rc = complete_part(d, x, e);
        if (rc != STEP_GO_ON) return rc;
    }
    if (d->size >= 0 && x->have >= d->size) {
        if (ftruncate(x->fd, 0) != 0) { rc = err_set(e, ERR_IO, "%s: %s", d->part, strerror(errno)); close(x->fd); return rc; }
        x->have = 0;
    }
    sha256_init(&x->h);
    if (x->have > 0 && hash_file_prefix(d->part, x->have, &x->h) != 0) {
        rc = err_set(e, ERR_IO, "%s: cannot read partial file", d->part);
        close(x->fd);
        return rc;
    }
    if (x->have > 0) log_info("resuming %s from byte %lld", d->base, (long long)x->have);
    x->show = d->o->progress;
    x->tty = isatty(2);
    x->label = d->base;
    x->t0 = time_now();
    x->last = -1;
    x->last_done = 0;
    return STEP_GO_ON;
}

// Sets up the GET of d->url into x (range: the caller's buffer for the Range header).
static void set_request(struct dl *d, struct xfer *x, char *range, size_t range_n) {
    CURL *c = d->c;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, d->url);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "hifa4-eval/0.1 (libcurl)");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);   // abort a stalled transfer
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
    // curl >= 7.58 drops a custom Authorization header on a redirect to another host
    // (the Hub redirects LFS files to its CDN), so the token never leaves the endpoint.
    if (d->hdrs) curl_easy_setopt(c, CURLOPT_HTTPHEADER, d->hdrs);
    if (x->have > 0) {
        snprintf(range, range_n, "%lld-", (long long)x->have);
        curl_easy_setopt(c, CURLOPT_RANGE, range);
    }
}

// A 200/206 response ended: checks the size and the sha256 (the caller's, else the server's
// ETag), then fsyncs the .part and renames it to dest. Returns STEP_DONE; STEP_RETRY with the
// reason in why when the body is shorter than the server announced (x->fd still open); or
// an error (a size or sha256 mismatch deletes the .part).
static int finish_transfer(struct dl *d, struct xfer *x, long code, char *why, size_t why_n, struct err *e) {
    int64_t total = x->have + x->got;
    int64_t server_total = code == 206 ? x->cr_total : x->clen;
    if (server_total < 0) server_total = x->linked_size;
    if (d->size >= 0 && total != d->size) {
        close(x->fd);
        unlink(d->part);
        return err_set(e, ERR_MISMATCH, "%s: got %lld bytes, expected %lld; the partial file was deleted",
                       d->url, (long long)total, (long long)d->size);
    }
    if (d->size < 0 && server_total >= 0 && total != server_total) {
        snprintf(why, why_n, "got %lld of %lld bytes", (long long)total, (long long)server_total);
        return STEP_RETRY;
    }
    char want[65] = "", got[65];
    uint8_t dg[32];
    sha256_final(&x->h, dg);
    sha256_to_hex(dg, got);
    if (d->expect[0]) memcpy(want, d->expect, 65);
    else if (!etag_sha(x->linked_etag, want) && !etag_sha(x->etag, want)) want[0] = 0;
    if (want[0] && strcmp(want, got) != 0) {
        close(x->fd);
        unlink(d->part);
        return err_set(e, ERR_MISMATCH, "%s: sha256 mismatch (expected %s from the %s, got %s); the download was deleted",
                       d->url, want, d->expect[0] ? "manifest" : "server ETag", got);
    }
    if (!want[0]) log_info("%s: no sha256 known (manifest or ETag), checked the size only", d->base);
    if (fsync(x->fd) != 0 || close(x->fd) != 0) return err_set(e, ERR_IO, "%s: %s", d->part, strerror(errno));
    if (rename(d->part, d->dest) != 0) return err_set(e, ERR_IO, "rename %s -> %s: %s", d->part, d->dest, strerror(errno));
    d->r->verified_sha = want[0] != 0;
    memcpy(d->r->sha256, got, 65);
    log_info("%s: %lld bytes%s", d->base, (long long)total, d->r->verified_sha ? ", sha256 ok" : "");
    return STEP_DONE;
}

// A failed transfer (curl error or HTTP status): STEP_RETRY with the reason in why for what
// may pass on another try (a .part that cannot be resumed is emptied first), else an error.
static int classify_failure(const struct dl *d, const struct xfer *x, CURLcode cr, long code, char *why,
                            size_t why_n, struct err *e) {
    if (x->io_errno) return err_set(e, ERR_IO, "%s: write failed: %s", d->part, strerror(x->io_errno));
    if (x->bad_range) {
        snprintf(why, why_n, "server answered Range with a different start");
        truncate(d->part, 0);
        return STEP_RETRY;
    }
    if (cr == CURLE_HTTP_RETURNED_ERROR || (cr == CURLE_OK && code >= 300)) {
        if (code == 404) return err_set(e, ERR_NOTFOUND, "%s: HTTP 404 Not Found", d->url);
        if (code == 401 || code == 403)
            return err_set(e, ERR_NET, "%s: HTTP %ld %s", d->url, code,
                           !d->use_token ? "access denied"
                           : d->o->hf_token ? "HF_TOKEN was rejected or has no access to this repository (gated models: accept the license on the model page first)"
                                            : "authentication required: the repository is gated or private; accept its license on the model page and set HF_TOKEN");
        if (code == 416) { // our .part does not fit the server's file: start over
            truncate(d->part, 0);
            snprintf(why, why_n, "HTTP 416 for a resumed range");
            return STEP_RETRY;
        }
        if (code >= 500 || code == 429 || code == 408) {
            snprintf(why, why_n, "HTTP %ld", code);
            return STEP_RETRY;
        }
        return err_set(e, ERR_NET, "%s: HTTP %ld", d->url, code);
    }
    if (curl_retryable(cr)) {
        snprintf(why, why_n, "%s", curl_easy_strerror(cr));
        return STEP_RETRY;
    }
    return err_set(e, ERR_NET, "%s: %s%s", d->url, curl_easy_strerror(cr),
                   cr == CURLE_COULDNT_RESOLVE_HOST ? " (no network? use --offline with files in the cache)" : "");
}

// One request resuming from the .part: STEP_DONE (dest is complete), STEP_RETRY (reason in
// why; the .part is kept unless it cannot be resumed) or an error.
static int one_attempt(struct dl *d, char *why, size_t why_n, struct err *e) {
    struct xfer x;
    int rc = open_part(&x, d, e);
    if (rc != STEP_GO_ON) return rc;
    char range[64];
    set_request(d, &x, range, sizeof range);
    d->r->requests++;
    CURLcode cr = curl_easy_perform(d->c);
    long code = 0;
    curl_easy_getinfo(d->c, CURLINFO_RESPONSE_CODE, &code);
    if (x.printed) fputc('\n', stderr);
    d->r->bytes_received += x.got;
    d->r->resumed_from = x.have;
    if (cr == CURLE_OK && (code == 200 || code == 206)) {
        rc = finish_transfer(d, &x, code, why, why_n, e);
        if (rc != STEP_RETRY) return rc;
        close(x.fd);
        return STEP_RETRY;
    }
    close(x.fd);
    return classify_failure(d, &x, cr, code, why, why_n, e);
}

// ---- retries ----
// No attempts left: the error names the last reason; a non-empty .part is kept to resume.
static int give_up(const struct dl *d, int attempt, const char *why, struct err *e) {
    struct stat ps2;
    int64_t kept = stat(d->part, &ps2) == 0 ? (int64_t)ps2.st_size : 0;
    int rc = err_set(e, ERR_NET, "%s: %s after %d attempt%s%s", d->url, why, attempt + 1,
                     attempt ? "s" : "",
                     kept > 0 ? "; the partial file is kept, run again to resume" : "");
    if (kept > 0) log_info("kept %lld bytes in %s", (long long)kept, d->part);
    return rc;
}

// Exponential back-off: retry_base_ms * 2^attempt, at most 60 s.
static void wait_retry(const struct dl *d, int attempt, const char *why) {
    long delay = (long)d->o->retry_base_ms << (attempt < 16 ? attempt : 16);
    if (delay > 60000) delay = 60000;
    log_warn("%s: %s; retry %d/%d in %.1f s", d->base, why, attempt + 1, d->o->retries, delay / 1000.0);
    sleep_ms(delay);
}

int fetch_url(const char *url, const char *dest, struct fetch_expect x, enum fetch_auth auth,
              const struct fetch_opts *o, struct fetch_result *r, struct err *e) {
    const int64_t size = x.size;
    const char *sha256 = x.sha256;
    const int use_token = auth == FETCH_HF_TOKEN;
    struct fetch_result dummy;
    if (!r) r = &dummy;
    memset(r, 0, sizeof *r);
    int rc = check_existing(dest, size, r, e);
    if (rc < 0) return rc;
    if (rc == 1) return 0; // already there
    if ((rc = check_request(url, dest, sha256, o, e))) return rc;
    struct dl d = {.url = url, .dest = dest, .size = size, .use_token = use_token, .o = o, .r = r};
    if ((rc = make_part_path(&d, e)) || (rc = curl_ready(e))) return rc;
    d.c = curl_easy_init();
    if (!d.c) return err_set(e, ERR_NOMEM, "fetch: curl_easy_init failed");
    if ((rc = auth_header(&d.hdrs, use_token, o, e))) goto done;
    d.base = strrchr(dest, '/') ? strrchr(dest, '/') + 1 : dest;
    if (sha256 && *sha256)
        for (int i = 0; i < 65; i++) d.expect[i] = (char)tolower((unsigned char)sha256[i]);

    for (int attempt = 0;; attempt++) {
        char why[512] = "";
        rc = one_attempt(&d, why, sizeof why, e);
        if (rc != STEP_RETRY) break;
        if (attempt >= o->retries) {
            rc = give_up(&d, attempt, why, e);
            break;
        }
        wait_retry(&d, attempt, why);
    }
done:
    if (rc) { // do not leave an empty .part behind (404, 401, ...)
        struct stat ps3;
        if (stat(d.part, &ps3) == 0 && ps3.st_size == 0) unlink(d.part);
    }
    curl_slist_free_all(d.hdrs);
    curl_easy_cleanup(d.c);
    return rc;
}

// ---- plans ----
void fetch_plan_free(struct fetch_plan *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) {
        free(p->v[i].url);
        free(p->v[i].dest);
        free(p->v[i].rel);
        free(p->v[i].manual);
        free(p->v[i].member);
    }
    free(p->v);
    memset(p, 0, sizeof *p);
}

static char *fmt_dup(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *fmt_dup(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

// Percent-encodes a relative path for a URL, keeping '/' and RFC 3986 unreserved characters.
static char *url_path_enc(const char *s) {
    size_t n = strlen(s);
    char *o = malloc(3 * n + 1), *q = o;
    if (!o) return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' || *p == '/') *q++ = (char)*p;
        else q += sprintf(q, "%%%02X", *p);
    }
    *q = 0;
    return o;
}

static struct fetch_entry *plan_add(struct fetch_plan *p, struct err *e) {
    if (p->n == p->cap) {
        int nc = p->cap ? 2 * p->cap : 16;
        struct fetch_entry *v = realloc(p->v, sizeof *v * (size_t)nc);
        if (!v) { err_set(e, ERR_NOMEM, "fetch: out of memory"); return NULL; }
        p->v = v;
        p->cap = nc;
    }
    struct fetch_entry *x = &p->v[p->n++];
    memset(x, 0, sizeof *x);
    x->size = -1;
    return x;
}

// What a Hub file is to the plan: a file the model needs, one it may lack (404 is a warning),
// or a weight shard (its list may be replaced by the index's).
enum hub_file { HUB_REQUIRED, HUB_OPTIONAL, HUB_SHARD };

// Adds Hub file `file` of the plan's model (p->repo/p->rev).
static int plan_add_hub(struct fetch_plan *p, const char *file, enum hub_file kind, struct err *e) {
    int rc = fetch_check_relpath(file, "file", e);
    if (rc) return err_prefix(e, "%s", p->title);
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->v[i].rel, file)) return 0; // listed twice
    struct fetch_entry *x = plan_add(p, e);
    if (!x) return ERR_NOMEM;
    char *ef = url_path_enc(file);
    x->rel = str_dup(file);
    x->dest = fmt_dup("%s/%s", p->root, file);
    x->url = ef ? fmt_dup("%s/%s", p->url_base, ef) : NULL;
    free(ef);
    x->use_token = 1;
    x->shard = kind == HUB_SHARD;
    x->optional = kind == HUB_OPTIONAL;
    if (!x->rel || !x->dest || !x->url) return err_set(e, ERR_NOMEM, "fetch: out of memory");
    x->present = file_exists(x->dest);
    return 0;
}

// Shard file names from a model.safetensors.index.json (weight_map values, first-seen order).
int fetch_index_shards(const char *path, cJSON **out, struct err *e) {
    cJSON *j = NULL;
    int rc = json_parse_file(&j, path, e);
    if (rc) return rc;
    const cJSON *wm;
    rc = json_need_obj(j, "weight_map", &wm, path, e);
    if (rc) { cJSON_Delete(j); return rc; }
    cJSON *names = cJSON_CreateArray();
    if (!names) { cJSON_Delete(j); return err_set(e, ERR_NOMEM, "fetch: out of memory"); }
    const cJSON *it;
    cJSON_ArrayForEach(it, wm) {
        if (!cJSON_IsString(it)) {
            rc = err_set(e, ERR_FORMAT, "%s: weight_map['%s']: expected a string, got %s", path,
                         it->string, json_brief(it));
            break;
        }
        rc = fetch_check_relpath(it->valuestring, "shard", e);
        if (rc) { err_prefix(e, "%s: weight_map['%s']", path, it->string); break; }
        int seen = 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, names) if (!strcmp(s->valuestring, it->valuestring)) seen = 1;
        if (!seen) cJSON_AddItemToArray(names, cJSON_CreateString(it->valuestring));
    }
    cJSON_Delete(j);
    if (!rc && cJSON_GetArraySize(names) == 0) rc = err_set(e, ERR_FORMAT, "%s: weight_map is empty", path);
    if (rc) { cJSON_Delete(names); return rc; }
    *out = names;
    return 0;
}

static void list_names(char *buf, size_t n, const char *dir) {
    buf[0] = 0;
    DIR *d = opendir(dir);
    if (!d) { snprintf(buf, n, "(cannot read %s)", dir); return; }
    struct dirent *de;
    size_t l = 0;
    while ((de = readdir(d))) {
        size_t k = strlen(de->d_name);
        if (k > 5 && !strcmp(de->d_name + k - 5, ".json") && l + k < n - 2) {
            l += (size_t)snprintf(buf + l, n - l, "%s%.*s", l ? ", " : "", (int)(k - 5), de->d_name);
        }
    }
    closedir(d);
}

int fetch_plan_model(struct fetch_plan *p, const char *name, const struct fetch_opts *o, struct err *e) {
    memset(p, 0, sizeof *p);
    int rc = check_simple_name(name, "model name", 0, e);
    if (rc) return rc;
    char home[PATH_MAX_], cfg[PATH_MAX_];
    if ((rc = paths_home(home, sizeof home, e))) return rc;
    if (snprintf(cfg, sizeof cfg, "%s/configs/models/%s.json", home, name) >= (int)sizeof cfg)
        return err_set(e, ERR_RANGE, "path too long");
    if (!file_exists(cfg)) {
        char known[1024], dir[PATH_MAX_ + 32];
        snprintf(dir, sizeof dir, "%s/configs/models", home);
        list_names(known, sizeof known, dir);
        return err_set(e, ERR_NOTFOUND, "unknown model '%s' (no %s); known: %s; or pass a checkpoint directory",
                       name, cfg, known[0] ? known : "none");
    }
    char *txt = NULL;
    size_t len = 0;
    if ((rc = file_read_all(cfg, &txt, &len, e))) return rc;
    rc = fetch_plan_model_mem(p, name, txt, len, cfg, o, e);
    free(txt);
    return rc;
}

int fetch_plan_model_mem(struct fetch_plan *p, const char *name, const char *json, size_t len, const char *cfg,
                         const struct fetch_opts *o, struct err *e) {
    memset(p, 0, sizeof *p);
    char cache[PATH_MAX_];
    cJSON *j = NULL, *idx = NULL;
    int rc;
    if ((rc = json_parse(&j, json, len, cfg, e))) return rc;
    const char *repo, *rev = "main", *index = NULL;
    const cJSON *files, *shards = NULL;
    if ((rc = json_need_str(j, "repo", &repo, cfg, e)) || (rc = json_opt_str(j, "revision", &rev, "main", cfg, e)) ||
        (rc = json_need_arr(j, "files", &files, cfg, e)) || (rc = json_opt_arr(j, "shards", &shards, cfg, e)) ||
        (rc = json_opt_str(j, "index", &index, NULL, cfg, e)))
        goto fail;
    if ((rc = fetch_check_repo(repo, e)) || (rc = fetch_check_relpath(rev, "revision", e))) {
        err_prefix(e, "%s", cfg);
        goto fail;
    }
    if (index && (rc = fetch_check_relpath(index, "index", e))) { err_prefix(e, "%s", cfg); goto fail; }
    if ((rc = paths_cache(cache, sizeof cache, e))) goto fail;
    const char *ep = o->hf_endpoint ? o->hf_endpoint : "https://huggingface.co";
    if (strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8)) {
        rc = err_set(e, ERR_USAGE, "HF_ENDPOINT '%s': expected an http:// or https:// URL", ep);
        goto fail;
    }
    size_t epl = strlen(ep);
    while (epl && ep[epl - 1] == '/') epl--;
    char *erev = url_path_enc(rev);
    if (!erev) { rc = err_set(e, ERR_NOMEM, "fetch: out of memory"); goto fail; }
    int w1 = snprintf(p->root, sizeof p->root, "%s/models/%s/%s", cache, repo, rev);
    int w2 = snprintf(p->url_base, sizeof p->url_base, "%.*s/%s/resolve/%s", (int)epl, ep, repo, erev);
    free(erev);
    snprintf(p->title, sizeof p->title, "model %s (%s@%s)", name, repo, rev);
    if (w1 >= (int)sizeof p->root || w2 >= (int)sizeof p->url_base) {
        rc = err_set(e, ERR_RANGE, "%s: path or URL too long", cfg);
        goto fail;
    }
    if (index) snprintf(p->index_rel, sizeof p->index_rel, "%s", index);
    const cJSON *it;
    cJSON_ArrayForEach(it, files) {
        if (!cJSON_IsString(it)) {
            rc = err_set(e, ERR_FORMAT, "%s: field 'files': expected strings, got %s", cfg, json_brief(it));
            goto fail;
        }
        if ((rc = plan_add_hub(p, it->valuestring, HUB_REQUIRED, e))) goto fail;
    }
    const cJSON *opt = NULL;
    if ((rc = json_opt_arr(j, "optional_files", &opt, cfg, e))) goto fail;
    if (opt) cJSON_ArrayForEach(it, opt) {
        if (!cJSON_IsString(it)) {
            rc = err_set(e, ERR_FORMAT, "%s: field 'optional_files': expected strings, got %s", cfg, json_brief(it));
            goto fail;
        }
        if ((rc = plan_add_hub(p, it->valuestring, HUB_OPTIONAL, e))) goto fail;
    }
    const char *lic = NULL, *note = NULL;
    int gated = 0;
    if ((rc = json_opt_str(j, "license", &lic, NULL, cfg, e)) || (rc = json_opt_str(j, "note", &note, NULL, cfg, e)) ||
        (rc = json_opt_bool(j, "gated", &gated, 0, cfg, e)))
        goto fail;
    snprintf(p->license, sizeof p->license, "%s%s%s%s", lic ? lic : "license not recorded",
             gated ? " (gated)" : "", note ? "; " : "", note ? note : "");
    // Shards: the cached index is authoritative; else the config's list (checked later).
    char ipath[PATH_MAX_];
    if (index && snprintf(ipath, sizeof ipath, "%s/%s", p->root, index) < (int)sizeof ipath && file_exists(ipath)) {
        if ((rc = fetch_index_shards(ipath, &idx, e))) goto fail;
        shards = idx;
        p->shards_from_index = 1;
    }
    if (shards) cJSON_ArrayForEach(it, shards) {
        if (!cJSON_IsString(it)) {
            rc = err_set(e, ERR_FORMAT, "%s: field 'shards': expected strings, got %s", cfg, json_brief(it));
            goto fail;
        }
        if ((rc = plan_add_hub(p, it->valuestring, HUB_SHARD, e))) goto fail;
    }
    cJSON_Delete(idx);
    cJSON_Delete(j);
    return 0;
fail:
    cJSON_Delete(idx);
    cJSON_Delete(j);
    fetch_plan_free(p);
    return rc;
}

// datasets/<task>.json under paths_home into man (which must exist; the error lists the
// known manifests).
static int task_manifest(char *man, size_t n, const char *task, struct err *e) {
    int rc = check_simple_name(task, "task", 1, e);
    if (rc) return rc;
    char home[PATH_MAX_];
    if ((rc = paths_home(home, sizeof home, e))) return rc;
    if (snprintf(man, n, "%s/datasets/%s.json", home, task) >= (int)n)
        return err_set(e, ERR_RANGE, "path too long");
    if (!file_exists(man)) {
        char known[1024], dir[PATH_MAX_ + 32];
        snprintf(dir, sizeof dir, "%s/datasets", home);
        list_names(known, sizeof known, dir);
        return err_set(e, ERR_NOTFOUND, "no data manifest for task '%s' (%s); known: %s", task, man,
                       known[0] ? known : "none");
    }
    return 0;
}

// One entry of a manifest's "archives" (ctx: "<manifest>: archives[K]" for errors).
static int plan_archive(struct fetch_plan *p, const cJSON *it, const char *ctx, struct err *e) {
    const char *id, *path, *url, *fmt, *sha = NULL;
    int64_t size = -1;
    int rc;
    if ((rc = json_need_str(it, "id", &id, ctx, e)) || (rc = json_need_str(it, "path", &path, ctx, e)) ||
        (rc = json_need_str(it, "url", &url, ctx, e)) || (rc = json_need_str(it, "format", &fmt, ctx, e)) ||
        (rc = json_opt_str(it, "sha256", &sha, NULL, ctx, e)) || (rc = json_opt_i64(it, "size", &size, -1, ctx, e)))
        return rc;
    if ((rc = fetch_check_relpath(path, "path", e))) { err_prefix(e, "%s", ctx); return rc; }
    if (strcmp(fmt, "tar")) return err_set(e, ERR_UNSUPPORTED, "%s: format '%s': only 'tar' is supported", ctx, fmt);
    if (sha && !is_hex64(sha)) return err_set(e, ERR_FORMAT, "%s: sha256 '%s': expected 64 hex digits", ctx, sha);
    if (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))
        return err_set(e, ERR_FORMAT, "%s: url '%s': expected http(s)", ctx, url);
    struct fetch_entry *x = plan_add(p, e);
    if (!x) return ERR_NOMEM;
    x->rel = str_dup(path);
    x->dest = fmt_dup("%s/%s", p->root, path);
    x->url = str_dup(url);
    x->member = str_dup(id); // archives keep their id here
    x->is_archive = 1;
    x->size = size;
    if (sha) snprintf(x->sha256, sizeof x->sha256, "%s", sha);
    if (!x->rel || !x->dest || !x->url || !x->member) return err_set(e, ERR_NOMEM, "fetch: out of memory");
    x->present = file_exists(x->dest);
    return 0;
}

// One entry of a manifest's "files", as read and validated by read_task_file.
struct task_file {
    const char *path, *url, *sha, *manual, *arch, *member, *sys, *src_for;
    const cJSON *alts;
    int64_t size;
    int ai; // 1 + index of its archive in the plan, 0 = none
};

static int read_task_file(struct task_file *f, const struct fetch_plan *p, const cJSON *it, const char *ctx,
                          const char *top_manual, struct err *e) {
    memset(f, 0, sizeof *f);
    f->size = -1;
    int rc;
    if ((rc = json_need_str(it, "path", &f->path, ctx, e)) || (rc = json_opt_str(it, "url", &f->url, NULL, ctx, e)) ||
        (rc = json_opt_str(it, "sha256", &f->sha, NULL, ctx, e)) || (rc = json_opt_i64(it, "size", &f->size, -1, ctx, e)) ||
        (rc = json_opt_str(it, "manual", &f->manual, NULL, ctx, e)) || (rc = json_opt_str(it, "archive", &f->arch, NULL, ctx, e)) ||
        (rc = json_opt_str(it, "member", &f->member, NULL, ctx, e)) || (rc = json_opt_arr(it, "alt_paths", &f->alts, ctx, e)) ||
        (rc = json_opt_str(it, "system_path", &f->sys, NULL, ctx, e)) ||
        (rc = json_opt_str(it, "source_for", &f->src_for, NULL, ctx, e)))
        return rc;
    if ((rc = fetch_check_relpath(f->path, "path", e))) { err_prefix(e, "%s", ctx); return rc; }
    if (f->sha && !is_hex64(f->sha)) return err_set(e, ERR_FORMAT, "%s: sha256 '%s': expected 64 hex digits", ctx, f->sha);
    if (f->url && strncmp(f->url, "https://", 8) && strncmp(f->url, "http://", 7))
        return err_set(e, ERR_FORMAT, "%s: url '%s': expected http(s)", ctx, f->url);
    const char *sys = f->sys;
    if (sys && (sys[0] != '/' || strstr(sys, "/../") || strstr(sys, "/./")))
        return err_set(e, ERR_FORMAT, "%s: system_path '%s': expected a clean absolute path", ctx, sys);
    if (f->arch) {
        for (int i = 0; i < p->n; i++)
            if (p->v[i].is_archive && !strcmp(p->v[i].member, f->arch)) f->ai = i + 1;
        if (!f->ai) return err_set(e, ERR_FORMAT, "%s: archive '%s' is not in 'archives'", ctx, f->arch);
        if (!f->member) return err_set(e, ERR_FORMAT, "%s: 'archive' needs 'member'", ctx);
        if ((rc = fetch_check_relpath(f->member, "member", e))) { err_prefix(e, "%s", ctx); return rc; }
    }
    if (!f->url && !f->ai && !f->manual && !top_manual)
        return err_set(e, ERR_FORMAT, "%s: needs 'url', 'archive' or 'manual'", ctx);
    return 0;
}

// Adds a validated files[] entry. It counts as present when its destination, one of its
// alt_paths, or (source_for) the earlier file it only serves to make is there.
static int plan_task_file(struct fetch_plan *p, const struct task_file *f, const char *ctx, const char *top_manual,
                          struct err *e) {
    struct fetch_entry *x = plan_add(p, e);
    if (!x) return ERR_NOMEM;
    const char *man_txt = f->manual ? f->manual : top_manual;
    x->rel = str_dup(f->path);
    x->dest = f->sys ? str_dup(f->sys) : fmt_dup("%s/%s", p->root, f->path);
    x->url = f->url ? str_dup(f->url) : NULL;
    x->manual = man_txt ? str_dup(man_txt) : NULL;
    x->member = f->member ? str_dup(f->member) : NULL;
    x->archive = f->ai;
    x->system = f->sys != NULL;
    x->size = f->size;
    if (f->sha) snprintf(x->sha256, sizeof x->sha256, "%s", f->sha);
    if (!x->rel || !x->dest || (f->url && !x->url) || (man_txt && !x->manual) || (f->member && !x->member))
        return err_set(e, ERR_NOMEM, "fetch: out of memory");
    x->present = f->sys ? (file_exists(x->dest) || dir_exists(x->dest)) : file_exists(x->dest);
    const cJSON *a;
    if (f->alts) cJSON_ArrayForEach(a, f->alts) {
        char ap[PATH_MAX_ + 8];
        if (!cJSON_IsString(a) || fetch_check_relpath(a->valuestring, "alt_paths", e))
            return err_set(e, ERR_FORMAT, "%s: alt_paths: bad entry %s", ctx, json_brief(a));
        snprintf(ap, sizeof ap, "%s/%s", p->root, a->valuestring);
        if (file_exists(ap)) x->present = 1;
    }
    if (f->src_for) { // only needed to make an earlier-listed file that is missing
        int found = 0;
        for (int i = 0; i < p->n - 1; i++)
            if (!strcmp(p->v[i].rel, f->src_for)) { found = 1; if (p->v[i].present) x->present = 1; }
        if (!found) return err_set(e, ERR_FORMAT, "%s: source_for '%s': no earlier file with that path", ctx, f->src_for);
    }
    return 0;
}

int fetch_plan_task(struct fetch_plan *p, const char *task, struct err *e) {
    memset(p, 0, sizeof *p);
    char man[PATH_MAX_];
    int rc = task_manifest(man, sizeof man, task, e);
    if (rc) return rc;
    char *txt = NULL;
    size_t len = 0;
    if ((rc = file_read_all(man, &txt, &len, e))) return rc;
    rc = fetch_plan_task_mem(p, task, txt, len, man, e);
    free(txt);
    return rc;
}

int fetch_plan_task_mem(struct fetch_plan *p, const char *task, const char *json, size_t len, const char *man,
                        struct err *e) {
    memset(p, 0, sizeof *p);
    char cache[PATH_MAX_];
    int rc;
    if ((rc = paths_cache(cache, sizeof cache, e))) return rc;
    if (snprintf(p->root, sizeof p->root, "%s/datasets", cache) >= (int)sizeof p->root)
        return err_set(e, ERR_RANGE, "cache path too long");
    snprintf(p->title, sizeof p->title, "task %s", task);
    cJSON *j = NULL;
    if ((rc = json_parse(&j, json, len, man, e))) return rc;
    const cJSON *files, *it;
    const char *top_manual = NULL;
    if ((rc = json_need_arr(j, "files", &files, man, e)) || (rc = json_opt_str(j, "manual", &top_manual, NULL, man, e)))
        goto fail;
    const char *lic = NULL;
    if ((rc = json_opt_str(j, "license", &lic, NULL, man, e))) goto fail;
    snprintf(p->license, sizeof p->license, "%s", lic ? lic : "license not recorded");
    const cJSON *archives = NULL;
    if ((rc = json_opt_arr(j, "archives", &archives, man, e))) goto fail;
    int k = 0;
    if (archives) cJSON_ArrayForEach(it, archives) {
        char ctx[PATH_MAX_ + 32];
        snprintf(ctx, sizeof ctx, "%s: archives[%d]", man, k++);
        if ((rc = plan_archive(p, it, ctx, e))) goto fail;
    }
    k = 0;
    cJSON_ArrayForEach(it, files) {
        char ctx[PATH_MAX_ + 32];
        snprintf(ctx, sizeof ctx, "%s: files[%d]", man, k++);
        struct task_file f;
        if ((rc = read_task_file(&f, p, it, ctx, top_manual, e)) || (rc = plan_task_file(p, &f, ctx, top_manual, e)))
            goto fail;
    }
    if (p->n == 0) { rc = err_set(e, ERR_FORMAT, "%s: field 'files' is empty", man); goto fail; }
    cJSON_Delete(j);
    return 0;
fail:
    cJSON_Delete(j);
    fetch_plan_free(p);
    return rc;
}

// Replaces the plan's shard entries by the index's list (after the index was fetched).
static int replan_shards(struct fetch_plan *p, struct err *e) {
    char ipath[PATH_MAX_];
    if (snprintf(ipath, sizeof ipath, "%s/%s", p->root, p->index_rel) >= (int)sizeof ipath)
        return err_set(e, ERR_RANGE, "path too long");
    cJSON *names = NULL;
    int rc = fetch_index_shards(ipath, &names, e);
    if (rc) return rc;
    int n_old = 0, w = 0;
    for (int i = 0; i < p->n; i++) {
        struct fetch_entry *x = &p->v[i];
        if (x->shard) {
            int in_index = 0;
            const cJSON *s;
            cJSON_ArrayForEach(s, names) if (!strcmp(s->valuestring, x->rel)) in_index = 1;
            if (!in_index) log_warn("%s: config lists shard %s, the index does not; skipping it", p->title, x->rel);
            n_old++;
            free(x->url); free(x->dest); free(x->rel); free(x->manual); free(x->member);
            continue;
        }
        p->v[w++] = *x;
    }
    p->n = w;
    const cJSON *s;
    int n_new = 0;
    cJSON_ArrayForEach(s, names) {
        if ((rc = plan_add_hub(p, s->valuestring, HUB_SHARD, e))) break;
        n_new++;
    }
    cJSON_Delete(names);
    if (!rc && n_old && n_old != n_new)
        log_warn("%s: the index lists %d shards, the config %d; using the index", p->title, n_new, n_old);
    p->shards_from_index = 1;
    return rc;
}

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
static int tar_extract(struct fetch_plan *p, int ai, struct err *e) {
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

static int run_entry(struct fetch_plan *p, struct fetch_entry *x, const struct fetch_opts *o, struct err *e) {
    (void)p;
    if (x->present || file_exists(x->dest)) { x->present = 1; return 0; }
    struct fetch_result r;
    int rc = fetch_url(x->url, x->dest, (struct fetch_expect){x->size, x->sha256[0] ? x->sha256 : NULL},
                       x->use_token ? FETCH_HF_TOKEN : FETCH_ANONYMOUS, o, &r, e);
    if (rc == ERR_NOTFOUND && x->optional) {
        log_warn("%s (optional) is not in the repository: %s", x->rel, e ? e->msg : "");
        return 0;
    }
    if (rc) return rc;
    x->present = 1;
    return 0;
}

// Lists the entries that are still missing (manual steps, or everything when offline).
static int report_missing(struct fetch_plan *p, int offline, struct err *e) {
    int missing = 0;
    size_t l = 0;
    char list[700] = "";
    const char *first_manual = NULL;
    for (int i = 0; i < p->n; i++) {
        struct fetch_entry *x = &p->v[i];
        if (x->is_archive || x->present) continue;
        if (x->system ? (file_exists(x->dest) || dir_exists(x->dest)) : file_exists(x->dest)) { x->present = 1; continue; }
        if (x->optional) { log_info("optional %s not in the cache", x->rel); continue; }
        missing++;
        if (x->manual && !x->url && !x->archive) {
            if (!first_manual) first_manual = x->manual;
            log_warn("missing %s (expected at %s): %s", x->rel, x->dest, x->manual);
        } else {
            log_warn("%smissing %s (expected at %s)", offline ? "offline: " : "", x->rel, x->dest);
        }
        if (l < sizeof list - 80)
            l += (size_t)snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", x->system ? x->dest : x->rel);
    }
    if (!missing) return 0;
    return err_set(e, ERR_NOTFOUND, "%s%d file%s missing for %s under %s: %s%s%s%s%s", offline ? "offline: " : "",
                   missing, missing > 1 ? "s" : "", p->title, p->root, list, l >= sizeof list - 80 ? ", ..." : "",
                   first_manual ? "; to obtain: " : "", first_manual ? first_manual : "",
                   offline && !first_manual ? "; fetch them with `hifa4-eval download` on a networked machine and copy the cache" : "");
}

int fetch_plan_run(struct fetch_plan *p, const struct fetch_opts *o, struct err *e) {
    int rc;
    // Never touch the network offline: for a model the cached index already chose the shards.
    if (o->offline) return report_missing(p, 1, e);
    int is_model = p->url_base[0] != 0;
    for (int i = 0; i < p->n; i++) {
        struct fetch_entry *x = &p->v[i];
        if (x->shard || x->is_archive || !x->url) continue;
        if ((rc = run_entry(p, x, o, e))) return rc;
    }
    if (is_model && p->index_rel[0]) {
        if ((rc = replan_shards(p, e))) return rc;
    } else if (is_model) {
        int has_shard = 0;
        for (int i = 0; i < p->n; i++) has_shard |= p->v[i].shard;
        if (!has_shard) log_warn("%s: no index and no shards configured", p->title);
    }
    for (int i = 0; i < p->n; i++) {
        if (!p->v[i].shard) continue;
        if ((rc = run_entry(p, &p->v[i], o, e))) return rc;
    }
    for (int i = 0; i < p->n; i++) {
        if (!p->v[i].is_archive) continue;
        int need = 0;
        for (int k = 0; k < p->n; k++)
            if (p->v[k].archive == i + 1 && !p->v[k].present && !file_exists(p->v[k].dest)) need = 1;
            else if (p->v[k].archive == i + 1) p->v[k].present = 1;
        if (!need) continue;
        if ((rc = run_entry(p, &p->v[i], o, e))) return rc;
        if ((rc = tar_extract(p, i, e))) return rc;
    }
    return report_missing(p, 0, e);
}

// ---- API for the evaluation ----
int fetch_resolve_model(char *dir, size_t n, const char *arg, int offline, struct err *e) {
    if (!arg || !*arg) return err_set(e, ERR_USAGE, "--model: empty");
    struct stat st;
    if (strchr(arg, '/') || arg[0] == '.' || stat(arg, &st) == 0) {
        if (strlen(arg) + 1 > n) return err_set(e, ERR_RANGE, "model path too long: %.100s", arg);
        memcpy(dir, arg, strlen(arg) + 1);
        return 0;
    }
    struct fetch_opts o;
    fetch_opts_init(&o, offline);
    struct fetch_plan p;
    int rc = fetch_plan_model(&p, arg, &o, e);
    if (rc) return rc;
    rc = fetch_plan_run(&p, &o, e);
    if (!rc) {
        if (strlen(p.root) + 1 > n) rc = err_set(e, ERR_RANGE, "model dir too long: %.100s", p.root);
        else memcpy(dir, p.root, strlen(p.root) + 1);
    }
    fetch_plan_free(&p);
    return rc;
}

int fetch_task_data(const char *task, int offline, char *root, size_t n, struct err *e) {
    struct fetch_opts o;
    fetch_opts_init(&o, offline);
    struct fetch_plan p;
    int rc = fetch_plan_task(&p, task, e);
    if (rc) return rc;
    rc = fetch_plan_run(&p, &o, e);
    if (!rc) {
        if (strlen(p.root) + 1 > n) rc = err_set(e, ERR_RANGE, "data root too long: %.100s", p.root);
        else memcpy(root, p.root, strlen(p.root) + 1);
    }
    fetch_plan_free(&p);
    return rc;
}
