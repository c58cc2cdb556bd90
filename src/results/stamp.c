// stamp.c: the stamp frame of a samples file and the resume command of a run (see stamp.h).
#include "results/stamp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json_util.h"
#include "results/results.h"

#define STAMP_MAGIC 0x184D2A5Eu // a zstd skippable frame (0x184D2A50..5F), ours: nibble E
#define STAMP_MAX 4096u         // payload bytes a stamp may have

static uint32_t le32(const char *p) {
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

static void put_le32(char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (char)(v >> (8 * i));
}

// The shell word for a: as is when only safe characters, else in single quotes.
static int shell_word(char *out, size_t n, const char *a) {
    int safe = *a != 0;
    for (const char *p = a; *p && safe; p++) safe = strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:=,+@%", *p) != NULL;
    size_t k = 0;
    if (safe) return snprintf(out, n, "%s", a) < (int)n ? (int)strlen(a) : -1;
    if (n < 3) return -1;
    out[k++] = '\'';
    for (const char *p = a; *p; p++) {
        const char *piece = *p == '\'' ? "'\\''" : NULL;
        size_t pl = piece ? 4 : 1;
        if (k + pl + 2 > n) return -1;
        if (piece) memcpy(out + k, piece, pl);
        else out[k] = *p;
        k += pl;
    }
    out[k++] = '\'';
    out[k] = 0;
    return (int)k;
}

int results_resume_command(char *out, size_t n, const cJSON *run) {
    size_t k = 0;
    int has_resume = 0, rc = 0;
    const cJSON *a, *cmd = cJSON_GetObjectItemCaseSensitive(run, "command");
    out[0] = 0;
    if (!cJSON_IsArray(cmd) || cJSON_GetArraySize(cmd) == 0) return -1;
    k = (size_t)snprintf(out, n, "hifa4-eval");
    cJSON_ArrayForEach(a, cmd) {
        if (!cJSON_IsString(a)) { rc = -1; break; }
        has_resume |= !strcmp(a->valuestring, "--resume");
        if (k + 2 >= n) { rc = -1; break; }
        out[k++] = ' ';
        int w = shell_word(out + k, n - k, a->valuestring);
        if (w < 0) { rc = -1; break; }
        k += (size_t)w;
    }
    if (!rc && !has_resume && k + 10 < n) snprintf(out + k, n - k, " --resume");
    else if (!rc && !has_resume) rc = -1;
    if (rc) out[0] = 0;
    return rc;
}

// "<mode>@r<k>" with k >= 1 digits (results/noise.h): a replica's samples file.
static int is_replica_mode(const char *mode) {
    const char *at = strrchr(mode, '@');
    if (!at || at[1] != 'r' || !at[2]) return 0;
    for (const char *p = at + 2; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return 1;
}

// The key a samples file of mode carries. Replica 0 (the mode's own file) computed exactly what
// a run without --replicas computes, so it carries that run's key - the configuration key
// without the "replicas" record - and is byte-identical to the plain run's file;
// a replica r >= 1 file carries the whole key, K and the seed included.
static void stamp_key(char out[65], const cJSON *run, const char *mode) {
    const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(run, "resume_key"));
    out[0] = 0;
    if (!k) return;
    snprintf(out, 65, "%s", k);
    if (!cJSON_GetObjectItemCaseSensitive(run, "replicas") || is_replica_mode(mode)) return;
    cJSON *plain = cJSON_Duplicate(run, 1);
    if (!plain) return; // out of memory: the whole key, which a replica-0 file then fails loudly
    cJSON_DeleteItemFromObjectCaseSensitive(plain, "replicas");
    results_config_key(out, plain, 1);
    cJSON_Delete(plain);
}

void results_stamp_expect(struct results_stamp *st, const cJSON *run, const char *dir, const char *task, const char *mode) {
    memset(st, 0, sizeof *st);
    snprintf(st->task, sizeof st->task, "%s", task);
    snprintf(st->mode, sizeof st->mode, "%s", mode);
    const char *h = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(run, "model"), "hash"));
    stamp_key(st->key, run, mode);
    if (h) snprintf(st->model, sizeof st->model, "%s", h);
    char cmd[1000], path[4096], word[600];
    struct err e = {0};
    if (results_resume_command(cmd, sizeof cmd, run) == 0 && results_samples_path(path, sizeof path, dir, task, mode, &e) == 0 &&
        shell_word(word, sizeof word, path) > 0)
        snprintf(st->fix, sizeof st->fix, "remove it and re-score it: `rm %s && %s`", word, cmd);
    else
        snprintf(st->fix, sizeof st->fix, "remove it and re-score it with the `run` command of %s/run.json plus --resume", dir);
}

