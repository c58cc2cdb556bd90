// fetch_plan.c: download plans (fetch.h "download plans"): named models of the Hugging Face
// Hub (configs/models) and task data manifests (datasets/), each file fetched through
// fetch_url; archive members unpacked by fetch_archive.c.
#include "net/fetch.h"

#include <ctype.h>
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
#include "base/sha256.h"

#define URL_MAX 4096
#define PATH_MAX_ 4096

#include "net/fetch_internal.h"

// Model / task names become file names under configs/ and datasets/.
static int check_simple_name(const char *name, const char *what, int allow_slash, struct err *e) {
    int rc = fetch_check_relpath(name, what, e);
    if (rc) return rc;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.' && !(allow_slash && *p == '/'))
            return err_set(e, ERR_USAGE, "%s '%s': character '%c' not allowed", what, name, *p);
    if (name[0] == '.') return err_set(e, ERR_USAGE, "%s '%s': must not start with '.'", what, name);
    return 0;
}

// ---- plans ----
void fetch_plan_free(struct fetch_plan *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) {
        free(p->v[i].url);
        free(p->v[i].dest);
        free(p->v[i].rel);
        free(p->v[i].manual);
        free(p->v[i].member);
    }
    free(p->v);
    memset(p, 0, sizeof *p);
}

static char *fmt_dup(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *fmt_dup(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

// Percent-encodes a relative path for a URL, keeping '/' and RFC 3986 unreserved characters.
static char *url_path_enc(const char *s) {
    size_t n = strlen(s);
    char *o = malloc(3 * n + 1), *q = o;
    if (!o) return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' || *p == '/') *q++ = (char)*p;
        else q += sprintf(q, "%%%02X", *p);
    }
    *q = 0;
    return o;
}

static struct fetch_entry *plan_add(struct fetch_plan *p, struct err *e) {
    if (p->n == p->cap) {
        int nc = p->cap ? 2 * p->cap : 16;
        struct fetch_entry *v = realloc(p->v, sizeof *v * (size_t)nc);
        if (!v) { err_set(e, ERR_NOMEM, "fetch: out of memory"); return NULL; }
        p->v = v;
        p->cap = nc;
    }
    struct fetch_entry *x = &p->v[p->n++];
    memset(x, 0, sizeof *x);
    x->size = -1;
    return x;
}

// What a Hub file is to the plan: a file the model needs, one it may lack (404 is a warning),
// or a weight shard (its list may be replaced by the index's).
enum hub_file { HUB_REQUIRED, HUB_OPTIONAL, HUB_SHARD };

// Adds Hub file `file` of the plan's model (p->repo/p->rev).
static int plan_add_hub(struct fetch_plan *p, const char *file, enum hub_file kind, struct err *e) {
    int rc = fetch_check_relpath(file, "file", e);
    if (rc) return err_prefix(e, "%s", p->title);
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->v[i].rel, file)) return 0; // listed twice
    struct fetch_entry *x = plan_add(p, e);
    if (!x) return ERR_NOMEM;
    char *ef = url_path_enc(file);
    x->rel = str_dup(file);
    x->dest = fmt_dup("%s/%s", p->root, file);
    x->url = ef ? fmt_dup("%s/%s", p->url_base, ef) : NULL;
    free(ef);
    x->use_token = 1;
    x->shard = kind == HUB_SHARD;
    x->optional = kind == HUB_OPTIONAL;
    if (!x->rel || !x->dest || !x->url) return err_set(e, ERR_NOMEM, "fetch: out of memory");
    x->present = file_exists(x->dest);
    return 0;
}

