// wordnet.c: "wordnet", an offline multiple-choice task built from Princeton WordNet 3.0's noun
// files (Debian package wordnet-base: /usr/share/wordnet; or wordnet/ under a data root; or
// --task-file DICT_DIR). It exists so that a machine with no benchmark download still has a
// task on which small models answer well above chance (SmolLM2-135M: ~75%), which the exam
// pools are not. Template "wordnet-gloss-v1", scored as ARC is (lm-eval's protocol):
//   context  "Question: What word is defined as: " + GLOSS + "?\nAnswer:"
//   choices  four nouns (the defined word and three others), continuation " " + word.
// Items, all deterministic from the three files (no --seed):
//  - a noun synset of data.noun is used when its first word W is 3+ letters a-z, the synset is
//    W's first sense (the first offset on W's index.noun line), cntlist.rev tags that first
//    sense (key "W%1:...", sense number 1) at least WN_MIN_TAGS times in the Brown-corpus
//    concordance (common words), and GLOSS - the gloss up to its first ';', trimmed - has 10+
//    characters and does not contain W (any case);
//  - order: by splitmix64 of the synset offset (so --limit N is a spread sample, not the first
//    lexicographer files), ties by offset; gold position and the three distractors (other
//    items' words, distinct from W and each other) drawn from the same generator's next values.
// Item id "noun/<offset>". WordNet 3.0 gives 1,031 items (checked against an independent
// Python implementation, scripts/wordnet_ref.py).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "eval/tasks/task.h"

#define WN_MIN_TAGS 10
#define WN_MIN_GLOSS 10

struct wn_lemma { char *w; long first_off; int tags; };
struct wn_item { long off; uint64_t key; char *w, *gloss; };
struct wn_load {
    struct wn_lemma *lem; int n_lem, cap_lem;   // sorted by w after loading index.noun
    struct wn_item *it; int n_it, cap_it;
};

static int is_word(const char *s, size_t n) {
    if (n < 3) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 'a' || s[i] > 'z') return 0;
    return 1;
}

static int by_lemma(const void *a, const void *b) {
    return strcmp(((const struct wn_lemma *)a)->w, ((const struct wn_lemma *)b)->w);
}

static struct wn_lemma *find_lemma(struct wn_load *L, const char *w) {
    struct wn_lemma k = {.w = (char *)w};
    return bsearch(&k, L->lem, (size_t)L->n_lem, sizeof k, by_lemma);
}

// index.noun: "lemma pos synset_cnt p_cnt [ptr x p_cnt] sense_cnt tagsense_cnt offset..."; lines
// starting with two spaces are the licence header. Keeps plain-word lemmas and their first offset.
static int index_line(struct wn_load *L, char *line, const char *path, int ln, struct err *e) {
    char *tok[64], *save = NULL;
    int n = 0;
    for (char *t = strtok_r(line, " ", &save); t && n < 64; t = strtok_r(NULL, " ", &save)) tok[n++] = t;
    if (n < 4) return err_set(e, ERR_FORMAT, "%s:%d: expected 'lemma pos synset_cnt p_cnt ...', got %d fields", path, ln, n);
    int pc = atoi(tok[3]);
    if (pc < 0 || 6 + pc >= n) return err_set(e, ERR_FORMAT, "%s:%d: p_cnt '%s' leaves no synset offset", path, ln, tok[3]);
    if (!is_word(tok[0], strlen(tok[0]))) return 0;
    if (L->n_lem == L->cap_lem) {
        L->cap_lem = L->cap_lem ? 2 * L->cap_lem : 4096;
        struct wn_lemma *nl = realloc(L->lem, (size_t)L->cap_lem * sizeof *nl);
        if (!nl) return err_set(e, ERR_NOMEM, "%s: out of memory", path);
        L->lem = nl;
    }
    struct wn_lemma *m = &L->lem[L->n_lem];
    if (!(m->w = str_dup(tok[0]))) return err_set(e, ERR_NOMEM, "%s: out of memory", path);
    m->first_off = strtol(tok[6 + pc], NULL, 10);
    m->tags = 0;
    L->n_lem++;
    return 0;
}

