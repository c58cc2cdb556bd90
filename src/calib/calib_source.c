// calib_source.c: calibration text sources and sample cutting (see calib_source.h).
#include "calib/calib_source.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/json_util.h"
#include "base/paths.h"
#include "base/sha256.h"

// Path components / file names that hold evaluation splits of our tasks (spec/tasks.md).
static const struct {
    const char *needle, *task;
} eval_marks[] = {
    {"/mmlu/", "mmlu"}, {"_test.csv", "mmlu"}, {"hellaswag", "hellaswag"}, {"/arc/", "arc_challenge/arc_easy"},
    {"ARC-", "arc_challenge/arc_easy"}, {"truthfulqa", "truthfulqa_mc1"}, {"mc_task.json", "truthfulqa_mc1"},
    {"/bbh/", "bbh"}, {"wikitext", "ppl"}, {"wiki.test", "ppl"}, {"gpqa", "gpqa_diamond"},
    {"hamexam", "exam"}, {"fccexam", "exam"}, {"/wordnet/", "wordnet"},
};

int calib_source_is_eval(const char *path, const char **task) {
    // match on the resolved path with a trailing '/', so a directory such as datasets/mmlu
    // is caught by the same "/mmlu/" mark as the files below it
    char real[PATH_MAX], buf[PATH_MAX + 2];
    snprintf(buf, sizeof buf, "%s/", realpath(path, real) ? real : path);
    const char *p = buf;
    for (size_t i = 0; i < sizeof eval_marks / sizeof eval_marks[0]; i++)
        if (strstr(p, eval_marks[i].needle)) {
            if (task) *task = eval_marks[i].task;
            return 1;
        }
    return 0;
}

// Content check: the sha256 of a source's (decompressed) text against every file of the task
// manifests in <home>/datasets (and datasets/ppl), so a copy of evaluation data under another
// name is refused too. brown.json is the calibration corpus and is skipped. Returns 1 and the
// task name (static storage) on a match.
static int manifest_match(const char *dir, const char *hex, char *task, size_t n) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *de;
    int hit = 0;
    while (!hit && (de = readdir(d))) {
        if (!str_ends_with(de->d_name, ".json") || !strcmp(de->d_name, "brown.json")) continue;
        char p[4400];
        struct err e = {0};
        cJSON *j = NULL;
        if (path_join(p, sizeof p, dir, de->d_name, &e) || json_parse_file(&j, p, &e)) continue;
        const cJSON *files = cJSON_GetObjectItemCaseSensitive(j, "files"), *f;
        const cJSON *tk = cJSON_GetObjectItemCaseSensitive(j, "task");
        cJSON_ArrayForEach(f, files) {
            const cJSON *h = cJSON_GetObjectItemCaseSensitive(f, "sha256");
            if (cJSON_IsString(h) && !strcmp(h->valuestring, hex)) {
                snprintf(task, n, "%.200s", cJSON_IsString(tk) ? tk->valuestring : de->d_name);
                hit = 1;
                break;
            }
        }
        cJSON_Delete(j);
    }
    closedir(d);
    return hit;
}

static int content_is_eval(const char *text, size_t len, char *task, size_t n) {
    char home[3072], dir[3300], hex[65];
    struct err e = {0};
    if (paths_home(home, sizeof home, &e)) return 0;
    sha256_hex(text, len, hex);
    snprintf(dir, sizeof dir, "%s/datasets", home);
    if (manifest_match(dir, hex, task, n)) return 1;
    snprintf(dir, sizeof dir, "%s/datasets/ppl", home);
    return manifest_match(dir, hex, task, n);
}

