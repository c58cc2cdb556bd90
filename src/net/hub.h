// hub.h: Hugging Face Hub models in the Hugging Face cache layout, so weights that transformers
// already downloaded are used in place and what we download transformers can use:
//   <hub cache>/models--ORG--NAME/refs/<revision>          the commit hash a revision names
//   <hub cache>/models--ORG--NAME/snapshots/<commit>/FILE  the files of that commit
// The hub cache is $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub. Files we
// download are written into the snapshot directory as regular files (huggingface_hub's own
// layout when symlinks are unavailable; it reads them the same way), through fetch_url: resumed
// .part files, size and sha256 (X-Linked-Etag of LFS files) checked. The revision's file list
// and commit come from the Hub API (GET <endpoint>/api/models/ORG/NAME/revision/<revision>).
// Environment: HF_HUB_CACHE, HF_HOME, HF_HUB_OFFLINE=1 (as --offline), HF_TOKEN, HF_ENDPOINT.
#ifndef HIFA4_HUB_H
#define HIFA4_HUB_H

#include <stddef.h>

#include "base/common.h"
#include "net/fetch.h"

// "ORG/NAME" or "ORG/NAME@REVISION": 1 if arg has that form (ORG and NAME of [A-Za-z0-9._-],
// not starting with '.'; REVISION non-empty). Says nothing about whether it exists.
int hub_is_ref(const char *arg);

struct hub_ref {
    char repo[256];      // "ORG/NAME"
    char revision[256];  // "main" when none was given; a branch, tag or 40-hex commit
};
// Splits and validates arg (see hub_is_ref; the revision as fetch_check_relpath). ERR_USAGE.
int hub_parse_ref(struct hub_ref *r, const char *arg, struct err *e);

// The hub cache root (see the file header) into out. ERR_NOTFOUND without HOME; ERR_RANGE.
int hub_cache_root(char *out, size_t n, struct err *e);

struct hub_snapshot {
    char dir[4096];      // .../snapshots/<commit>
    char commit[64];     // 40 hex
    int downloaded;      // files fetched by this call (0: found complete in the cache)
    int requests;        // HTTP requests made by this call (0: the network was not touched)
};

// 1 if dir holds a usable checkpoint: config.json, and model.safetensors or an index whose
// every shard is present.
int hub_snapshot_complete(const char *dir);

// Finds ref in the hub cache (a 40-hex revision as snapshots/<it>, else refs/<revision>) and
// uses a complete snapshot as is, touching no network. Otherwise, unless offline (o->offline
// or HF_HUB_OFFLINE=1), asks the Hub for the revision's commit and files, downloads config,
// generation config, tokenizer files, the safetensors index and the shards it lists (or
// model.safetensors) into snapshots/<commit>/, and writes refs/<revision>. Errors (naming the
// repository, revision and what was looked for): ERR_NOTFOUND (offline and not cached; the
// repository or revision does not exist), ERR_NET (401/403 with advice on HF_TOKEN),
// ERR_FORMAT (a bad API answer or index), ERR_MISMATCH, ERR_IO.
int hub_resolve(struct hub_snapshot *s, const struct hub_ref *ref, const struct fetch_opts *o, struct err *e);

#endif