// Calls fn on each non-blank line of path (task_lines), made NUL-terminated and writable in
// place, that does not start with two spaces (WordNet's licence header).
static int each_line(struct wn_load *L, const char *path, int (*fn)(struct wn_load *, char *, const char *, int, struct err *),
                     struct err *e) {
    char *buf = NULL;
    size_t len = 0, n;
    int rc = task_read_text(path, &buf, &len, e);
    struct task_lines it;
    const char *line;
    task_lines_init(&it, rc ? "" : buf, rc ? 0 : len);
    while (!rc && task_lines_next(&it, &line, &n)) {
        char *w = buf + (line - buf); // the iterator has moved past this line: its '\r' or '\n' (or
        w[n] = 0;                     // file_read_all's final NUL) may become the terminator
        if (!(w[0] == ' ' && w[1] == ' ')) rc = fn(L, w, path, it.lineno, e);
    }
    free(buf);
    return rc;
}

// cntlist.rev: "lemma%1:lexfile:lexid:: sense_number tag_cnt"; noun sense 1 gives the count.
static int cnt_line(struct wn_load *L, char *line, const char *path, int ln, struct err *e) {
    char key[512];
    int sn = 0, cnt = 0;
    if (sscanf(line, "%511s %d %d", key, &sn, &cnt) != 3)
        return err_set(e, ERR_FORMAT, "%s:%d: expected 'sense_key sense_number tag_cnt'", path, ln);
    char *pct = strchr(key, '%');
    if (!pct || sn != 1 || strncmp(pct, "%1:", 3) != 0) return 0;
    *pct = 0;
    struct wn_lemma *m = find_lemma(L, key);
    if (m) m->tags = cnt;
    return 0;
}

static int contains_ci(const char *hay, const char *w) {
    size_t n = strlen(w);
    for (const char *h = hay; *h; h++)
        if (strncasecmp(h, w, n) == 0) return 1;
    return 0;
}

// data.noun: "offset lex_filenum ss_type w_cnt word lex_id ... | gloss".
static int data_line(struct wn_load *L, char *line, const char *path, int ln, struct err *e) {
    char *bar = strstr(line, " | ");
    char off[16], ss[4], wc[8], word[256];
    if (!bar || sscanf(line, "%15s %*s %3s %7s %255s", off, ss, wc, word) != 4)
        return err_set(e, ERR_FORMAT, "%s:%d: expected 'offset lex_filenum ss_type w_cnt word ... | gloss'", path, ln);
    if (!is_word(word, strlen(word))) return 0;
    struct wn_lemma *m = find_lemma(L, word);
    long o = strtol(off, NULL, 10);
    if (!m || m->first_off != o || m->tags < WN_MIN_TAGS) return 0;
    const char *g = bar + 3, *semi = strchr(g, ';');
    size_t gl = semi ? (size_t)(semi - g) : strlen(g);
    char *gloss = task_strip(g, gl);
    if (!gloss) return err_set(e, ERR_NOMEM, "%s: out of memory", path);
    if (strlen(gloss) < WN_MIN_GLOSS || contains_ci(gloss, word)) { free(gloss); return 0; }
    if (L->n_it == L->cap_it) {
        L->cap_it = L->cap_it ? 2 * L->cap_it : 1024;
        struct wn_item *ni = realloc(L->it, (size_t)L->cap_it * sizeof *ni);
        if (!ni) { free(gloss); return err_set(e, ERR_NOMEM, "%s: out of memory", path); }
        L->it = ni;
    }
    uint64_t st = (uint64_t)o;
    L->it[L->n_it++] = (struct wn_item){.off = o, .key = task_rng_next(&st), .w = m->w, .gloss = gloss};
    return 0;
}

static int by_key(const void *a, const void *b) {
    const struct wn_item *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->off > y->off) - (x->off < y->off);
}