// Shard file names from a model.safetensors.index.json (weight_map values, first-seen order).
int fetch_index_shards(const char *path, cJSON **out, struct err *e) {
    cJSON *j = NULL;
    int rc = json_parse_file(&j, path, e);
    if (rc) return rc;
    const cJSON *wm;
    rc = json_need_obj(j, "weight_map", &wm, path, e);
    if (rc) { cJSON_Delete(j); return rc; }
    cJSON *names = cJSON_CreateArray();
    if (!names) { cJSON_Delete(j); return err_set(e, ERR_NOMEM, "fetch: out of memory"); }
    const cJSON *it;
    cJSON_ArrayForEach(it, wm) {
        if (!cJSON_IsString(it)) {
            rc = err_set(e, ERR_FORMAT, "%s: weight_map['%s']: expected a string, got %s", path,
                         it->string, json_brief(it));
            break;
        }
        rc = fetch_check_relpath(it->valuestring, "shard", e);
        if (rc) { err_prefix(e, "%s: weight_map['%s']", path, it->string); break; }
        int seen = 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, names) if (!strcmp(s->valuestring, it->valuestring)) seen = 1;
        if (!seen) cJSON_AddItemToArray(names, cJSON_CreateString(it->valuestring));
    }
    cJSON_Delete(j);
    if (!rc && cJSON_GetArraySize(names) == 0) rc = err_set(e, ERR_FORMAT, "%s: weight_map is empty", path);
    if (rc) { cJSON_Delete(names); return rc; }
    *out = names;
    return 0;
}

static void list_names(char *buf, size_t n, const char *dir) {
    buf[0] = 0;
    DIR *d = opendir(dir);
    if (!d) { snprintf(buf, n, "(cannot read %s)", dir); return; }
    struct dirent *de;
    size_t l = 0;
    while ((de = readdir(d))) {
        size_t k = strlen(de->d_name);
        if (k > 5 && !strcmp(de->d_name + k - 5, ".json") && l + k < n - 2) {
            l += (size_t)snprintf(buf + l, n - l, "%s%.*s", l ? ", " : "", (int)(k - 5), de->d_name);
        }
    }
    closedir(d);
}

int fetch_plan_model(struct fetch_plan *p, const char *name, const struct fetch_opts *o, struct err *e) {
    memset(p, 0, sizeof *p);
    int rc = check_simple_name(name, "model name", 0, e);
    if (rc) return rc;
    char home[PATH_MAX_], cfg[PATH_MAX_];
    if ((rc = paths_home(home, sizeof home, e))) return rc;
    if (snprintf(cfg, sizeof cfg, "%s/configs/models/%s.json", home, name) >= (int)sizeof cfg)
        return err_set(e, ERR_RANGE, "path too long");
    if (!file_exists(cfg)) {
        char known[1024], dir[PATH_MAX_ + 32];
        snprintf(dir, sizeof dir, "%s/configs/models", home);
        list_names(known, sizeof known, dir);
        return err_set(e, ERR_NOTFOUND, "unknown model '%s' (no %s); known: %s; or pass a checkpoint directory",
                       name, cfg, known[0] ? known : "none");
    }
    char *txt = NULL;
    size_t len = 0;
    if ((rc = file_read_all(cfg, &txt, &len, e))) return rc;
    rc = fetch_plan_model_mem(p, name, txt, len, cfg, o, e);
    free(txt);
    return rc;
}

