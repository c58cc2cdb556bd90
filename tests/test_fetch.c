// test_fetch.c: downloads against a real HTTP server on 127.0.0.1 (tests/http_server.py on a
// free port; never any other address): multi-MB download, cut transfer + Range resume (the
// server's byte count proves only the rest was sent), a server that ignores Range, sha256
// mismatch (manifest and ETag), 404/401/500 with retries, connection refused, offline mode
// with zero requests, the Hub flow (HF_ENDPOINT, HF_TOKEN, X-Linked-Etag, shards from the
// index), task manifests, name validation and `download --dry-run`. The server is killed at
// the end (and dies on its own when this process dies: it exits on stdin EOF).
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/common.h"
#include "net/fetch.h"
#include "net/hub.h"
#include "base/paths.h"
#include "base/sha256.h"
#include "test.h"

static pid_t g_srv = -1;
static int g_srv_in = -1;
static int g_port;
static char g_tmp[1024], g_doc[1200];

static void stop_server(void) {
    if (g_srv_in >= 0) { close(g_srv_in); g_srv_in = -1; }
    if (g_srv > 0) {
        kill(g_srv, SIGTERM);
        waitpid(g_srv, NULL, 0);
        g_srv = -1;
    }
}

static int start_server(void) {
    int in[2], out[2];
    if (pipe(in) || pipe(out)) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execlp("python3", "python3", "tests/http_server.py", g_doc, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    g_srv = pid;
    g_srv_in = in[1];
    atexit(stop_server);
    char line[64];
    size_t k = 0;
    while (k < sizeof line - 1) {
        ssize_t r = read(out[0], line + k, 1);
        if (r <= 0) break;
        if (line[k] == '\n') break;
        k++;
    }
    line[k] = 0;
    close(out[0]);
    if (sscanf(line, "PORT %d", &g_port) != 1) return -1;
    return 0;
}

// Plain-socket GET to the server (independent of the code under test). Returns the body.
static int http_get(const char *path, char *body, size_t n) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)g_port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) { if (s >= 0) close(s); return -1; }
    char req[512];
    int l = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(s, req, (size_t)l) != l) { close(s); return -1; }
    char buf[4096];
    size_t k = 0;
    ssize_t r;
    while (k < sizeof buf - 1 && (r = read(s, buf + k, sizeof buf - 1 - k)) > 0) k += (size_t)r;
    close(s);
    buf[k] = 0;
    char *b = strstr(buf, "\r\n\r\n");
    snprintf(body, n, "%s", b ? b + 4 : "");
    return 0;
}

static void ctl(const char *q) {
    char path[256], body[256];
    snprintf(path, sizeof path, "/_ctl?%s", q);
    http_get(path, body, sizeof body);
}

struct stats { long requests, bytes, ranged; char auth[256]; };
static struct stats stats(void) {
    struct stats s = {-1, -1, -1, ""};
    char body[512];
    if (http_get("/_stats", body, sizeof body) == 0)
        sscanf(body, "requests=%ld bytes=%ld ranged=%ld auth=%255s", &s.requests, &s.bytes, &s.ranged, s.auth);
    return s;
}

// ---- fixtures (generated here) ----
static unsigned char *gen_bytes(size_t n, uint64_t seed) {
    unsigned char *b = malloc(n);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        b[i] = (unsigned char)(x >> 24);
    }
    return b;
}

static void write_file(const char *dir, const char *rel, const void *d, size_t n) {
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    char dd[2048];
    snprintf(dd, sizeof dd, "%s", p);
    *strrchr(dd, '/') = 0;
    struct err e = {0};
    mkdir_p(dd, &e);
    FILE *f = fopen(p, "wb");
    if (!f) { fprintf(stderr, "cannot write %s\n", p); return; }
    fwrite(d, 1, n, f);
    fclose(f);
}

static long fsize(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static int file_equals(const char *p, const unsigned char *d, size_t n) {
    char *buf = NULL;
    size_t len = 0;
    struct err e = {0};
    if (file_read_all(p, &buf, &len, &e)) return 0;
    int ok = len == n && memcmp(buf, d, n) == 0;
    free(buf);
    return ok;
}

static struct fetch_opts test_opts(void) {
    struct fetch_opts o;
    fetch_opts_init(&o, 0);
    o.offline = 0;
    o.retries = 0;
    o.retry_base_ms = 1; // tests must not wait
    o.progress = 0;
    return o;
}

// ---- tests ----
// hub ids (net/hub.h): which arguments are ORG/NAME[@REVISION], and what they become
static void test_hub_refs(void) {
    const char *yes[] = {"Qwen/Qwen3-0.6B", "meta-llama/Llama-3.1-8B@main", "a/b@0123456789abcdef0123456789abcdef01234567",
                         "org/name.v2@refs/pr/1", "A_1/b-2"};
    const char *no[] = {"qwen3-8b", "./x/y", "/abs/path", "a/b/c", "a/", "/b", ".a/b", "a/.b", "a/b@", "a@x/b",
                        "a b/c", "a/b c", "../x", "x/..", ""};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) CHECK(hub_is_ref(yes[i]), "'%s' is a hub id", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) CHECK(!hub_is_ref(no[i]), "'%s' is not a hub id", no[i]);
    struct hub_ref r;
    struct err e = {0};
    CHECK(hub_parse_ref(&r, "Qwen/Qwen3-0.6B", &e) == 0 && !strcmp(r.repo, "Qwen/Qwen3-0.6B") && !strcmp(r.revision, "main"),
          "default revision: %s %s", r.repo, r.revision);
    CHECK(hub_parse_ref(&r, "org/m@v1.0", &e) == 0 && !strcmp(r.repo, "org/m") && !strcmp(r.revision, "v1.0"), "revision");
    CHECK(hub_parse_ref(&r, "org/m@../../x", &e) == ERR_USAGE && strstr(e.msg, "org/m@../../x"), "revision leaving the cache: %s", e.msg);
    CHECK(hub_parse_ref(&r, "a/b/c", &e) == ERR_USAGE && strstr(e.msg, "ORG/NAME"), "bad id: %s", e.msg);
    // the cache root: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub
    char root[4096], want[4200];
    const char *home = getenv("HOME");
    setenv("HF_HUB_CACHE", "/x/hub-cache", 1);
    setenv("HF_HOME", "/y/hf-home", 1);
    CHECK(hub_cache_root(root, sizeof root, &e) == 0 && !strcmp(root, "/x/hub-cache"), "HF_HUB_CACHE: %s", root);
    unsetenv("HF_HUB_CACHE");
    CHECK(hub_cache_root(root, sizeof root, &e) == 0 && !strcmp(root, "/y/hf-home/hub"), "HF_HOME: %s", root);
    unsetenv("HF_HOME");
    snprintf(want, sizeof want, "%s/.cache/huggingface/hub", home ? home : "");
    CHECK(!home || (hub_cache_root(root, sizeof root, &e) == 0 && !strcmp(root, want)), "default: %s", root);
}

