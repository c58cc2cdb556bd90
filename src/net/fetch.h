// fetch.h: downloads (the only network code, libcurl). Fetches one URL into the cache as
// NAME.part, resumes it with HTTP Range, verifies size and sha256 (manifest, or the Hugging
// Face X-Linked-Etag / ETag of LFS files) and renames it to NAME only when complete and
// verified. On top of that: named models (configs/models/<name>.json, Hugging Face Hub) and
// task data (datasets/<task>.json manifests). Offline mode never creates a curl handle.
// Environment: HF_TOKEN (bearer token, sent only to HF_ENDPOINT), HF_ENDPOINT (Hub mirror,
// default https://huggingface.co), HIFA4_OFFLINE=1, HIFA4_RETRIES (default 5),
// HIFA4_RETRY_BASE_MS (first backoff delay, default 1000), HIFA4_CACHE (paths.h).
#ifndef HIFA4_FETCH_H
#define HIFA4_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

// ---- name validation ----
// Names that come from users, configs, manifests or an index.json become paths under the
// cache; these reject anything that could leave it.
// Hub repository "owner/name" or "name": 1 or 2 components of [A-Za-z0-9._-], no "." or
// ".." component, no leading/trailing '/', no empty component. Errors: ERR_USAGE naming it.
int fetch_check_repo(const char *repo, struct err *e);
// A relative path (file in a repository, revision, dataset path): non-empty, < 1024 bytes,
// valid UTF-8, no control characters (< 0x20, 0x7f), no backslash, not absolute, no empty,
// "." or ".." component. `what` names the value in the error ("file", "revision"...).
// Errors: ERR_USAGE "<what> '<name>': <reason>".
int fetch_check_relpath(const char *path, const char *what, struct err *e);

// ---- one file ----
struct fetch_opts {
    int offline;          // 1: never touch the network (missing file -> ERR_NOTFOUND)
    int retries;          // extra attempts after the first on 5xx/429/connection errors
    int retry_base_ms;    // delay before retry k is base * 2^(k-1), capped at 60 s
    int progress;         // 1: progress on stderr (bar on a tty, else a line every 5 s)
    const char *hf_token; // bearer token for URLs under hf_endpoint (NULL: none)
    const char *hf_endpoint; // Hub base URL without trailing '/'
};
// Defaults from the environment (see the file header); offline is 1 if `offline` is set or
// HIFA4_OFFLINE=1. Strings point into the environment.
void fetch_opts_init(struct fetch_opts *o, int offline);

struct fetch_result {
    int64_t bytes_received; // body bytes written to disk over the network in this call
    int64_t resumed_from;   // bytes of an earlier .part kept by the last attempt (0 = fresh)
    int requests;           // HTTP transfers started (attempts)
    int already;            // 1: dest existed, nothing fetched
    int verified_sha;       // 1: sha256 checked (manifest or ETag); 0: size only
    char sha256[65];        // sha256 of the downloaded file ("" if already present)
};

// What a fetched file is known to be: its size (-1 unknown) and sha256 (64 hex; NULL unknown).
struct fetch_expect {
    int64_t size;
    const char *sha256;
};
// Whether a request sends o->hf_token (Hub files) or not.
enum fetch_auth { FETCH_ANONYMOUS, FETCH_HF_TOKEN };

// Makes sure `dest` holds the file at `url`. If dest exists it is trusted (its size is
// checked when x.size >= 0); else the body goes to dest.part (resumed if it exists) and is
// renamed to dest after checking size (if x.size >= 0, or the server's total) and sha256:
// x.sha256 if given, else a 64-hex X-Linked-Etag/ETag from the server. A mismatch deletes
// the .part. The parent directory of dest is created.
// r may be NULL. Errors (naming the URL and the file): ERR_NOTFOUND (404, or offline and
// missing), ERR_NET (401/403/other HTTP status, connection failure after retries, transfer
// cut with no retries left - the .part is kept for a later resume), ERR_MISMATCH (size or
// sha256), ERR_IO (disk).
int fetch_url(const char *url, const char *dest, struct fetch_expect x, enum fetch_auth auth,
              const struct fetch_opts *o, struct fetch_result *r, struct err *e);

