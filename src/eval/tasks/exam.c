// exam.c: real licence-exam question pools from the Debian packages hamexam (US amateur radio:
// /usr/share/hamexam/{E,G,T}) and fccexam (FCC commercial radio operator: /usr/share/fccexam/E*),
// scored with the MMLU template (spec/tasks.md section 2), subject "amateur radio" /
// "radio operation", choices "A".."D", gold the key.
// One file per question: line 1 `ID (KEY) [ref]` (hamexam) or `ID KEY` (fccexam), line 2 the
// question, then the lines `A. ...` .. `D. ...` (question and option text stripped).
// Questions that need a figure ("Figure E5-2", "figure T1", "Fig. 8A2": the word fig/figure
// followed by a label with a digit, in the question or an option) are dropped, and so are
// repeated questions (same stripped question text; the first in canonical order is kept).
// Pools are read from exam/hamexam and exam/fccexam under a data root when present, else from
// /usr/share. Canonical order: hamexam then fccexam, pool directories by name, files by name; id
// "<package>/<pool>/<file>". --task-file DIR reads one package root (subdirectories are pools) or
// one pool directory (files are questions); "fccexam" in the path selects "radio operation".
#include <dirent.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/tasks/task.h"

struct names { char **v; int n, cap; };

static void names_free(struct names *s) {
    for (int i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// Sorted entries of dir that are directories (want_dir) or regular files; names starting with
// '.' skipped, and pool directories named "*pngs" (hamexam's figure images) skipped.
static int list_dir(struct names *out, const char *dir, int want_dir, struct err *e) {
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d) return err_set(e, ERR_IO, "exam: cannot open directory %s", dir);
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d)) && !rc) {
        if (de->d_name[0] == '.') continue;
        char p[4096];
        if (path_join(p, sizeof p, dir, de->d_name, NULL)) continue;
        if (want_dir ? !dir_exists(p) || str_ends_with(de->d_name, "pngs") : !file_exists(p)) continue;
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 64;
            char **nv = realloc(out->v, (size_t)out->cap * sizeof *nv);
            if (!nv) { rc = ERR_NOMEM; break; }
            out->v = nv;
        }
        if (!(out->v[out->n] = str_dup(de->d_name))) { rc = ERR_NOMEM; break; }
        out->n++;
    }
    closedir(d);
    if (rc) { names_free(out); return err_set(e, rc, "exam: %s: out of memory", dir); }
    if (out->n > 1) qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_str); // v is NULL for an empty dir (fuzz_task_text)
    return 0;
}

// 1 if s mentions a figure: \bfig(ure)?\.? ?[A-Za-z]*[0-9] (case-insensitive).
int task_exam_needs_figure(const char *s) {
    for (const char *p = s; *p; p++) {
        if (p > s && ((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9') || p[-1] == '_'))
            continue;
        if (strncasecmp(p, "fig", 3) != 0) continue;
        const char *q = p + 3;
        if (strncasecmp(q, "ure", 3) == 0) q += 3;
        if (*q == '.') q++;
        if (*q == ' ') q++;
        while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')) q++;
        if (*q >= '0' && *q <= '9') return 1;
    }
    return 0;
}

struct seen { char **v; int n, cap; };

static int seen_has(const struct seen *s, const char *q) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i], q) == 0) return 1;
    return 0;
}

struct exam_stats { int files, figures, dups; };

// One load in progress: the set it fills under its options, the questions seen so far, the
// counts, and the subject of the package being read.
struct exam_load {
    struct task_set *s;
    const struct task_opts *o;
    struct seen seen;
    struct exam_stats st;
    const char *subject;
};

// Parses one question file and pushes it unless it needs a figure or repeats a question.
static int load_question(struct exam_load *L, const char *path, const char *id, struct err *e) {
    struct task_set *s = L->s;
    const struct task_opts *o = L->o;
    struct seen *seen = &L->seen;
    struct exam_stats *st = &L->st;
    const char *subject = L->subject;
    char *buf = NULL;
    size_t len = 0;
    int rc = file_read_all(path, &buf, &len, e);
    if (rc) return rc;
    st->files++;
    char *lines[8] = {0};
    int n = 0;
    const char *p = buf, *end = buf + len;
    while (p < end && n < 8) {
        size_t ll = task_line_len(p, end);
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!(lines[n] = task_strip(p, ll))) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto done; }
        n++;
        p = nl ? nl + 1 : end;
    }
    while (n > 0 && lines[n - 1][0] == 0) free(lines[--n]);  // trailing blank lines
    // key: "(X)" in the header (hamexam) or the second token (fccexam)
    int key = -1;
    if (n >= 1) {
        const char *h = lines[0], *par = strchr(h, '(');
        if (par && par[1] >= 'A' && par[1] <= 'D' && par[2] == ')') key = par[1] - 'A';
        else {
            const char *sp = strchr(h, ' ');
            while (sp && *sp == ' ') sp++;
            // "3-14B1 B)" occurs 3 times in fccexam: accept a stray ')'
            if (sp && sp[0] >= 'A' && sp[0] <= 'D' && (sp[1] == 0 || sp[1] == ' ' || (sp[1] == ')' && sp[2] == 0)))
                key = sp[0] - 'A';
        }
    }
    if (n != 6 || key < 0 || !utf8_valid(buf, len)) {
        rc = task_bad_row(s, o, e, path, 1, n != 6 ? "expected 6 lines (header, question, A.-D.), got %d"
                                                   : key < 0 ? "header has no answer key A-D (%d lines)"
                                                             : "not valid UTF-8 (%d lines)", n);
        goto done;
    }
    const char *ch[4];
    for (int k = 0; k < 4; k++) {
        const char *l = lines[2 + k];
        if (l[0] != 'A' + k || l[1] != '.') {
            rc = task_bad_row(s, o, e, path, 3 + k, "expected a line starting with '%c.'", 'A' + k);
            goto done;
        }
        const char *t = l + 2;
        while (*t == ' ' || *t == '\t') t++;
        ch[k] = t;
    }
    int fig = task_exam_needs_figure(lines[1]);
    for (int k = 0; k < 4; k++) fig |= task_exam_needs_figure(ch[k]);
    if (fig) { st->figures++; goto done; }
    if (seen_has(seen, lines[1])) { st->dups++; goto done; }
    if (seen->n == seen->cap) {
        seen->cap = seen->cap ? seen->cap * 2 : 1024;
        char **nv = realloc(seen->v, (size_t)seen->cap * sizeof *nv);
        if (!nv) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto done; }
        seen->v = nv;
    }
    if (!(seen->v[seen->n] = str_dup(lines[1]))) { rc = err_set(e, ERR_NOMEM, "%s: out of memory", path); goto done; }
    seen->n++;
    if (task_push_item_own(s, id, subject, task_mmlu_prompt(subject, lines[1], ch, 4), NULL, 4, key))
        rc = err_set(e, ERR_NOMEM, "%s: out of memory", path);