static void test_names(void) {
    struct err e = {0};
    const char *bad[] = {"", "..", "../x", "a/../b", "a/..", "/etc/passwd", "a\\b", "a//b", "a/", "./a",
                         "a/./b", "a\nb", "a\tb", "a\x7f", "\xff\xfe", "."};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = fetch_check_relpath(bad[i], "file", &e);
        CHECK(rc == ERR_USAGE, "relpath bad[%zu] accepted (rc %d)", i, rc);
    }
    CHECK(fetch_check_relpath("model-00001-of-00004.safetensors", "file", &e) == 0, "%s", e.msg);
    CHECK(fetch_check_relpath("mmlu/data/test/abstract_algebra_test.csv", "path", &e) == 0, "%s", e.msg);
    CHECK(fetch_check_relpath("a..b/c.d", "file", &e) == 0, "dots inside a name are fine: %s", e.msg);
    fetch_check_relpath("../x", "file", &e);
    CHECK(strstr(e.msg, "file '../x'") != NULL, "error names the value: %s", e.msg);
    const char *bad_repo[] = {"", "/Qwen/Qwen3-8B", "Qwen/../x", "a/b/c", "Qwen\\x", "Qwen//x", "Qwen/",
                              "a b/c", "..", "x/.", "a\rb/c"};
    for (size_t i = 0; i < sizeof bad_repo / sizeof *bad_repo; i++)
        CHECK(fetch_check_repo(bad_repo[i], &e) == ERR_USAGE, "repo bad[%zu] accepted", i);
    CHECK(fetch_check_repo("Qwen/Qwen3-8B", &e) == 0, "%s", e.msg);
    CHECK(fetch_check_repo("meta-llama/Llama-3.1-8B", &e) == 0, "%s", e.msg);
    CHECK(fetch_check_repo("gpt2", &e) == 0, "%s", e.msg);
    // model and task names become config paths
    struct fetch_plan p;
    struct fetch_opts o = test_opts();
    CHECK(fetch_plan_model(&p, "../x", &o, &e) == ERR_USAGE, "model '../x' accepted");
    CHECK(fetch_plan_model(&p, "/abs", &o, &e) == ERR_USAGE, "model '/abs' accepted");
    CHECK(fetch_plan_task(&p, "../etc", &e) == ERR_USAGE, "task '../etc' accepted");
    CHECK(fetch_plan_task(&p, "a\\b", &e) == ERR_USAGE, "task 'a\\b' accepted");
    test_hub_refs();
}

static void url_of(char *u, size_t n, const char *rel) {
    snprintf(u, n, "http://127.0.0.1:%d/files/%s", g_port, rel);
}