int fetch_plan_model_mem(struct fetch_plan *p, const char *name, const char *json, size_t len, const char *cfg,
                         const struct fetch_opts *o, struct err *e) {
    memset(p, 0, sizeof *p);
    char cache[PATH_MAX_];
    cJSON *j = NULL, *idx = NULL;
    int rc;
    if ((rc = json_parse(&j, json, len, cfg, e))) return rc;
    const char *repo, *rev = "main", *index = NULL;
    const cJSON *files, *shards = NULL;
    if ((rc = json_need_str(j, "repo", &repo, cfg, e)) || (rc = json_opt_str(j, "revision", &rev, "main", cfg, e)) ||
        (rc = json_need_arr(j, "files", &files, cfg, e)) || (rc = json_opt_arr(j, "shards", &shards, cfg, e)) ||
        (rc = json_opt_str(j, "index", &index, NULL, cfg, e)))
        goto fail;
    if ((rc = fetch_check_repo(repo, e)) || (rc = fetch_check_relpath(rev, "revision", e))) {
        err_prefix(e, "%s", cfg);
        goto fail;
    }
    if (index && (rc = fetch_check_relpath(index, "index", e))) { err_prefix(e, "%s", cfg); goto fail; }
    if ((rc = paths_cache(cache, sizeof cache, e))) goto fail;
    const char *ep = o->hf_endpoint ? o->hf_endpoint : "https://huggingface.co";
    if (strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8)) {
        rc = err_set(e, ERR_USAGE, "HF_ENDPOINT '%s': expected an http:// or https:// URL", ep);
        goto fail;
    }
    size_t epl = strlen(ep);
    while (epl && ep[epl - 1] == '/') epl--;
    char *erev = url_path_enc(rev);
    if (!erev) { rc = err_set(e, ERR_NOMEM, "fetch: out of memory"); goto fail; }
    int w1 = snprintf(p->root, sizeof p->root, "%s/models/%s/%s", cache, repo, rev);
    int w2 = snprintf(p->url_base, sizeof p->url_base, "%.*s/%s/resolve/%s", (int)epl, ep, repo, erev);
    free(erev);
    snprintf(p->title, sizeof p->title, "model %s (%s@%s)", name, repo, rev);
    snprintf(p->repo, sizeof p->repo, "%s", repo);
    snprintf(p->revision, sizeof p->revision, "%s", rev);
    if (w1 >= (int)sizeof p->root || w2 >= (int)sizeof p->url_base) {
        rc = err_set(e, ERR_RANGE, "%s: path or URL too long", cfg);
        goto fail;
    }
    if (index) snprintf(p->index_rel, sizeof p->index_rel, "%s", index);
    const cJSON *it;
    cJSON_ArrayForEach(it, files) {
        if (!cJSON_IsString(it)) {
            rc = err_set(e, ERR_FORMAT, "%s: field 'files': expected strings, got %s", cfg, json_brief(it));
            goto fail;
        }
        if ((rc = plan_add_hub(p, it->valuestring, HUB_REQUIRED, e))) goto fail;
    }
    const cJSON *opt = NULL;
    if ((rc = json_opt_arr(j, "optional_files", &opt, cfg, e))) goto fail;
    if (opt) cJSON_ArrayForEach(it, opt) {
        if (!cJSON_IsString(it)) {
            rc = err_set(e, ERR_FORMAT, "%s: field 'optional_files': expected strings, got %s", cfg, json_brief(it));
            goto fail;
        }
        if ((rc = plan_add_hub(p, it->valuestring, HUB_OPTIONAL, e))) goto fail;
    }
    const char *lic = NULL, *note = NULL;
    int gated = 0;
    if ((rc = json_opt_str(j, "license", &lic, NULL, cfg, e)) || (rc = json_opt_str(j, "note", &note, NULL, cfg, e)) ||
        (rc = json_opt_bool(j, "gated", &gated, 0, cfg, e)))
        goto fail;
    snprintf(p->license, sizeof p->license, "%s%s%s%s", lic ? lic : "license not recorded",
             gated ? " (gated)" : "", note ? "; " : "", note ? note : "");
    // Shards: the cached index is authoritative; else the config's list (checked later).
    char ipath[PATH_MAX_];
    if (index && snprintf(ipath, sizeof ipath, "%s/%s", p->root, index) < (int)sizeof ipath && file_exists(ipath)) {
        if ((rc = fetch_index_shards(ipath, &idx, e))) goto fail;
        shards = idx;
        p->shards_from_index = 1;
    }
    if (shards) cJSON_ArrayForEach(it, shards) {
        if (!cJSON_IsString(it)) {
            rc = err_set(e, ERR_FORMAT, "%s: field 'shards': expected strings, got %s", cfg, json_brief(it));
            goto fail;
        }
        if ((rc = plan_add_hub(p, it->valuestring, HUB_SHARD, e))) goto fail;
    }
    cJSON_Delete(idx);
    cJSON_Delete(j);
    return 0;
fail:
    cJSON_Delete(idx);
    cJSON_Delete(j);
    fetch_plan_free(p);
    return rc;
}

