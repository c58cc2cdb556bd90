// hub.c: Hugging Face Hub models in the Hugging Face cache layout (see hub.h): reference
// parsing, the cache lookup (no network), and the download of a revision's files through
// fetch_url. Knows nothing of checkpoints beyond config.json and the safetensors index.
#include "net/hub.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/json_util.h"

#define HUB_PATH 4096

// ---- references ----
static int name_ok(const char *s, size_t n) {
    if (n == 0 || n > 96 || s[0] == '.') return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.') return 0;
    return 1;
}

int hub_is_ref(const char *arg) {
    if (!arg) return 0;
    const char *slash = strchr(arg, '/'), *at = strchr(arg, '@');
    if (!slash || (at && at < slash)) return 0;
    const char *end = at ? at : arg + strlen(arg);
    if (memchr(slash + 1, '/', (size_t)(end - slash - 1))) return 0;
    if (!name_ok(arg, (size_t)(slash - arg)) || !name_ok(slash + 1, (size_t)(end - slash - 1))) return 0;
    return !at || at[1] != 0;
}

int hub_parse_ref(struct hub_ref *r, const char *arg, struct err *e) {
    memset(r, 0, sizeof *r);
    if (!hub_is_ref(arg))
        return err_set(e, ERR_USAGE, "model '%s': expected ORG/NAME or ORG/NAME@REVISION (A-Z a-z 0-9 . _ -)",
                       arg ? arg : "");
    const char *at = strchr(arg, '@');
    size_t n = at ? (size_t)(at - arg) : strlen(arg);
    snprintf(r->repo, sizeof r->repo, "%.*s", (int)n, arg);
    snprintf(r->revision, sizeof r->revision, "%s", at ? at + 1 : "main");
    if (at && strlen(at + 1) >= sizeof r->revision)
        return err_set(e, ERR_USAGE, "model '%s': revision longer than %zu bytes", arg, sizeof r->revision - 1);
    int rc = fetch_check_relpath(r->revision, "revision", e);
    return rc ? err_prefix(e, "model '%s'", arg) : 0;
}

static int is_commit(const char *s) {
    if (strlen(s) != 40) return 0;
    for (int i = 0; i < 40; i++)
        if (!isxdigit((unsigned char)s[i])) return 0;
    return 1;
}

// ---- the cache ----
int hub_cache_root(char *out, size_t n, struct err *e) {
    const char *c = getenv("HF_HUB_CACHE"), *h = getenv("HF_HOME"), *home = getenv("HOME");
    int w;
    if (c && *c) w = snprintf(out, n, "%s", c);
    else if (h && *h) w = snprintf(out, n, "%s/hub", h);
    else if (home && *home) w = snprintf(out, n, "%s/.cache/huggingface/hub", home);
    else return err_set(e, ERR_NOTFOUND, "Hugging Face cache: none of HF_HUB_CACHE, HF_HOME, HOME is set");
    if (w < 0 || (size_t)w >= n) return err_set(e, ERR_RANGE, "Hugging Face cache path too long");
    return 0;
}

// <hub cache>/models--ORG--NAME
static int repo_dir(char *out, size_t n, const char *repo, struct err *e) {
    char root[HUB_PATH];
    int rc = hub_cache_root(root, sizeof root, e);
    if (rc) return rc;
    const char *slash = strchr(repo, '/');
    int w = snprintf(out, n, "%s/models--%.*s--%s", root, (int)(slash - repo), repo, slash + 1);
    if (w < 0 || (size_t)w >= n) return err_set(e, ERR_RANGE, "Hugging Face cache path too long");
    return 0;
}

int hub_snapshot_complete(const char *dir) {
    char p[HUB_PATH + 64];
    snprintf(p, sizeof p, "%s/config.json", dir);
    if (!file_exists(p)) return 0;
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    if (!file_exists(p)) {
        snprintf(p, sizeof p, "%s/model.safetensors", dir);
        return file_exists(p);
    }
    cJSON *names = NULL;
    struct err e = {0};
    if (fetch_index_shards(p, &names, &e)) return 0;
    int ok = 1;
    const cJSON *s;
    cJSON_ArrayForEach(s, names) {
        snprintf(p, sizeof p, "%s/%s", dir, s->valuestring);
        if (!file_exists(p)) ok = 0;
    }
    cJSON_Delete(names);
    return ok;
}