static void test_download_resume(void) {
    const size_t N = 6u << 20; // 6 MiB
    unsigned char *d = gen_bytes(N, 1);
    write_file(g_doc, "big.bin", d, N);
    char sha[65], url[256], dest[1300], part[1310];
    sha256_hex(d, N, sha);
    url_of(url, sizeof url, "big.bin");
    struct fetch_opts o = test_opts();
    struct fetch_result r;
    struct err e = {0};

    // 1. plain multi-MB download, sha256 from the manifest
    snprintf(dest, sizeof dest, "%s/c1/sub/big.bin", g_tmp);
    snprintf(part, sizeof part, "%s.part", dest);
    ctl("reset=1");
    double t0 = time_now();
    int rc = fetch_url(url, dest, (struct fetch_expect){(int64_t)N, sha}, FETCH_ANONYMOUS, &o, &r, &e);
    double dt = time_now() - t0;
    CHECK(rc == 0, "download: %s", e.msg);
    CHECK(file_equals(dest, d, N), "downloaded bytes differ");
    CHECK(fsize(part) < 0, ".part left behind");
    CHECK(r.verified_sha == 1 && !strcmp(r.sha256, sha), "sha not verified");
    struct stats s = stats();
    CHECK(s.bytes == (long)N && s.requests == 1, "server sent %ld bytes in %ld requests", s.bytes, s.requests);
    printf("download 6 MiB over loopback: %.3f s (%.0f MB/s)\n", dt, N / 1e6 / dt);
    // present file: no request
    ctl("reset=1");
    rc = fetch_url(url, dest, (struct fetch_expect){(int64_t)N, sha}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == 0 && r.already == 1 && stats().requests == 0, "existing file refetched");

    // 2. cut half way, no retries: error, .part kept; second call resumes with Range
    const size_t CUT = N / 2 + 12345;
    snprintf(dest, sizeof dest, "%s/c2/big.bin", g_tmp);
    snprintf(part, sizeof part, "%s.part", dest);
    ctl("reset=1");
    char q[64];
    snprintf(q, sizeof q, "cut=%zu", CUT);
    ctl(q);
    rc = fetch_url(url, dest, (struct fetch_expect){(int64_t)N, sha}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == ERR_NET, "cut transfer: rc %d", rc);
    CHECK(strstr(e.msg, url) && strstr(e.msg, "resume"), "cut message: %s", e.msg);
    CHECK(fsize(dest) < 0, "incomplete file renamed to the final name");
    CHECK(fsize(part) == (long)CUT, ".part has %ld bytes, want %zu", fsize(part), CUT);
    ctl("reset=1");
    rc = fetch_url(url, dest, (struct fetch_expect){(int64_t)N, sha}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == 0, "resume: %s", e.msg);
    s = stats();
    CHECK(s.bytes == (long)(N - CUT), "resume transferred %ld bytes, want only the rest %zu", s.bytes, N - CUT);
    CHECK(s.ranged == 1 && s.requests == 1, "resume used %ld ranged of %ld requests", s.ranged, s.requests);
    CHECK(r.resumed_from == (int64_t)CUT && r.bytes_received == (int64_t)(N - CUT), "result counters");
    CHECK(file_equals(dest, d, N), "resumed file differs");
    CHECK(fsize(part) < 0, ".part left behind");

    // 3. cut with retries: resumed automatically inside one call, no byte sent twice
    snprintf(dest, sizeof dest, "%s/c3/big.bin", g_tmp);
    ctl("reset=1");
    ctl(q);
    o.retries = 2;
    rc = fetch_url(url, dest, (struct fetch_expect){-1, NULL}, FETCH_ANONYMOUS, &o, &r, &e); // size and sha from the server
    CHECK(rc == 0, "auto-resume: %s", e.msg);
    s = stats();
    CHECK(s.bytes == (long)N && s.requests == 2 && s.ranged == 1, "auto-resume: %ld bytes, %ld requests, %ld ranged",
          s.bytes, s.requests, s.ranged);
    CHECK(r.verified_sha == 1, "ETag sha256 not used");
    CHECK(file_equals(dest, d, N), "auto-resumed file differs");

    // 4. a server that ignores Range (200): the .part (garbage here) is discarded
    snprintf(dest, sizeof dest, "%s/c4/big.bin", g_tmp);
    snprintf(part, sizeof part, "%s.part", dest);
    unsigned char *junk = gen_bytes(1000, 99);
    write_file(g_tmp, "c4/big.bin.part", junk, 1000);
    free(junk);
    ctl("reset=1");
    ctl("ignore_range=1");
    rc = fetch_url(url, dest, (struct fetch_expect){(int64_t)N, sha}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == 0, "ignored range: %s", e.msg);
    CHECK(r.resumed_from == 0 && stats().bytes == (long)N, "restart after 200");
    CHECK(file_equals(dest, d, N), "restarted file differs");

    // 4b. a complete .part (killed before the rename) is verified offline-style, no request
    snprintf(dest, sizeof dest, "%s/c4b/big.bin", g_tmp);
    write_file(g_tmp, "c4b/big.bin.part", d, N);
    ctl("reset=1");
    rc = fetch_url(url, dest, (struct fetch_expect){(int64_t)N, sha}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == 0 && stats().requests == 0 && r.requests == 0 && file_equals(dest, d, N), "complete .part: %s", e.msg);
    // ... but a full-size .part with wrong bytes is fetched again
    snprintf(dest, sizeof dest, "%s/c4c/big.bin", g_tmp);
    unsigned char *junk2 = gen_bytes(N, 5);
    write_file(g_tmp, "c4c/big.bin.part", junk2, N);
    free(junk2);
    ctl("reset=1");
    rc = fetch_url(url, dest, (struct fetch_expect){(int64_t)N, sha}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == 0 && stats().bytes == (long)N && file_equals(dest, d, N), "bad full .part: %s", e.msg);

    // 5. corrupted: wrong manifest sha256 -> mismatch, nothing kept
    char bad[65];
    memcpy(bad, sha, 65);
    bad[0] = bad[0] == '0' ? '1' : '0';
    snprintf(dest, sizeof dest, "%s/c5/big.bin", g_tmp);
    snprintf(part, sizeof part, "%s.part", dest);
    rc = fetch_url(url, dest, (struct fetch_expect){(int64_t)N, bad}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == ERR_MISMATCH, "bad manifest sha: rc %d", rc);
    CHECK(strstr(e.msg, "sha256 mismatch") && strstr(e.msg, bad) && strstr(e.msg, sha), "msg: %s", e.msg);
    CHECK(fsize(dest) < 0 && fsize(part) < 0, "bad file kept");
    // corrupted body (one byte flipped in transit), sha256 from the ETag
    ctl("reset=1");
    ctl("corrupt=1");
    rc = fetch_url(url, dest, (struct fetch_expect){-1, NULL}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == ERR_MISMATCH && strstr(e.msg, "ETag"), "corrupt body: rc %d %s", rc, e.msg);
    CHECK(fsize(dest) < 0 && fsize(part) < 0, "corrupt file kept");
    // wrong size in the manifest
    rc = fetch_url(url, dest, (struct fetch_expect){(int64_t)N + 1, NULL}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == ERR_MISMATCH && fsize(dest) < 0, "size mismatch: rc %d %s", rc, e.msg);
    free(d);
}