// ---- download plans (models, task data) ----
struct fetch_entry {
    char *url;      // NULL: cannot be downloaded (see manual)
    char *dest;     // absolute/cache path of the final file
    char *rel;      // path relative to the plan root (for messages)
    int64_t size;   // -1 unknown
    char sha256[65];// "" unknown
    int use_token;  // Hub file: send HF_TOKEN
    int shard;      // model weight shard (its list may be replaced by the index's)
    int optional;   // model file the repository may lack: 404 (or offline absence) is a warning
    int present;    // dest (or one of the manifest's alt_paths) exists now
    char *manual;   // how to obtain a file without url or archive (NULL otherwise)
    int is_archive; // a tar archive that holds other entries (kept in the cache once fetched)
    int archive;    // 1 + index of the archive entry this file is unpacked from (0: none)
    char *member;   // member name inside that archive
    int system;     // dest is a system path (e.g. /usr/share/hamexam): checked, never written
};
struct fetch_plan {
    char root[4096];          // model dir or data root
    struct fetch_entry *v;    // n entries, owned
    int n, cap;
    int shards_from_index;    // model: 1 if shard names were read from a cached index.json
    char title[256];          // "model qwen3-8b (Qwen/Qwen3-8B@main)" / "task mmlu" (for messages only)
    char repo[256];           // model: the Hub repository "owner/name" ("" for tasks)
    char revision[256];       // model: the Hub revision ("" for tasks)
    char url_base[4096];      // model: <endpoint>/<repo>/resolve/<revision> ("" for tasks)
    char index_rel[256];      // model: index file name ("" if none)
    char license[512];        // license / gating note from the config or manifest
};
void fetch_plan_free(struct fetch_plan *p);

// Plans the files of a named model (configs/models/<name>.json under paths_home): Hub URLs
// (o->hf_endpoint) and destinations under <cache>/models/<owner>/<repo>/<revision>/. Shard
// names come from the cached model.safetensors.index.json when it exists, else from the
// config's list. No network. Errors: ERR_NOTFOUND (unknown name: lists the known ones),
// ERR_FORMAT (bad config), ERR_USAGE (bad names).
int fetch_plan_model(struct fetch_plan *p, const char *name, const struct fetch_opts *o, struct err *e);
// The same from the text of a model config already in memory (cfg names it in errors).
int fetch_plan_model_mem(struct fetch_plan *p, const char *name, const char *json, size_t len, const char *cfg,
                         const struct fetch_opts *o, struct err *e);
// Plans a task's data files (datasets/<task>.json) under <cache>/datasets/. No network.
// `task` may name a manifest in a subfolder ("ppl/wikitext2").
int fetch_plan_task(struct fetch_plan *p, const char *task, struct err *e);
// The same from the text of a manifest already in memory (man names it in errors).
int fetch_plan_task_mem(struct fetch_plan *p, const char *task, const char *json, size_t len, const char *man,
                        struct err *e);
// Fetches every entry that is not present. For a model, after the index is fetched the
// shard list is re-read from it (it is authoritative; differences from the config are
// logged). Offline: fails listing every missing file and where it was expected. A manual
// entry that is missing fails with its instructions. Errors: as fetch_url.
int fetch_plan_run(struct fetch_plan *p, const struct fetch_opts *o, struct err *e);

// Shard file names of a model.safetensors.index.json: its weight_map's values in first-seen
// order, each checked as fetch_check_relpath. *names: a new cJSON array of strings (caller
// frees with cJSON_Delete). Errors name the file and key: ERR_FORMAT (empty or ill-typed
// weight_map), ERR_USAGE (a name leaving the directory), ERR_IO.
struct cJSON;
int fetch_index_shards(const char *path, struct cJSON **names, struct err *e);

// ---- API for the evaluation ----
// (What a --model argument names is decided in one place, runplan/model_arg.h; a model's plan
// above is what `download --model NAME` runs.)
// Makes sure the files of task's manifest are in <cache>/datasets/ (downloading missing ones
// unless offline) and writes that data root to root.
int fetch_task_data(const char *task, int offline, char *root, size_t n, struct err *e);

#endif