// What is wrong with file p of a snapshot, into why (empty: a readable file). The cache's
// files are symlinks into blobs/, so "missing", "a dangling symlink" and "a symlink loop" are
// three different repairs.
static void file_state(const char *p, char *why, size_t n) {
    struct stat st;
    why[0] = 0;
    if (!stat(p, &st)) return;
    const int err = errno;
    char target[HUB_PATH] = "";
    ssize_t k = lstat(p, &st) ? -1 : readlink(p, target, sizeof target - 1);
    if (k >= 0) target[k] = 0;
    const char *name = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
    if (k < 0) snprintf(why, n, "%s is missing", name);
    else if (err == ELOOP) snprintf(why, n, "%s is a symlink loop (-> %s)", name, target);
    else snprintf(why, n, "%s is a dangling symlink to %s (its blob is missing)", name, target);
}

// Files a snapshot needs beside the weights: without them the tokenizer would fall back to
// defaults a fresh download does not have (AutoModel alone leaves no tokenizer files; without
// tokenizer_config.json add_bos_token differs).
static const char *const tok_files[] = {"tokenizer.json", "tokenizer_config.json"};

// huggingface_hub's record that a commit has no such file: <repo dir>/.no_exist/<commit>/<file>.
static void no_exist_path(char *p, size_t n, const char *dir, const char *f) {
    const char *snap = strstr(dir, "/snapshots/"); // dir is <repo dir>/snapshots/<commit>
    if (snap) snprintf(p, n, "%.*s/.no_exist/%s/%s", (int)(snap - dir), dir, snap + 11, f);
    else snprintf(p, n, "%s/.no_exist-unknown", dir);
}

// 0 if snapshot dir holds config.json, its weights and the tokenizer files (or the cache's
// record that the commit has no such file), all readable; else 1 with what is wrong in why
// (the first problem found).
static int snapshot_problem(const char *dir, char *why, size_t n) {
    char p[HUB_PATH + 64];
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        char w[HUB_PATH + 128];
        file_state(dir, w, sizeof w);
        snprintf(why, n, "its directory: %s", w[0] ? w : "not a directory");
        return 1;
    }
    const char *need[4] = {"config.json", "model.safetensors.index.json", tok_files[0], tok_files[1]};
    snprintf(p, sizeof p, "%s/%s", dir, need[1]);
    struct stat lst;
    if (lstat(p, &lst)) need[1] = "model.safetensors"; // no index: the single file
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, need[i]);
        file_state(p, why, n);
        if (why[0] && i >= 2 && lstat(p, &lst)) {
            no_exist_path(p, sizeof p, dir, need[i]);
            if (!stat(p, &lst)) why[0] = 0; // the commit has none: as a fresh download
        }
        if (why[0]) return 1;
    }
    if (!hub_snapshot_complete(dir)) return snprintf(why, n, "a shard its index names is missing or unreadable"), 1;
    return 0;
}

// The commit a revision names in the cache ("" if none): the revision itself when it is a
// commit with a snapshot directory, else the content of refs/<revision>.
static void cached_commit(char commit[64], const char *rdir, const char *rev) {
    char p[HUB_PATH + 512];
    commit[0] = 0;
    if (is_commit(rev)) {
        snprintf(p, sizeof p, "%s/snapshots/%s", rdir, rev);
        if (dir_exists(p)) snprintf(commit, 64, "%s", rev);
        return;
    }
    snprintf(p, sizeof p, "%s/refs/%s", rdir, rev);
    char *txt = NULL;
    size_t len = 0;
    struct err e = {0};
    if (file_read_all(p, &txt, &len, &e)) return;
    while (len && isspace((unsigned char)txt[len - 1])) txt[--len] = 0;
    if (is_commit(txt)) snprintf(commit, 64, "%s", txt);
    free(txt);
}

static int hub_offline(const struct fetch_opts *o) {
    const char *s = getenv("HF_HUB_OFFLINE");
    return o->offline || (s && *s && strcmp(s, "0") != 0);
}

// ---- downloads ----
// Files of a revision that a checkpoint directory needs (top level only): config, tokenizer,
// the safetensors index; the shards are decided by the index (or model.safetensors alone).
static int wanted(const char *f) {
    static const char *const names[] = {"config.json", "generation_config.json", "tokenizer.json",
                                        "tokenizer_config.json", "special_tokens_map.json",
                                        "model.safetensors.index.json", "model.safetensors"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(f, names[i])) return 1;
    return 0;
}

static int endpoint(char *out, size_t n, const struct fetch_opts *o, struct err *e) {
    const char *ep = o->hf_endpoint ? o->hf_endpoint : "https://huggingface.co";
    if (strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8))
        return err_set(e, ERR_USAGE, "HF_ENDPOINT '%s': expected an http:// or https:// URL", ep);
    size_t l = strlen(ep);
    while (l && ep[l - 1] == '/') l--;
    if (l >= n) return err_set(e, ERR_RANGE, "HF_ENDPOINT too long");
    snprintf(out, n, "%.*s", (int)l, ep);
    return 0;
}