static void test_errors(void) {
    struct fetch_opts o = test_opts();
    struct fetch_result r;
    struct err e = {0};
    unsigned char *d = gen_bytes(5000, 7);
    write_file(g_doc, "small.txt", d, 5000);
    char url[256], dest[1300];
    snprintf(dest, sizeof dest, "%s/e/small.txt", g_tmp);

    // 404: no retry, names URL and status
    url_of(url, sizeof url, "missing.bin");
    o.retries = 3;
    ctl("reset=1");
    int rc = fetch_url(url, dest, (struct fetch_expect){-1, NULL}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, url) && strstr(e.msg, "404"), "404: rc %d %s", rc, e.msg);
    CHECK(stats().requests == 1, "404 was retried");
    char part[1310];
    snprintf(part, sizeof part, "%s.part", dest);
    CHECK(fsize(dest) < 0 && fsize(part) < 0, "404 left a file");

    // 500 three times with 2 retries: error after 3 requests
    url_of(url, sizeof url, "small.txt");
    ctl("reset=1");
    ctl("fail=3");
    o.retries = 2;
    rc = fetch_url(url, dest, (struct fetch_expect){5000, NULL}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == ERR_NET && strstr(e.msg, url) && strstr(e.msg, "HTTP 500") && strstr(e.msg, "3 attempts"),
          "500: rc %d %s", rc, e.msg);
    CHECK(stats().requests == 3 && r.requests == 3, "500: %ld requests", stats().requests);
    CHECK(fsize(dest) < 0, "500 left a file");
    // 500 twice then success
    ctl("reset=1");
    ctl("fail=2");
    rc = fetch_url(url, dest, (struct fetch_expect){5000, NULL}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == 0 && stats().requests == 3 && file_equals(dest, d, 5000), "500 then ok: %s", e.msg);
    unlink(dest);

    // 401 / 403: clear, not retried
    ctl("reset=1");
    ctl("status=401");
    rc = fetch_url(url, dest, (struct fetch_expect){-1, NULL}, FETCH_HF_TOKEN, &o, &r, &e);
    CHECK(rc == ERR_NET && strstr(e.msg, "HTTP 401") && strstr(e.msg, url), "401: %s", e.msg);
    CHECK(stats().requests == 1, "401 retried");

    // connection refused (a port nobody listens on): retried, then a clear error
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    socklen_t al = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(s, (struct sockaddr *)&a, sizeof a);
    getsockname(s, (struct sockaddr *)&a, &al);
    close(s); // the port is free now, nobody listens
    snprintf(url, sizeof url, "http://127.0.0.1:%d/files/small.txt", ntohs(a.sin_port));
    o.retries = 1;
    rc = fetch_url(url, dest, (struct fetch_expect){-1, NULL}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == ERR_NET && strstr(e.msg, url) && r.requests == 2, "refused: rc %d req %d %s", rc, r.requests, e.msg);

    // offline: no request at all, names the file and where it was expected
    url_of(url, sizeof url, "small.txt");
    ctl("reset=1");
    o.offline = 1;
    rc = fetch_url(url, dest, (struct fetch_expect){-1, NULL}, FETCH_ANONYMOUS, &o, &r, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "offline") && strstr(e.msg, dest), "offline: %s", e.msg);
    CHECK(stats().requests == 0, "offline made a request");
    // HIFA4_OFFLINE=1 in the environment does the same
    setenv("HIFA4_OFFLINE", "1", 1);
    fetch_opts_init(&o, 0);
    CHECK(o.offline == 1, "HIFA4_OFFLINE=1 ignored");
    unsetenv("HIFA4_OFFLINE");
    free(d);
}

// Hub imitation: configs/models/tiny.json in a temporary HIFA4_HOME, HF_ENDPOINT at the server.
// What `download --model NAME` does: the model's plan, run; dir gets its root.
static int plan_run_model(char *dir, size_t n, const char *name, int offline, struct err *e) {
    struct fetch_opts o;
    fetch_opts_init(&o, offline);
    struct fetch_plan p;
    int rc = fetch_plan_model(&p, name, &o, e);
    if (rc) return rc;
    if (!(rc = fetch_plan_run(&p, &o, e))) snprintf(dir, n, "%s", p.root);
    fetch_plan_free(&p);
    return rc;
}