// datasets/<task>.json under paths_home into man (which must exist; the error lists the
// known manifests).
static int task_manifest(char *man, size_t n, const char *task, struct err *e) {
    int rc = check_simple_name(task, "task", 1, e);
    if (rc) return rc;
    char home[PATH_MAX_];
    if ((rc = paths_home(home, sizeof home, e))) return rc;
    if (snprintf(man, n, "%s/datasets/%s.json", home, task) >= (int)n)
        return err_set(e, ERR_RANGE, "path too long");
    if (!file_exists(man)) {
        char known[1024], dir[PATH_MAX_ + 32];
        snprintf(dir, sizeof dir, "%s/datasets", home);
        list_names(known, sizeof known, dir);
        return err_set(e, ERR_NOTFOUND, "no data manifest for task '%s' (%s); known: %s", task, man,
                       known[0] ? known : "none");
    }
    return 0;
}

// One entry of a manifest's "archives" (ctx: "<manifest>: archives[K]" for errors).
static int plan_archive(struct fetch_plan *p, const cJSON *it, const char *ctx, struct err *e) {
    const char *id, *path, *url, *fmt, *sha = NULL;
    int64_t size = -1;
    int rc;
    if ((rc = json_need_str(it, "id", &id, ctx, e)) || (rc = json_need_str(it, "path", &path, ctx, e)) ||
        (rc = json_need_str(it, "url", &url, ctx, e)) || (rc = json_need_str(it, "format", &fmt, ctx, e)) ||
        (rc = json_opt_str(it, "sha256", &sha, NULL, ctx, e)) || (rc = json_opt_i64(it, "size", &size, -1, ctx, e)))
        return rc;
    if ((rc = fetch_check_relpath(path, "path", e))) { err_prefix(e, "%s", ctx); return rc; }
    if (strcmp(fmt, "tar")) return err_set(e, ERR_UNSUPPORTED, "%s: format '%s': only 'tar' is supported", ctx, fmt);
    if (sha && !fetch_is_hex64(sha)) return err_set(e, ERR_FORMAT, "%s: sha256 '%s': expected 64 hex digits", ctx, sha);
    if (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))
        return err_set(e, ERR_FORMAT, "%s: url '%s': expected http(s)", ctx, url);
    struct fetch_entry *x = plan_add(p, e);
    if (!x) return ERR_NOMEM;
    x->rel = str_dup(path);
    x->dest = fmt_dup("%s/%s", p->root, path);
    x->url = str_dup(url);
    x->member = str_dup(id); // archives keep their id here
    x->is_archive = 1;
    x->size = size;
    if (sha) snprintf(x->sha256, sizeof x->sha256, "%s", sha);
    if (!x->rel || !x->dest || !x->url || !x->member) return err_set(e, ERR_NOMEM, "fetch: out of memory");
    x->present = file_exists(x->dest);
    return 0;
}

// One entry of a manifest's "files", as read and validated by read_task_file.
struct task_file {
    const char *path, *url, *sha, *manual, *arch, *member, *sys, *src_for;
    const cJSON *alts;
    int64_t size;
    int ai; // 1 + index of its archive in the plan, 0 = none
};

static int read_task_file(struct task_file *f, const struct fetch_plan *p, const cJSON *it, const char *ctx,
                          const char *top_manual, struct err *e) {
    memset(f, 0, sizeof *f);
    f->size = -1;
    int rc;
    if ((rc = json_need_str(it, "path", &f->path, ctx, e)) || (rc = json_opt_str(it, "url", &f->url, NULL, ctx, e)) ||
        (rc = json_opt_str(it, "sha256", &f->sha, NULL, ctx, e)) || (rc = json_opt_i64(it, "size", &f->size, -1, ctx, e)) ||
        (rc = json_opt_str(it, "manual", &f->manual, NULL, ctx, e)) || (rc = json_opt_str(it, "archive", &f->arch, NULL, ctx, e)) ||
        (rc = json_opt_str(it, "member", &f->member, NULL, ctx, e)) || (rc = json_opt_arr(it, "alt_paths", &f->alts, ctx, e)) ||
        (rc = json_opt_str(it, "system_path", &f->sys, NULL, ctx, e)) ||
        (rc = json_opt_str(it, "source_for", &f->src_for, NULL, ctx, e)))
        return rc;
    if ((rc = fetch_check_relpath(f->path, "path", e))) { err_prefix(e, "%s", ctx); return rc; }
    if (f->sha && !fetch_is_hex64(f->sha)) return err_set(e, ERR_FORMAT, "%s: sha256 '%s': expected 64 hex digits", ctx, f->sha);
    if (f->url && strncmp(f->url, "https://", 8) && strncmp(f->url, "http://", 7))
        return err_set(e, ERR_FORMAT, "%s: url '%s': expected http(s)", ctx, f->url);
    const char *sys = f->sys;
    if (sys && (sys[0] != '/' || strstr(sys, "/../") || strstr(sys, "/./")))
        return err_set(e, ERR_FORMAT, "%s: system_path '%s': expected a clean absolute path", ctx, sys);
    if (f->arch) {
        for (int i = 0; i < p->n; i++)
            if (p->v[i].is_archive && !strcmp(p->v[i].member, f->arch)) f->ai = i + 1;
        if (!f->ai) return err_set(e, ERR_FORMAT, "%s: archive '%s' is not in 'archives'", ctx, f->arch);
        if (!f->member) return err_set(e, ERR_FORMAT, "%s: 'archive' needs 'member'", ctx);
        if ((rc = fetch_check_relpath(f->member, "member", e))) { err_prefix(e, "%s", ctx); return rc; }
    }
    if (!f->url && !f->ai && !f->manual && !top_manual)
        return err_set(e, ERR_FORMAT, "%s: needs 'url', 'archive' or 'manual'", ctx);
    return 0;
}