static void count(struct hub_snapshot *s, const struct fetch_result *r) {
    s->requests += r->requests;
    s->downloaded += !r->already;
}

// The revision's commit and file list from the Hub API (written to a temporary file beside the
// snapshots, removed after parsing). *api: the parsed answer (caller frees).
static int ask_api(cJSON **api, const char *ep, const char *rdir, const struct hub_ref *ref,
                   const struct fetch_opts *o, struct hub_snapshot *s, struct err *e) {
    char url[HUB_PATH * 2], dest[HUB_PATH + 64], part[HUB_PATH + 80];
    snprintf(url, sizeof url, "%s/api/models/%s/revision/%s", ep, ref->repo, ref->revision);
    snprintf(dest, sizeof dest, "%s/.hifa4-api-%d.json", rdir, (int)getpid());
    snprintf(part, sizeof part, "%s.part", dest);
    unlink(dest);
    unlink(part);
    struct fetch_result r;
    int rc = fetch_url(url, dest, (struct fetch_expect){-1, NULL}, FETCH_HF_TOKEN, o, &r, e);
    s->requests += r.requests;
    if (rc == ERR_NOTFOUND)
        return err_set(e, ERR_NOTFOUND, "model %s@%s: no such repository or revision on %s", ref->repo, ref->revision, ep);
    if (rc) return err_prefix(e, "model %s@%s", ref->repo, ref->revision);
    rc = json_parse_file(api, dest, e);
    unlink(dest);
    if (rc) return rc;
    const char *sha = NULL;
    const cJSON *sib = NULL;
    if ((rc = json_need_str(*api, "sha", &sha, url, e)) || (rc = json_need_arr(*api, "siblings", &sib, url, e)))
        return rc;
    if (!is_commit(sha)) return err_set(e, ERR_FORMAT, "%s: field 'sha': expected a 40-hex commit, got '%.60s'", url, sha);
    snprintf(s->commit, sizeof s->commit, "%s", sha);
    return 0;
}

// Downloads file f of the commit into the snapshot directory.
static int get_file(struct hub_snapshot *s, const char *ep, const struct hub_ref *ref, const char *f,
                    const struct fetch_opts *o, struct err *e) {
    int rc = fetch_check_relpath(f, "file", e);
    if (rc) return err_prefix(e, "model %s@%s", ref->repo, ref->revision);
    char url[HUB_PATH * 2], dest[HUB_PATH * 2];
    snprintf(url, sizeof url, "%s/%s/resolve/%s/%s", ep, ref->repo, s->commit, f);
    snprintf(dest, sizeof dest, "%s/%s", s->dir, f);
    struct fetch_result r;
    rc = fetch_url(url, dest, (struct fetch_expect){-1, NULL}, FETCH_HF_TOKEN, o, &r, e);
    count(s, &r);
    return rc ? err_prefix(e, "model %s@%s", ref->repo, ref->revision) : 0;
}

static int get_shards(struct hub_snapshot *s, const char *ep, const struct hub_ref *ref, const struct fetch_opts *o,
                      struct err *e) {
    char p[HUB_PATH + 64];
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", s->dir);
    if (!file_exists(p)) {
        snprintf(p, sizeof p, "%s/model.safetensors", s->dir);
        if (file_exists(p)) return 0;
        return err_set(e, ERR_NOTFOUND, "model %s@%s: the repository has neither model.safetensors nor "
                       "model.safetensors.index.json (only safetensors checkpoints are read)", ref->repo, ref->revision);
    }
    cJSON *names = NULL;
    int rc = fetch_index_shards(p, &names, e);
    if (rc) return rc;
    const cJSON *n;
    cJSON_ArrayForEach(n, names) if ((rc = get_file(s, ep, ref, n->valuestring, o, e))) break;
    cJSON_Delete(names);
    return rc;
}

static int write_ref(const char *rdir, const struct hub_ref *ref, const char *commit, struct err *e) {
    if (is_commit(ref->revision)) return 0;
    char p[HUB_PATH + 512], d[HUB_PATH + 512];
    snprintf(p, sizeof p, "%s/refs/%s", rdir, ref->revision);
    snprintf(d, sizeof d, "%s", p);
    *strrchr(d, '/') = 0;
    int rc = mkdir_p(d, e);
    return rc ? rc : file_write_atomic(p, commit, strlen(commit), e);
}