static void test_hub_model(void) {
    char home[1300], cache[1300], ep[64], dir[4096];
    struct err e = {0};
    snprintf(home, sizeof home, "%s/home", g_tmp);
    snprintf(cache, sizeof cache, "%s/cache", g_tmp);
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d/", g_port);
    const char *cfg = "{\"name\":\"tiny\",\"repo\":\"org/tiny\",\"revision\":\"main\","
                      "\"files\":[\"config.json\",\"model.safetensors.index.json\"],"
                      "\"index\":\"model.safetensors.index.json\","
                      "\"shards\":[\"model-00001-of-00002.safetensors\",\"stale.safetensors\"]}";
    write_file(home, "configs/models/tiny.json", cfg, strlen(cfg));
    const char *idx = "{\"metadata\":{},\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\","
                      "\"b\":\"model-00002-of-00002.safetensors\",\"c\":\"model-00001-of-00002.safetensors\"}}";
    const char *conf = "{\"architectures\":[\"LlamaForCausalLM\"]}";
    unsigned char *s1 = gen_bytes(300000, 11), *s2 = gen_bytes(200001, 12);
    write_file(g_doc, "org/tiny/config.json", conf, strlen(conf));
    write_file(g_doc, "org/tiny/model.safetensors.index.json", idx, strlen(idx));
    write_file(g_doc, "org/tiny/model-00001-of-00002.safetensors", s1, 300000);
    write_file(g_doc, "org/tiny/model-00002-of-00002.safetensors", s2, 200001);
    setenv("HIFA4_HOME", home, 1);
    setenv("HIFA4_CACHE", cache, 1);
    setenv("HF_ENDPOINT", ep, 1);
    setenv("HF_TOKEN", "tok123", 1);
    setenv("HIFA4_RETRY_BASE_MS", "1", 1);

    // offline before anything is cached: lists the missing files, no request
    ctl("reset=1");
    int rc = plan_run_model(dir, sizeof dir, "tiny", 1, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "config.json") && strstr(e.msg, "model-00001-of-00002"), "%s", e.msg);
    CHECK(stats().requests == 0, "offline resolve made requests");

    // online: downloads config, index, then the shards the index names
    ctl("reset=1");
    rc = plan_run_model(dir, sizeof dir, "tiny", 0, &e);
    CHECK(rc == 0, "resolve: %s", e.msg);
    char want[2048], p[4200];
    snprintf(want, sizeof want, "%s/models/org/tiny/main", cache);
    CHECK(!strcmp(dir, want), "dir %s, want %s", dir, want);
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
    CHECK(file_equals(p, s2, 200001), "shard 2 from the index missing or wrong");
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", dir);
    CHECK(file_equals(p, s1, 300000), "shard 1 wrong");
    snprintf(p, sizeof p, "%s/stale.safetensors", dir);
    CHECK(fsize(p) < 0, "a shard the index does not list was fetched");
    struct stats s = stats();
    // config, index, and per shard the Hub's 302 (with X-Linked-Etag) plus the file itself
    CHECK(s.requests == 6, "requests %ld, want 6 (config, index, 2 x (302 + shard))", s.requests);
    CHECK(!strcmp(s.auth, "Bearer_tok123"), "HF_TOKEN not sent as bearer: '%s'", s.auth);

    // complete now: offline works and the plan reads shards from the cached index
    ctl("reset=1");
    rc = plan_run_model(dir, sizeof dir, "tiny", 1, &e);
    CHECK(rc == 0 && stats().requests == 0, "offline complete: %s", e.msg);
    struct fetch_plan plan;
    struct fetch_opts o;
    fetch_opts_init(&o, 1);
    rc = fetch_plan_model(&plan, "tiny", &o, &e);
    CHECK(rc == 0 && plan.shards_from_index == 1 && plan.n == 4, "plan: rc %d n %d", rc, plan.n);
    // the repository and revision as fields (model_resolve reads them, never the title)
    CHECK(rc == 0 && !strcmp(plan.repo, "org/tiny") && !strcmp(plan.revision, "main"), "plan repo '%s' rev '%s'",
          plan.repo, plan.revision);
    if (!rc) {
        snprintf(want, sizeof want, "http://127.0.0.1:%d/org/tiny/resolve/main/config.json", g_port);
        CHECK(!strcmp(plan.v[0].url, want), "url %s, want %s", plan.v[0].url, want);
        fetch_plan_free(&plan);
    }

    // a shard corrupted in transit is caught through X-Linked-Etag (Hub LFS), not kept
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
    unlink(p);
    ctl("reset=1");
    ctl("corrupt=1");
    rc = plan_run_model(dir, sizeof dir, "tiny", 0, &e);
    CHECK(rc == ERR_MISMATCH && fsize(p) < 0, "corrupt shard: rc %d %s", rc, e.msg);
    rc = plan_run_model(dir, sizeof dir, "tiny", 0, &e);
    CHECK(rc == 0 && file_equals(p, s2, 200001), "refetch: %s", e.msg);

    rc = plan_run_model(dir, sizeof dir, "nosuchmodel", 0, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "tiny"), "unknown model lists known ones: %s", e.msg);

    // an index naming a shard outside the model dir is rejected before any download
    const char *evil = "{\"weight_map\":{\"a\":\"../../evil.safetensors\"}}";
    write_file(g_doc, "org/evil/model.safetensors.index.json", evil, strlen(evil));
    write_file(g_doc, "org/evil/config.json", conf, strlen(conf));
    const char *cfg2 = "{\"repo\":\"org/evil\",\"files\":[\"config.json\",\"model.safetensors.index.json\"],"
                       "\"index\":\"model.safetensors.index.json\"}";
    write_file(home, "configs/models/evil.json", cfg2, strlen(cfg2));
    rc = plan_run_model(dir, sizeof dir, "evil", 0, &e);
    CHECK(rc == ERR_USAGE && strstr(e.msg, "../../evil"), "evil index: rc %d %s", rc, e.msg);
    snprintf(p, sizeof p, "%s/models/evil.safetensors", cache);
    CHECK(fsize(p) < 0, "file written outside the model dir");

    // gated repo without token: 401 with advice
    unsetenv("HF_TOKEN");
    snprintf(p, sizeof p, "%s/models/org/tiny/main/config.json", cache);
    unlink(p);
    ctl("reset=1");
    ctl("status=401");
    rc = plan_run_model(dir, sizeof dir, "tiny", 0, &e);
    CHECK(rc == ERR_NET && strstr(e.msg, "401") && strstr(e.msg, "HF_TOKEN"), "gated: %s", e.msg);
    free(s1);
    free(s2);
}