// Adds a validated files[] entry. It counts as present when its destination, one of its
// alt_paths, or (source_for) the earlier file it only serves to make is there.
static int plan_task_file(struct fetch_plan *p, const struct task_file *f, const char *ctx, const char *top_manual,
                          struct err *e) {
    struct fetch_entry *x = plan_add(p, e);
    if (!x) return ERR_NOMEM;
    const char *man_txt = f->manual ? f->manual : top_manual;
    x->rel = str_dup(f->path);
    x->dest = f->sys ? str_dup(f->sys) : fmt_dup("%s/%s", p->root, f->path);
    x->url = f->url ? str_dup(f->url) : NULL;
    x->manual = man_txt ? str_dup(man_txt) : NULL;
    x->member = f->member ? str_dup(f->member) : NULL;
    x->archive = f->ai;
    x->system = f->sys != NULL;
    x->size = f->size;
    if (f->sha) snprintf(x->sha256, sizeof x->sha256, "%s", f->sha);
    if (!x->rel || !x->dest || (f->url && !x->url) || (man_txt && !x->manual) || (f->member && !x->member))
        return err_set(e, ERR_NOMEM, "fetch: out of memory");
    x->present = f->sys ? (file_exists(x->dest) || dir_exists(x->dest)) : file_exists(x->dest);
    const cJSON *a;
    if (f->alts) cJSON_ArrayForEach(a, f->alts) {
        char ap[PATH_MAX_ + 8];
        if (!cJSON_IsString(a) || fetch_check_relpath(a->valuestring, "alt_paths", e))
            return err_set(e, ERR_FORMAT, "%s: alt_paths: bad entry %s", ctx, json_brief(a));
        snprintf(ap, sizeof ap, "%s/%s", p->root, a->valuestring);
        if (file_exists(ap)) x->present = 1;
    }
    if (f->src_for) { // only needed to make an earlier-listed file that is missing
        int found = 0;
        for (int i = 0; i < p->n - 1; i++)
            if (!strcmp(p->v[i].rel, f->src_for)) { found = 1; if (p->v[i].present) x->present = 1; }
        if (!found) return err_set(e, ERR_FORMAT, "%s: source_for '%s': no earlier file with that path", ctx, f->src_for);
    }
    return 0;
}

int fetch_plan_task(struct fetch_plan *p, const char *task, struct err *e) {
    memset(p, 0, sizeof *p);
    char man[PATH_MAX_];
    int rc = task_manifest(man, sizeof man, task, e);
    if (rc) return rc;
    char *txt = NULL;
    size_t len = 0;
    if ((rc = file_read_all(man, &txt, &len, e))) return rc;
    rc = fetch_plan_task_mem(p, task, txt, len, man, e);
    free(txt);
    return rc;
}