static int refuse_content(const char *path, const char *text, size_t len, int force, struct err *e) {
    char task[256];
    if (force || !content_is_eval(text, len, task, sizeof task)) return 0;
    return err_set(e, ERR_USAGE,
                   "--calib %s: its content is evaluation data of task '%s' (sha256 listed in datasets/); "
                   "calibrating on it leaks the test set (use --force to do it anyway)", path, task);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int append(char **buf, size_t *len, size_t *cap, const char *s, size_t n, struct err *e) {
    if (*len + n + 2 > *cap) {
        size_t nc = (*len + n + 2) * 2;
        char *nb = realloc(*buf, nc);
        if (!nb) return err_set(e, ERR_NOMEM, "calibration source: out of memory");
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
    return 0;
}

int calib_source_read(const char *path, int force, char **text, size_t *len, char *desc, size_t n_desc,
                      struct err *e) {
    *text = NULL;
    *len = 0;
    const char *task = NULL;
    if (!force && calib_source_is_eval(path, &task))
        return err_set(e, ERR_USAGE,
                       "--calib %s: this is evaluation data of task '%s'; calibrating on it leaks the test set "
                       "(use --force to do it anyway)", path, task);
    if (!dir_exists(path)) {
        int rc = file_read_all(path, text, len, e);
        if (rc) return err_prefix(e, "--calib");
        if ((rc = refuse_content(path, *text, *len, force, e))) {
            free(*text);
            *text = NULL;
            return rc;
        }
        snprintf(desc, n_desc, "%s (%zu bytes)", path, *len);
        return 0;
    }
    DIR *d = opendir(path);
    if (!d) return err_set(e, ERR_IO, "--calib %s: cannot open directory", path);
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        const char *nm = de->d_name, *dot = strchr(nm, '.');
        if (dot && !str_ends_with(nm, ".txt") && !str_ends_with(nm, ".zst")) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, (size_t)cap * sizeof *nn);
            if (!nn) { rc = err_set(e, ERR_NOMEM, "out of memory"); break; }
            names = nn;
        }
        if (!(names[n] = str_dup(nm))) { rc = err_set(e, ERR_NOMEM, "out of memory"); break; }
        n++;
    }
    closedir(d);
    if (!rc && n > 1) qsort(names, (size_t)n, sizeof *names, cmp_str);
    char *buf = NULL;
    size_t blen = 0, bcap = 0;
    int used = 0;
    for (int i = 0; i < n && !rc; i++) {
        char p[4096];
        if ((rc = path_join(p, sizeof p, path, names[i], e))) break;
        if (!file_exists(p)) continue;
        char *t;
        size_t tl;
        if ((rc = file_read_all(p, &t, &tl, e))) break;
        if ((rc = refuse_content(p, t, tl, force, e))) { free(t); break; }
        if (used) rc = append(&buf, &blen, &bcap, "\n", 1, e);
        if (!rc) rc = append(&buf, &blen, &bcap, t, tl, e);
        free(t);
        used++;
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (!rc && !used) rc = err_set(e, ERR_NOTFOUND, "--calib %s: no text files in directory", path);
    if (rc) { free(buf); return rc; }
    *text = buf;
    *len = blen;
    snprintf(desc, n_desc, "%s (%d files, %zu bytes)", path, used, blen);
    return 0;
}

static uint64_t xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 2685821657736338717ull;
}

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

int calib_make_samples(const int32_t *ids, int n_ids, struct calib_cut cut, struct calib_samples *out,
                       struct err *e) {
    out->ids = NULL;
    out->n = 0;
    const int len = cut.len, samples = cut.samples, bos = cut.bos;
    const uint64_t seed = cut.seed;
    if (len < 2 || samples < 1) return err_set(e, ERR_USAGE, "--calib-len must be >= 2 and --calib-samples >= 1");
    int body = bos >= 0 ? len - 1 : len;
    int n_chunks = n_ids / body;
    if (n_chunks < 1)
        return err_set(e, ERR_RANGE, "calibration source has %d tokens, fewer than one sample of %d", n_ids, len);
    int take = n_chunks < samples ? n_chunks : samples;
    int *idx = malloc((size_t)n_chunks * sizeof *idx);
    int32_t *o = malloc((size_t)take * len * sizeof *o);
    if (!idx || !o) { free(idx); free(o); return err_set(e, ERR_NOMEM, "calibration samples: out of memory"); }
    for (int i = 0; i < n_chunks; i++) idx[i] = i;
    if (take < n_chunks) {
        uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
        if (!s) s = 1;
        for (int i = 0; i < take; i++) {
            int j = i + (int)(xorshift(&s) % (uint64_t)(n_chunks - i));
            int t = idx[i]; idx[i] = idx[j]; idx[j] = t;
        }
        qsort(idx, (size_t)take, sizeof *idx, cmp_int);
    }
    for (int i = 0; i < take; i++) {
        int32_t *dst = o + (size_t)i * len;
        int k = 0;
        if (bos >= 0) dst[k++] = bos;
        memcpy(dst + k, ids + (size_t)idx[i] * body, (size_t)body * sizeof *dst);
    }
    free(idx);
    out->ids = o;
    out->n = take;
    return 0;
}