static void test_task_data(void) {
    char home[1300], cache[1300], root[4096], p[4300];
    struct err e = {0};
    snprintf(home, sizeof home, "%s/home", g_tmp);
    snprintf(cache, sizeof cache, "%s/cache", g_tmp);
    unsigned char *d = gen_bytes(4096, 21);
    write_file(g_doc, "data/t1.csv", d, 4096);
    char sha[65], man[1024];
    sha256_hex(d, 4096, sha);
    snprintf(man, sizeof man,
             "{\"task\":\"t1\",\"license\":\"MIT\",\"files\":[{\"path\":\"t1/data/test/x_test.csv\","
             "\"url\":\"http://127.0.0.1:%d/files/data/t1.csv\",\"sha256\":\"%s\",\"size\":4096},"
             "{\"path\":\"t1/manual.csv\",\"manual\":\"ask the authors\"}]}", g_port, sha);
    write_file(home, "datasets/t1.json", man, strlen(man));
    ctl("reset=1");
    int rc = fetch_task_data("t1", 0, root, sizeof root, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "ask the authors") && strstr(e.msg, "t1/manual.csv"), "manual: %s", e.msg);
    snprintf(p, sizeof p, "%s/datasets/t1/data/test/x_test.csv", cache);
    CHECK(file_equals(p, d, 4096), "task file not fetched");
    const char *m = "user-provided";
    write_file(cache, "datasets/t1/manual.csv", m, strlen(m));
    rc = fetch_task_data("t1", 1, root, sizeof root, &e);
    snprintf(p, sizeof p, "%s/datasets", cache);
    CHECK(rc == 0 && !strcmp(root, p), "task root: rc %d %s %s", rc, root, e.msg);
    // a manifest path that escapes the data root is rejected
    const char *bad = "{\"files\":[{\"path\":\"../escape.csv\",\"url\":\"http://127.0.0.1:1/x\"}]}";
    write_file(home, "datasets/bad.json", bad, strlen(bad));
    rc = fetch_task_data("bad", 0, root, sizeof root, &e);
    CHECK(rc == ERR_USAGE && strstr(e.msg, "../escape.csv"), "bad manifest path: %s", e.msg);
    free(d);
}

