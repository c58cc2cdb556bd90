// fuzz_manifest.c: download manifests (net/fetch.c), which name paths under the cache: a task's
// datasets/<task>.json and a model's configs/models/<name>.json, both parsed from the input
// into download plans (no network: HIFA4_CACHE points at the scratch directory). Every
// planned destination must stay inside the cache (or be a checked system path), since a
// manifest that escapes it could overwrite any file.
// fuzz-seeds: datasets/*.json datasets/ppl/*.json configs/models/*.json
// fuzz-max-len: 16384
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"
#include "net/fetch.h"

static char cache[1024];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    snprintf(cache, sizeof cache, "%s/cache", fz_dir());
    setenv("HIFA4_CACHE", cache, 1);
    setenv("HIFA4_OFFLINE", "1", 1);
    return 0;
}

static void check_plan(const struct fetch_plan *p) {
    size_t cl = strlen(cache);
    for (int i = 0; i < p->n; i++) {
        const struct fetch_entry *x = &p->v[i];
        if (x->system) continue;
        if (!x->dest || strncmp(x->dest, cache, cl) || x->dest[cl] != '/' || strstr(x->dest, "/../") ||
            strstr(x->dest, "/./")) {
            fprintf(stderr, "planned file outside the cache: %s\n", x->dest ? x->dest : "(null)");
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!cache[0]) LLVMFuzzerInitialize(NULL, NULL);
    struct err e = {0};
    struct fetch_plan p;
    if (!fetch_plan_task_mem(&p, "fuzz", (const char *)data, size, "fuzz-manifest.json", &e)) {
        check_plan(&p);
        fetch_plan_free(&p);
    }
    struct fetch_opts o;
    fetch_opts_init(&o, 1);
    if (!fetch_plan_model_mem(&p, "fuzz", (const char *)data, size, "fuzz-model.json", &o, &e)) {
        check_plan(&p);
        fetch_plan_free(&p);
    }
    return 0;
}