done:
    for (int k = 0; k < n; k++) free(lines[k]);
    free(buf);
    return rc;
}

// Reads the pool directory `dir` (files = questions); id prefix "<pkg>/<pool>".
static int load_pool(struct exam_load *L, const char *dir, const char *prefix, struct err *e) {
    struct names f;
    int rc = list_dir(&f, dir, 0, e);
    for (int i = 0; i < f.n && !rc; i++) {
        char path[4400], id[512];
        if ((rc = path_join(path, sizeof path, dir, f.v[i], e))) break;
        snprintf(id, sizeof id, "%s/%s", prefix, f.v[i]);
        rc = load_question(L, path, id, e);
    }
    names_free(&f);
    return rc;
}

// A package root: every subdirectory is a pool.
static int load_root(struct exam_load *L, const char *root, const char *pkg, struct err *e) {
    struct names d;
    int rc = list_dir(&d, root, 1, e);
    for (int i = 0; i < d.n && !rc; i++) {
        char dir[4400], prefix[512];
        if ((rc = path_join(dir, sizeof dir, root, d.v[i], e))) break;
        snprintf(prefix, sizeof prefix, "%s/%s", pkg, d.v[i]);
        rc = load_pool(L, dir, prefix, e);
    }
    names_free(&d);
    return rc;
}

int task_load_exam(struct task_set *s, const struct task_opts *o, struct err *e) {
    task_set_begin(s, "exam", TASK_METRIC_ACC, "mmlu-template-exam-v1", o);
    struct exam_load L = {.s = s, .o = o};
    int rc = 0;
    if (o->file) {
        const char *subject = strstr(o->file, "fccexam") ? "radio operation" : "amateur radio";
        if (!dir_exists(o->file)) return err_set(e, ERR_NOTFOUND, "exam: --task-file %s: expected a question-pool directory", o->file);
        struct names sub;
        if ((rc = list_dir(&sub, o->file, 1, e))) return rc;
        const char *base = strrchr(o->file, '/');
        base = base && base[1] ? base + 1 : o->file;
        L.subject = subject;
        rc = sub.n ? load_root(&L, o->file, base, e) : load_pool(&L, o->file, base, e);
        names_free(&sub);
        if (!rc) task_source_add(s, "%s (%s)", o->file, subject);
    } else {
        static const char *const sys[2] = {"/usr/share/hamexam", "/usr/share/fccexam"};
        static const char *const rels[2] = {"exam/hamexam", "exam/fccexam"};
        static const char *const pkgs[2] = {"hamexam", "fccexam"};
        static const char *const subj[2] = {"amateur radio", "radio operation"};
        for (int i = 0; i < 2 && !rc; i++) {
            // a copy under a data root (exam/<pkg>, manifest datasets/exam.json) wins over the
            // installed package
            char root[4096];
            if (!task_data_try(root, sizeof root, o, rels[i], 1)) {
                if (!dir_exists(sys[i])) {
                    rc = err_set(e, ERR_NOTFOUND, "exam: question pool %s not found (nor %s under a data root); install "
                                 "the Debian packages: apt-get install hamexam fccexam (or pass --task-file POOL_DIR)",
                                 sys[i], rels[i]);
                    break;
                }
                snprintf(root, sizeof root, "%s", sys[i]);
            }
            L.subject = subj[i];
            rc = load_root(&L, root, pkgs[i], e);
            if (!rc) task_source_add(s, "%s (Debian %s, subject \"%s\")", root, pkgs[i], subj[i]);
        }
    }
    for (int i = 0; i < L.seen.n; i++) free(L.seen.v[i]);
    free(L.seen.v);
    if (rc) return rc;
    task_source_add(s, "%d question files, %d dropped (need a figure), %d dropped (repeated question)",
                    L.st.files, L.st.figures, L.st.dups);
    task_apply_limit(s, o);
    return 0;
}