// Task files unpacked from a tar archive (the MMLU data.tar route), with a long member name.
static void test_task_tar(void) {
    char home[1300], cache[1300], root[4096], p[4300], cmd[8192];
    struct err e = {0};
    snprintf(home, sizeof home, "%s/home", g_tmp);
    snprintf(cache, sizeof cache, "%s/cache", g_tmp);
    const char *longdir = "data/test/a_very_long_directory_name_that_pushes_the_member_name_past_the_"
                          "one_hundred_bytes_of_a_v7_tar_header";
    unsigned char *a = gen_bytes(3000, 31), *b = gen_bytes(1234, 32), *c = gen_bytes(700, 33);
    char tdir[1300], rel[512];
    snprintf(tdir, sizeof tdir, "%s/tarsrc", g_tmp);
    write_file(tdir, "data/test/x_test.csv", a, 3000);
    write_file(tdir, "data/dev/x_dev.csv", b, 1234);
    snprintf(rel, sizeof rel, "%s/long.csv", longdir);
    write_file(tdir, rel, c, 700);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/t' && cd '%s' && tar -cf '%s/t/data.tar' ./data && gzip -c '%s/t/data.tar' > '%s/t/data.tgz'",
             g_doc, tdir, g_doc, g_doc, g_doc);
    int st = system(cmd);
    CHECK(st == 0, "tar/gzip failed (status %d)", st);
    char sa[65], sb[65], sc[65], man[4096];
    sha256_hex(a, 3000, sa);
    sha256_hex(b, 1234, sb);
    sha256_hex(c, 700, sc);
    snprintf(man, sizeof man,
             "{\"license\":\"MIT\",\"archives\":[{\"id\":\"t\",\"format\":\"tar\",\"path\":\"t2/data.tar\","
             "\"url\":\"http://127.0.0.1:%d/files/t/data.tar\"}],\"files\":["
             "{\"path\":\"t2/data/test/x_test.csv\",\"archive\":\"t\",\"member\":\"data/test/x_test.csv\",\"sha256\":\"%s\",\"size\":3000},"
             "{\"path\":\"t2/data/dev/x_dev.csv\",\"archive\":\"t\",\"member\":\"data/dev/x_dev.csv\",\"sha256\":\"%s\"},"
             "{\"path\":\"t2/long.csv\",\"archive\":\"t\",\"member\":\"%s/long.csv\",\"sha256\":\"%s\"}]}",
             g_port, sa, sb, longdir, sc);
    write_file(home, "datasets/t2.json", man, strlen(man));
    int rc = fetch_task_data("t2", 0, root, sizeof root, &e);
    CHECK(rc == 0, "tar task: %s", e.msg);
    snprintf(p, sizeof p, "%s/datasets/t2/data/test/x_test.csv", cache);
    CHECK(file_equals(p, a, 3000), "tar member 1");
    snprintf(p, sizeof p, "%s/datasets/t2/data/dev/x_dev.csv", cache);
    CHECK(file_equals(p, b, 1234), "tar member 2");
    snprintf(p, sizeof p, "%s/datasets/t2/long.csv", cache);
    CHECK(file_equals(p, c, 700), "tar member with a long name");
    // a member whose bytes do not match the manifest is not kept
    sa[5] = sa[5] == 'a' ? 'b' : 'a';
    snprintf(man, sizeof man,
             "{\"archives\":[{\"id\":\"t\",\"format\":\"tar\",\"path\":\"t3/data.tar\","
             "\"url\":\"http://127.0.0.1:%d/files/t/data.tar\"}],\"files\":["
             "{\"path\":\"t3/x.csv\",\"archive\":\"t\",\"member\":\"data/test/x_test.csv\",\"sha256\":\"%s\"}]}", g_port, sa);
    write_file(home, "datasets/t3.json", man, strlen(man));
    rc = fetch_task_data("t3", 0, root, sizeof root, &e);
    snprintf(p, sizeof p, "%s/datasets/t3/x.csv", cache);
    CHECK(rc == ERR_MISMATCH && strstr(e.msg, "data/test/x_test.csv") && fsize(p) < 0, "bad member: rc %d %s", rc, e.msg);
    // a member that is not there, and a gzip file that is not a tar: clear errors
    snprintf(man, sizeof man,
             "{\"archives\":[{\"id\":\"t\",\"format\":\"tar\",\"path\":\"t4/data.tar\","
             "\"url\":\"http://127.0.0.1:%d/files/t/data.tar\"}],\"files\":["
             "{\"path\":\"t4/y.csv\",\"archive\":\"t\",\"member\":\"data/test/nope.csv\"}]}", g_port);
    write_file(home, "datasets/t4.json", man, strlen(man));
    rc = fetch_task_data("t4", 0, root, sizeof root, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "data/test/nope.csv"), "missing member: rc %d %s", rc, e.msg);
    snprintf(man, sizeof man,
             "{\"archives\":[{\"id\":\"t\",\"format\":\"tar\",\"path\":\"t5/data.tar\","
             "\"url\":\"http://127.0.0.1:%d/files/t/data.tgz\"}],\"files\":["
             "{\"path\":\"t5/y.csv\",\"archive\":\"t\",\"member\":\"data/test/x_test.csv\"}]}", g_port);
    write_file(home, "datasets/t5.json", man, strlen(man));
    rc = fetch_task_data("t5", 0, root, sizeof root, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "gzip"), "gzip as tar: rc %d %s", rc, e.msg);
    free(a);
    free(b);
    free(c);
}

// The committed manifests against the test data's copies: every file present in datasets/ has
// the manifest's size and sha256, and with that directory as the cache every task but GPQA is
// complete offline (no network: offline mode).
static int sha_file(const char *path, char hex[65], long *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    struct sha256 s;
    sha256_init(&s);
    static unsigned char buf[1 << 16];
    size_t r;
    long n = 0;
    while ((r = fread(buf, 1, sizeof buf, f)) > 0) { sha256_update(&s, buf, r); n += (long)r; }
    fclose(f);
    uint8_t d[32];
    sha256_final(&s, d);
    sha256_to_hex(d, hex);
    *size = n;
    return 0;
}

static void test_manifests(void) {
    char shared[PATH_MAX], link[1300], home[PATH_MAX], root[4096];
    struct err e = {0};
    const char *ds = TEST_NEED("datasets");
    if (!ds || !realpath(ds, shared)) return;
    if (!realpath(".", home)) return;
    snprintf(link, sizeof link, "%s/sharedcache", g_tmp);
    char dsl[1400];
    snprintf(dsl, sizeof dsl, "%s/datasets", link);
    mkdir_p(link, &e);
    CHECK(symlink(shared, dsl) == 0, "symlink %s: %s", dsl, strerror(errno));
    setenv("HIFA4_HOME", home, 1);
    setenv("HIFA4_CACHE", link, 1);
    const char *tasks[] = {"mmlu", "hellaswag", "arc_challenge", "arc_easy", "truthfulqa_mc1", "bbh", "ppl/wikitext2", "brown"};
    int checked = 0;
    for (size_t t = 0; t < sizeof tasks / sizeof *tasks; t++) {
        struct fetch_plan p;
        int rc = fetch_plan_task(&p, tasks[t], &e);
        CHECK(rc == 0, "plan %s: %s", tasks[t], e.msg);
        if (rc) continue;
        for (int i = 0; i < p.n; i++) {
            const struct fetch_entry *x = &p.v[i];
            if (x->is_archive || !x->sha256[0]) continue;
            char path[PATH_MAX + 1100], hex[65];
            long size;
            snprintf(path, sizeof path, "%s/%s", shared, x->rel);
            if (sha_file(path, hex, &size) != 0) continue; // e.g. the .bz2 or the plain HellaSwag text
            checked++;
            CHECK(!strcmp(hex, x->sha256) && (x->size < 0 || size == x->size), "%s: %s: sha %s size %ld vs manifest %s %lld",
                  tasks[t], x->rel, hex, size, x->sha256, (long long)x->size);
            CHECK(x->archive || (x->url && !strncmp(x->url, "https://", 8)) || x->manual, "%s: %s has no source", tasks[t], x->rel);
        }
        fetch_plan_free(&p);
        ctl("reset=1");
        rc = fetch_task_data(tasks[t], 1, root, sizeof root, &e);
        CHECK(rc == 0 && !strcmp(root, dsl), "offline %s with the shared data: rc %d %s", tasks[t], rc, e.msg);
    }
    printf("manifests: %d files checked against %s\n", checked, ds);
    CHECK(checked > 200, "only %d manifest files matched shared copies", checked);
    int rc = fetch_task_data("gpqa_diamond", 1, root, sizeof root, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "gpqa/gpqa_diamond.csv") && strstr(e.msg, "idavidrein"), "gpqa: %s", e.msg);
    CHECK(stats().requests == 0, "offline manifests made requests");
}