int results_stamp_frame(const struct results_stamp *st, char **buf, size_t *n, struct err *e) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "hifa4_samples", 1);
    cJSON_AddStringToObject(j, "task", st->task);
    cJSON_AddStringToObject(j, "mode", st->mode);
    cJSON_AddStringToObject(j, "config_key", st->key);
    cJSON_AddStringToObject(j, "model_hash", st->model);
    char *t = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!t) return err_set(e, ERR_NOMEM, "samples stamp: out of memory");
    size_t tl = strlen(t);
    char *b = malloc(8 + tl);
    if (!b) { free(t); return err_set(e, ERR_NOMEM, "samples stamp: out of memory"); }
    put_le32(b, STAMP_MAGIC);
    put_le32(b + 4, (uint32_t)tl);
    memcpy(b + 8, t, tl);
    free(t);
    *buf = b;
    *n = 8 + tl;
    return 0;
}

size_t results_stamp_size(const char *raw, size_t len) {
    if (len < 8 || le32(raw) != STAMP_MAGIC) return 0;
    const uint32_t pl = le32(raw + 4);
    return pl <= STAMP_MAX && pl <= len - 8 ? 8 + (size_t)pl : 0;
}

static const char *brief(const char *h) { return h[0] ? h : "(none)"; }

int results_stamp_check(const char *path, const char *raw, size_t len, const struct results_stamp *want, struct err *e) {
    if (len < 8 || le32(raw) != STAMP_MAGIC) return 0; // no stamp: a file written before stamps
    const size_t n = results_stamp_size(raw, len);
    if (!n) return err_set(e, ERR_FORMAT, "%s: malformed samples stamp (its size is %u bytes)", path, le32(raw + 4));
    cJSON *j = NULL;
    int rc = json_parse(&j, raw + 8, n - 8, path, e);
    if (rc) return err_prefix(e, "samples stamp");
    const char *f[4] = {"task", "mode", "config_key", "model_hash"}, *v[4];
    const char *w[4] = {want->task, want->mode, want->key, want->model};
    for (int i = 0; i < 4; i++) v[i] = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, f[i]));
    for (int i = 0; i < 4 && !rc; i++) {
        if (!v[i]) rc = err_set(e, ERR_FORMAT, "%s: samples stamp without field '%s'", path, f[i]);
        else if (w[i][0] && v[i][0] && strcmp(v[i], w[i]))
            rc = err_set(e, ERR_MISMATCH, "%s is not a file of this run: its stamp says %s %.16s, this run's is %.16s (%s): "
                         "it was copied or renamed from another run, task or mode; %s", path, f[i], brief(v[i]), brief(w[i]),
                         i < 2 ? "from its name" : i == 2 ? "run.json resume_key" : "run.json model.hash", want->fix);
    }
    cJSON_Delete(j);
    return rc;
}

int results_stamp_check_file(const char *path, const struct results_stamp *want, struct err *e) {
    if (!file_exists(path)) return 0;
    int fd, rc = file_open_regular(path, &fd, e);
    if (rc) return rc;
    char *b = malloc(8 + STAMP_MAX);
    FILE *f = b ? fdopen(fd, "rb") : NULL;
    if (!f) {
        free(b);
        close(fd);
        return err_set(e, ERR_NOMEM, "%s: out of memory", path);
    }
    size_t n = fread(b, 1, 8 + STAMP_MAX, f);
    fclose(f);
    rc = results_stamp_check(path, b, n, want, e);
    free(b);
    return rc;
}