int fetch_plan_task_mem(struct fetch_plan *p, const char *task, const char *json, size_t len, const char *man,
                        struct err *e) {
    memset(p, 0, sizeof *p);
    char cache[PATH_MAX_];
    int rc;
    if ((rc = paths_cache(cache, sizeof cache, e))) return rc;
    if (snprintf(p->root, sizeof p->root, "%s/datasets", cache) >= (int)sizeof p->root)
        return err_set(e, ERR_RANGE, "cache path too long");
    snprintf(p->title, sizeof p->title, "task %s", task);
    cJSON *j = NULL;
    if ((rc = json_parse(&j, json, len, man, e))) return rc;
    const cJSON *files, *it;
    const char *top_manual = NULL;
    if ((rc = json_need_arr(j, "files", &files, man, e)) || (rc = json_opt_str(j, "manual", &top_manual, NULL, man, e)))
        goto fail;
    const char *lic = NULL;
    if ((rc = json_opt_str(j, "license", &lic, NULL, man, e))) goto fail;
    snprintf(p->license, sizeof p->license, "%s", lic ? lic : "license not recorded");
    const cJSON *archives = NULL;
    if ((rc = json_opt_arr(j, "archives", &archives, man, e))) goto fail;
    int k = 0;
    if (archives) cJSON_ArrayForEach(it, archives) {
        char ctx[PATH_MAX_ + 32];
        snprintf(ctx, sizeof ctx, "%s: archives[%d]", man, k++);
        if ((rc = plan_archive(p, it, ctx, e))) goto fail;
    }
    k = 0;
    cJSON_ArrayForEach(it, files) {
        char ctx[PATH_MAX_ + 32];
        snprintf(ctx, sizeof ctx, "%s: files[%d]", man, k++);
        struct task_file f;
        if ((rc = read_task_file(&f, p, it, ctx, top_manual, e)) || (rc = plan_task_file(p, &f, ctx, top_manual, e)))
            goto fail;
    }
    if (p->n == 0) { rc = err_set(e, ERR_FORMAT, "%s: field 'files' is empty", man); goto fail; }
    cJSON_Delete(j);
    return 0;
fail:
    cJSON_Delete(j);
    fetch_plan_free(p);
    return rc;
}

// Replaces the plan's shard entries by the index's list (after the index was fetched).
static int replan_shards(struct fetch_plan *p, struct err *e) {
    char ipath[PATH_MAX_];
    if (snprintf(ipath, sizeof ipath, "%s/%s", p->root, p->index_rel) >= (int)sizeof ipath)
        return err_set(e, ERR_RANGE, "path too long");
    cJSON *names = NULL;
    int rc = fetch_index_shards(ipath, &names, e);
    if (rc) return rc;
    int n_old = 0, w = 0;
    for (int i = 0; i < p->n; i++) {
        struct fetch_entry *x = &p->v[i];
        if (x->shard) {
            int in_index = 0;
            const cJSON *s;
            cJSON_ArrayForEach(s, names) if (!strcmp(s->valuestring, x->rel)) in_index = 1;
            if (!in_index) log_warn("%s: config lists shard %s, the index does not; skipping it", p->title, x->rel);
            n_old++;
            free(x->url); free(x->dest); free(x->rel); free(x->manual); free(x->member);
            continue;
        }
        p->v[w++] = *x;
    }
    p->n = w;
    const cJSON *s;
    int n_new = 0;
    cJSON_ArrayForEach(s, names) {
        if ((rc = plan_add_hub(p, s->valuestring, HUB_SHARD, e))) break;
        n_new++;
    }
    cJSON_Delete(names);
    if (!rc && n_old && n_old != n_new)
        log_warn("%s: the index lists %d shards, the config %d; using the index", p->title, n_new, n_old);
    p->shards_from_index = 1;
    return rc;
}

static int run_entry(struct fetch_plan *p, struct fetch_entry *x, const struct fetch_opts *o, struct err *e) {
    (void)p;
    if (x->present || file_exists(x->dest)) { x->present = 1; return 0; }
    struct fetch_result r;
    int rc = fetch_url(x->url, x->dest, (struct fetch_expect){x->size, x->sha256[0] ? x->sha256 : NULL},
                       x->use_token ? FETCH_HF_TOKEN : FETCH_ANONYMOUS, o, &r, e);
    if (rc == ERR_NOTFOUND && x->optional) {
        log_warn("%s (optional) is not in the repository: %s", x->rel, e ? e->msg : "");
        return 0;
    }
    if (rc) return rc;
    x->present = 1;
    return 0;
}