// Pushes item i: the gold position and three distractors from the item's generator (state =
// its offset, after the value that ordered it).
static int push_item(struct task_set *s, const struct wn_load *L, int i) {
    const struct wn_item *it = &L->it[i];
    uint64_t st = (uint64_t)it->off;
    (void)task_rng_next(&st);
    int gold = (int)(task_rng_next(&st) % 4);
    const char *ch[4] = {0};
    ch[gold] = it->w;
    for (int k = 0; k < 4; k++) {
        if (k == gold) continue;
        for (;;) {
            const char *d = L->it[task_rng_next(&st) % (uint64_t)L->n_it].w;
            int dup = 0;
            for (int j = 0; j < 4; j++) dup |= ch[j] && strcmp(ch[j], d) == 0;
            if (!dup) { ch[k] = d; break; }
        }
    }
    char id[32];
    snprintf(id, sizeof id, "noun/%08ld", it->off);
    struct sbuf b = {0};
    if (sb_printf(&b, "Question: What word is defined as: %s?\nAnswer:", it->gloss)) { free(b.p); return ERR_NOMEM; }
    return task_push_item_own(s, id, NULL, b.p, ch, 4, gold);
}

static void wn_free(struct wn_load *L) {
    for (int i = 0; i < L->n_lem; i++) free(L->lem[i].w);
    for (int i = 0; i < L->n_it; i++) free(L->it[i].gloss);
    free(L->lem);
    free(L->it);
}

static int load_dict(struct task_set *s, const char *dir, struct err *e) {
    struct wn_load L = {0};
    char p[3][4200];
    static const char *const files[3] = {"index.noun", "cntlist.rev", "data.noun"};
    int rc = 0;
    for (int k = 0; k < 3 && !rc; k++) {
        snprintf(p[k], sizeof p[k], "%s/%s", dir, files[k]);
        if (!file_exists(p[k])) rc = err_set(e, ERR_NOTFOUND, "wordnet: %s: no such file (a WordNet 3.0 dict directory "
                                             "has index.noun, cntlist.rev and data.noun)", p[k]);
    }
    if (!rc) rc = each_line(&L, p[0], index_line, e);
    if (!rc) qsort(L.lem, (size_t)L.n_lem, sizeof *L.lem, by_lemma);
    if (!rc) rc = each_line(&L, p[1], cnt_line, e);
    if (!rc) rc = each_line(&L, p[2], data_line, e);
    if (!rc && L.n_it < 4) rc = err_set(e, ERR_FORMAT, "wordnet: %s: %d usable nouns (4 needed for one item)", dir, L.n_it);
    if (!rc) qsort(L.it, (size_t)L.n_it, sizeof *L.it, by_key);
    for (int i = 0; i < L.n_it && !rc; i++)
        if (push_item(s, &L, i)) rc = err_set(e, ERR_NOMEM, "wordnet: out of memory");
    if (!rc) task_source_add(s, "%s (WordNet 3.0 nouns: %d items, first-sense tag count >= %d)", dir, L.n_it, WN_MIN_TAGS);
    wn_free(&L);
    return rc;
}

int task_load_wordnet(struct task_set *s, const struct task_opts *o, struct err *e) {
    task_set_begin(s, "wordnet", TASK_METRIC_ACC | TASK_METRIC_ACC_NORM, "wordnet-gloss-v1", o);
    char dir[4096];
    if (o->file) {
        if (!dir_exists(o->file)) return err_set(e, ERR_NOTFOUND, "wordnet: --task-file %s: expected a WordNet dict directory", o->file);
        snprintf(dir, sizeof dir, "%s", o->file);
    } else if (!task_data_try(dir, sizeof dir, o, "wordnet", 1)) {
        if (!dir_exists("/usr/share/wordnet"))
            return err_set(e, ERR_NOTFOUND, "wordnet: /usr/share/wordnet not found (nor wordnet/ under a data root); install "
                           "the Debian package: apt-get install wordnet-base (or pass --task-file DICT_DIR)");
        snprintf(dir, sizeof dir, "/usr/share/wordnet");
    }
    int rc = load_dict(s, dir, e);
    if (rc) return rc;
    task_apply_limit(s, o);
    return 0;
}
