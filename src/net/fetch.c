// fetch.c: the transfer of one file (libcurl): names checked, resumable, verified downloads
// into the cache (fetch.h "one file"); plans are fetch_plan.c, archives fetch_archive.c.
// Never creates a curl handle when offline.
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
#include "net/fetch_internal.h"

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

int fetch_is_hex64(const char *s) {
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
    if (!fetch_is_hex64(t)) return 0;
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
    if (sha256 && *sha256 && !fetch_is_hex64(sha256))
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