// Lists the entries that are still missing (manual steps, or everything when offline).
static int report_missing(struct fetch_plan *p, int offline, struct err *e) {
    int missing = 0;
    size_t l = 0;
    char list[700] = "";
    const char *first_manual = NULL;
    for (int i = 0; i < p->n; i++) {
        struct fetch_entry *x = &p->v[i];
        if (x->is_archive || x->present) continue;
        if (x->system ? (file_exists(x->dest) || dir_exists(x->dest)) : file_exists(x->dest)) { x->present = 1; continue; }
        if (x->optional) { log_info("optional %s not in the cache", x->rel); continue; }
        missing++;
        if (x->manual && !x->url && !x->archive) {
            if (!first_manual) first_manual = x->manual;
            log_warn("missing %s (expected at %s): %s", x->rel, x->dest, x->manual);
        } else {
            log_warn("%smissing %s (expected at %s)", offline ? "offline: " : "", x->rel, x->dest);
        }
        if (l < sizeof list - 80)
            l += (size_t)snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", x->system ? x->dest : x->rel);
    }
    if (!missing) return 0;
    return err_set(e, ERR_NOTFOUND, "%s%d file%s missing for %s under %s: %s%s%s%s%s", offline ? "offline: " : "",
                   missing, missing > 1 ? "s" : "", p->title, p->root, list, l >= sizeof list - 80 ? ", ..." : "",
                   first_manual ? "; to obtain: " : "", first_manual ? first_manual : "",
                   offline && !first_manual ? "; fetch them with `hifa4-eval download` on a networked machine and copy the cache" : "");
}

int fetch_plan_run(struct fetch_plan *p, const struct fetch_opts *o, struct err *e) {
    int rc;
    // Never touch the network offline: for a model the cached index already chose the shards.
    if (o->offline) return report_missing(p, 1, e);
    int is_model = p->url_base[0] != 0;
    for (int i = 0; i < p->n; i++) {
        struct fetch_entry *x = &p->v[i];
        if (x->shard || x->is_archive || !x->url) continue;
        if ((rc = run_entry(p, x, o, e))) return rc;
    }
    if (is_model && p->index_rel[0]) {
        if ((rc = replan_shards(p, e))) return rc;
    } else if (is_model) {
        int has_shard = 0;
        for (int i = 0; i < p->n; i++) has_shard |= p->v[i].shard;
        if (!has_shard) log_warn("%s: no index and no shards configured", p->title);
    }
    for (int i = 0; i < p->n; i++) {
        if (!p->v[i].shard) continue;
        if ((rc = run_entry(p, &p->v[i], o, e))) return rc;
    }
    for (int i = 0; i < p->n; i++) {
        if (!p->v[i].is_archive) continue;
        int need = 0;
        for (int k = 0; k < p->n; k++)
            if (p->v[k].archive == i + 1 && !p->v[k].present && !file_exists(p->v[k].dest)) need = 1;
            else if (p->v[k].archive == i + 1) p->v[k].present = 1;
        if (!need) continue;
        if ((rc = run_entry(p, &p->v[i], o, e))) return rc;
        if ((rc = fetch_tar_extract(p, i, e))) return rc;
    }
    return report_missing(p, 0, e);
}

// ---- API for the evaluation ----
int fetch_task_data(const char *task, int offline, char *root, size_t n, struct err *e) {
    struct fetch_opts o;
    fetch_opts_init(&o, offline);
    struct fetch_plan p;
    int rc = fetch_plan_task(&p, task, e);
    if (rc) return rc;
    rc = fetch_plan_run(&p, &o, e);
    if (!rc) {
        if (strlen(p.root) + 1 > n) rc = err_set(e, ERR_RANGE, "data root too long: %.100s", p.root);
        else memcpy(root, p.root, strlen(p.root) + 1);
    }
    fetch_plan_free(&p);
    return rc;
}