// Writes the .no_exist record of file f when the commit's file list (the API answer) lacks it,
// so the next resolve knows the snapshot is complete without it, as huggingface_hub does.
static int record_absent(const char *dir, const cJSON *api, const char *f, struct err *e) {
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(api, "siblings")) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "rfilename");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, f)) return 0;
    }
    char p[HUB_PATH + 256], d[HUB_PATH + 256];
    no_exist_path(p, sizeof p, dir, f);
    snprintf(d, sizeof d, "%s", p);
    *strrchr(d, '/') = 0;
    int rc = mkdir_p(d, e);
    return rc ? rc : file_write_atomic(p, "", 0, e);
}

static int download(struct hub_snapshot *s, const char *rdir, const struct hub_ref *ref, const struct fetch_opts *o,
                    struct err *e) {
    char ep[1024];
    cJSON *api = NULL;
    int rc = endpoint(ep, sizeof ep, o, e);
    if (!rc) rc = mkdir_p(rdir, e);
    if (!rc) rc = ask_api(&api, ep, rdir, ref, o, s, e);
    if (!rc && snprintf(s->dir, sizeof s->dir, "%s/snapshots/%s", rdir, s->commit) >= (int)sizeof s->dir)
        rc = err_set(e, ERR_RANGE, "snapshot path too long");
    if (!rc) rc = mkdir_p(s->dir, e);
    const cJSON *it;
    int has_index = 0;
    if (!rc) cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(api, "siblings")) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(it, "rfilename");
        if (!cJSON_IsString(f)) { rc = err_set(e, ERR_FORMAT, "model %s: API answer: a sibling without rfilename", ref->repo); break; }
        if (!strcmp(f->valuestring, "model.safetensors.index.json")) has_index = 1;
    }
    // the files without the shards first: the index decides which shards there are
    if (!rc) cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(api, "siblings")) {
        const char *f = cJSON_GetObjectItemCaseSensitive(it, "rfilename")->valuestring;
        if (!wanted(f) || (has_index && !strcmp(f, "model.safetensors"))) continue;
        if ((rc = get_file(s, ep, ref, f, o, e))) break;
    }
    for (size_t i = 0; !rc && i < sizeof tok_files / sizeof *tok_files; i++) rc = record_absent(s->dir, api, tok_files[i], e);
    cJSON_Delete(api);
    if (!rc) rc = get_shards(s, ep, ref, o, e);
    if (!rc && !hub_snapshot_complete(s->dir))
        rc = err_set(e, ERR_NOTFOUND, "model %s@%s: no config.json in the repository", ref->repo, ref->revision);
    if (!rc) rc = write_ref(rdir, ref, s->commit, e);
    return rc;
}

int hub_resolve(struct hub_snapshot *s, const struct hub_ref *ref, const struct fetch_opts *o, struct err *e) {
    memset(s, 0, sizeof *s);
    char rdir[HUB_PATH];
    int rc = repo_dir(rdir, sizeof rdir, ref->repo, e);
    if (rc) return rc;
    cached_commit(s->commit, rdir, ref->revision);
    if (s->commit[0]) {
        if (snprintf(s->dir, sizeof s->dir, "%s/snapshots/%s", rdir, s->commit) >= (int)sizeof s->dir)
            return err_set(e, ERR_RANGE, "snapshot path too long");
        char why[HUB_PATH + 256];
        if (!snapshot_problem(s->dir, why, sizeof why)) return 0;
        if (hub_offline(o))
            return err_set(e, ERR_NOTFOUND, "offline: model %s@%s: the cached snapshot %s is unusable: %s; complete it "
                           "online (hifa4-eval downloads what is missing) or with huggingface_hub's snapshot_download",
                           ref->repo, ref->revision, s->dir, why);
        log_info("model %s@%s: cached snapshot incomplete (%s): completing it from the Hub", ref->repo, ref->revision, why);
    }
    if (hub_offline(o))
        return err_set(e, ERR_NOTFOUND, "offline: model %s@%s is not in the Hugging Face cache (looked for %s/%s%s, "
                       "a snapshot with config.json and its safetensors); set HF_HUB_CACHE or HF_HOME to the cache "
                       "that holds it, or download it on a networked machine",
                       ref->repo, ref->revision, rdir, is_commit(ref->revision) ? "snapshots/" : "refs/", ref->revision);
    rc = download(s, rdir, ref, o, e);
    if (!rc) log_info("model %s@%s: commit %s in %s (%d file%s downloaded)", ref->repo, ref->revision, s->commit,
                      s->dir, s->downloaded, s->downloaded == 1 ? "" : "s");
    return rc;
}