static void test_paths(void) {
    char out[4096];
    struct err e = {0};
    setenv("HIFA4_CACHE", "/x/cache", 1);
    CHECK(paths_cache(out, sizeof out, &e) == 0 && !strcmp(out, "/x/cache"), "HIFA4_CACHE: %s", out);
    paths_set_cache("/y", &e);
    CHECK(paths_cache(out, sizeof out, &e) == 0 && !strcmp(out, "/y"), "override: %s", out);
    paths_set_cache(NULL, &e);
    unsetenv("HIFA4_CACHE");
    setenv("HOME", "/home/u", 1);
    CHECK(paths_cache(out, sizeof out, &e) == 0 && !strcmp(out, "/home/u/.cache/hifa4"), "default: %s", out);
    CHECK(paths_cache(out, 5, &e) == ERR_RANGE, "small buffer");
    unsetenv("HIFA4_HOME");
    // the test binary lives in build/tests/: two parents up is the repo root with configs/
    CHECK(paths_home(out, sizeof out, &e) == 0, "paths_home: %s", e.msg);
    char p[4200];
    snprintf(p, sizeof p, "%s/configs/models/qwen3-8b.json", out);
    CHECK(file_exists(p), "home %s has no configs/models/qwen3-8b.json", out);
}

// The CLI: dry-run works offline and names URL and destination of every file.
static void test_cli(void) {
    const char *bin = getenv("HIFA4_BIN");
    if (!bin) bin = "./hifa4-eval";
    if (!file_exists(bin)) { printf("skip CLI test: %s not built\n", bin); return; }
    char cmd[4096], out[1300];
    const char *dot = strchr(bin, '/') ? "" : "./";
    snprintf(out, sizeof out, "%s/dry.txt", g_tmp);
    snprintf(cmd, sizeof cmd, "HIFA4_CACHE=%s/clicache %s%s download --model qwen3-8b --dry-run --offline > %s 2>&1",
             g_tmp, dot, bin, out);
    int st = system(cmd);
    char *txt = NULL;
    size_t len = 0;
    struct err e = {0};
    file_read_all(out, &txt, &len, &e);
    CHECK(st == 0 && txt && strstr(txt, "https://huggingface.co/Qwen/Qwen3-8B/resolve/main/config.json") &&
              strstr(txt, "clicache/models/Qwen/Qwen3-8B/main/model.safetensors.index.json"),
          "dry-run (status %d): %s", st, txt ? txt : "(no output)");
    free(txt);
    snprintf(cmd, sizeof cmd, "HIFA4_CACHE=%s/clicache %s%s download --model ../x --dry-run > %s 2>&1", g_tmp, dot, bin, out);
    st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0, "bad model name accepted by the CLI");
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    snprintf(g_tmp, sizeof g_tmp, "%s/fetch", t ? t : "build/tmp");
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0) return 1;
    struct err e = {0};
    mkdir_p(g_tmp, &e);
    char abs_tmp[PATH_MAX];
    if (!realpath(g_tmp, abs_tmp)) return 1;
    snprintf(g_tmp, sizeof g_tmp, "%.1000s", abs_tmp);
    snprintf(g_doc, sizeof g_doc, "%s/docroot", g_tmp);
    mkdir_p(g_doc, &e);
    log_set_level(LOG_WARN);
    signal(SIGPIPE, SIG_IGN);
    // The environment must not change what is tested, nor send loopback traffic to a proxy.
    const char *unset[] = {"HIFA4_OFFLINE", "HIFA4_RETRIES", "HIFA4_RETRY_BASE_MS", "HF_TOKEN", "HF_ENDPOINT",
                           "HIFA4_CACHE", "HIFA4_HOME", "HF_HUB_CACHE", "HF_HOME", "HF_HUB_OFFLINE", "http_proxy", "HTTP_PROXY", "https_proxy",
                           "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};
    for (size_t i = 0; i < sizeof unset / sizeof *unset; i++) unsetenv(unset[i]);
    test_names();
    test_paths();
    test_cli();
    if (start_server() != 0) {
        CHECK(0, "cannot start tests/http_server.py with python3");
        stop_server();
        return test_summary("test_fetch");
    }
    test_download_resume();
    test_errors();
    test_hub_model();
    test_task_data();
    test_task_tar();
    test_manifests();
    stop_server();
    return test_summary("test_fetch");
}
