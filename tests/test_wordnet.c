// test_wordnet.c: the `wordnet` task (src/eval/tasks/wordnet.c). (1) A hand-written dict of
// seven nouns, written here, where each selection rule excludes one word: the items, their
// context string and choices as the header's rules give them by hand; malformed files named
// with file and line. (2) The real WordNet 3.0 (Debian wordnet-base, /usr/share/wordnet) against
// the independent Python implementation's count, first items and listing hash
// (tests/data/wordnet_ref.json, written by scripts/wordnet_ref.py); skipped without it. (3) The
// calibration-source guard knows WordNet's directory as this task's data.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/sha256.h"
#include "calib/calib_source.h"
#include "eval/tasks/task.h"
#include "test.h"

static char dict[1024];

static void put(const char *name, const char *text) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dict, name);
    FILE *f = fopen(p, "w");
    if (!f) { CHECK(0, "cannot write %s", p); return; }
    fputs(text, f);
    fclose(f);
}

// "  " lines are WordNet's licence header. ox: first sense tagged 9 times (< 10: out); Paris:
// not lower case (out); bank: its data line is its second sense (out); tree's gloss names it
// (out); cup's gloss is 9 characters (out). Kept: dog, cat, house, river, stone.
static void write_dict(void) {
    put("index.noun", "  1 licence line\n"
                      "dog n 1 1 @ 1 1 00000100\n"
                      "cat n 1 0 1 1 00000200\n"
                      "house n 1 0 1 1 00000300\n"
                      "river n 1 0 1 1 00000400\n"
                      "stone n 1 0 1 1 00000500\n"
                      "ox n 1 0 1 1 00000600\n"
                      "bank n 2 0 2 1 00000900 00000700\n"
                      "tree n 1 0 1 1 00000800\n"
                      "cup n 1 0 1 1 00001000\n");
    put("cntlist.rev", "dog%1:05:00:: 1 40\ncat%1:05:00:: 1 12\nhouse%1:06:00:: 1 90\nriver%1:17:00:: 1 10\n"
                       "stone%1:27:00:: 1 11\nox%1:05:00:: 1 9\nbank%1:14:00:: 1 50\ntree%1:20:00:: 1 30\n"
                       "cup%1:06:00:: 1 20\nhouse%2:35:00:: 1 70\n");
    put("data.noun", "  1 licence line\n"
                     "00000100 05 n 02 dog 0 domestic_dog 0 000 | a common pet that barks; \"the dog slept\"  \n"
                     "00000200 05 n 01 cat 0 000 | a small furry pet that purrs  \n"
                     "00000300 06 n 01 house 0 000 | a building where people live  \n"
                     "00000400 17 n 01 river 0 000 | a large natural stream of water  \n"
                     "00000500 27 n 01 stone 0 000 | a small piece of rock  \n"
                     "00000600 05 n 01 ox 0 000 | an adult castrated bull  \n"
                     "00000650 05 n 01 Paris 0 000 | the capital of France  \n"
                     "00000700 14 n 01 bank 0 000 | sloping land beside water  \n"
                     "00000800 20 n 01 tree 0 000 | a tall Tree-like plant  \n"
                     "00001000 06 n 01 cup 0 000 | a vessel.  \n");
}

static int load_dir(struct task_set *s, int limit, struct err *e) {
    struct task_opts o = {.file = dict, .limit = limit};
    memset(e, 0, sizeof *e);
    return task_load("wordnet", s, &o, e);
}

static int has(const struct task_item *it, const char *w) {
    for (int k = 0; k < it->n_choices; k++)
        if (!strcmp(it->choices[k], w)) return 1;
    return 0;
}

static void test_rules(void) {
    write_dict();
    struct task_set s;
    struct err e;
    int rc = load_dir(&s, 0, &e);
    CHECK(rc == 0 && s.n_items == 5, "5 items (rc %d, %d): %s", rc, s.n_items, e.msg);
    const char *kept[5] = {"dog", "cat", "house", "river", "stone"};
    const char *ctx[5] = {"Question: What word is defined as: a common pet that barks?\nAnswer:",
                          "Question: What word is defined as: a small furry pet that purrs?\nAnswer:",
                          "Question: What word is defined as: a building where people live?\nAnswer:",
                          "Question: What word is defined as: a large natural stream of water?\nAnswer:",
                          "Question: What word is defined as: a small piece of rock?\nAnswer:"};
    const char *ids[5] = {"noun/00000100", "noun/00000200", "noun/00000300", "noun/00000400", "noun/00000500"};
    for (int i = 0; i < s.n_items; i++) {
        const struct task_item *it = &s.items[i];
        int w = -1;
        for (int k = 0; k < 5; k++)
            if (!strcmp(it->id, ids[k])) w = k;
        CHECK(w >= 0, "item id %s is one of the five", it->id);
        if (w < 0) continue;
        CHECK(!strcmp(it->context, ctx[w]), "%s: context [%s]", it->id, it->context);
        CHECK(it->n_choices == 4 && it->gold >= 0 && it->gold < 4 && !strcmp(it->choices[it->gold], kept[w]),
              "%s: gold is %s", it->id, kept[w]);
        for (int a = 0; a < 4; a++) {
            int known = 0;
            for (int k = 0; k < 5; k++) known |= !strcmp(it->choices[a], kept[k]);
            CHECK(known, "%s: choice %s is a kept noun", it->id, it->choices[a]);
            for (int b = a + 1; b < 4; b++) CHECK(strcmp(it->choices[a], it->choices[b]), "%s: choices distinct", it->id);
        }
        CHECK(!has(it, "ox") && !has(it, "Paris") && !has(it, "bank") && !has(it, "tree") && !has(it, "cup"),
              "%s: no excluded word among the choices", it->id);
    }
    CHECK(s.metrics == (TASK_METRIC_ACC | TASK_METRIC_ACC_NORM) && !strcmp(s.template_version, "wordnet-gloss-v1"),
          "metrics and template");
    struct task_set t;
    rc = load_dir(&t, 2, &e);
    CHECK(rc == 0 && t.n_items == 2 && !strcmp(t.items[0].id, s.items[0].id) && !strcmp(t.items[1].id, s.items[1].id) &&
              t.items[0].gold == s.items[0].gold, "--limit 2 keeps the first two of the same order");
    task_set_free(&t);
    task_set_free(&s);
}

static void test_errors(void) {
    struct task_set s;
    struct err e;
    put("index.noun", "dog n 1 3 @ 1 1\n");
    int rc = load_dir(&s, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "index.noun:1:") && strstr(e.msg, "p_cnt '3'"), "short index line: %s", e.msg);
    write_dict();
    put("data.noun", "00000100 05 n 02 dog 0 000 a gloss with no bar\n");
    rc = load_dir(&s, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "data.noun:1:"), "data line without ' | ': %s", e.msg);
    write_dict();
    put("cntlist.rev", "dog%1:05:00:: 1\n");
    rc = load_dir(&s, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "cntlist.rev:1:"), "short cntlist line: %s", e.msg);
    write_dict();
    put("data.noun", "00000100 05 n 02 dog 0 000 | a common pet that barks  \n");
    rc = load_dir(&s, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "1 usable nouns"), "too few nouns: %s", e.msg);
    char p[1200];
    snprintf(p, sizeof p, "%s/cntlist.rev", dict);
    remove(p);
    rc = load_dir(&s, 0, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "cntlist.rev: no such file"), "missing file named: %s", e.msg);
    write_dict();
}

static void test_real(void) {
    const char *sys = "/usr/share/wordnet";
    if (!dir_exists(sys)) {
        TEST_SKIP("WordNet 3.0 not installed (Debian: apt-get install wordnet-base)");
        return;
    }
    char *ref = NULL;
    size_t n = 0;
    struct err e = {0};
    CHECK(file_read_all("tests/data/wordnet_ref.json", &ref, &n, &e) == 0, "%s", e.msg);
    cJSON *j = ref ? cJSON_Parse(ref) : NULL;
    free(ref);
    struct task_opts o = {.file = sys};
    struct task_set s;
    int rc = task_load("wordnet", &s, &o, &e);
    CHECK(rc == 0 && j, "load %s: %s", sys, e.msg);
    if (rc || !j) { cJSON_Delete(j); return; }
    int want = cJSON_GetObjectItem(j, "items")->valueint;
    CHECK(s.n_items == want, "%d items, the Python reference %d", s.n_items, want);
    const cJSON *first = cJSON_GetObjectItem(j, "first");
    for (int i = 0; i < cJSON_GetArraySize(first) && i < s.n_items; i++) {
        const cJSON *f = cJSON_GetArrayItem(first, i);
        CHECK(!strcmp(s.items[i].id, cJSON_GetArrayItem(f, 0)->valuestring) && s.items[i].gold == cJSON_GetArrayItem(f, 1)->valueint,
              "item %d: %s gold %d", i, s.items[i].id, s.items[i].gold);
    }
    struct sha256 h;
    sha256_init(&h);
    for (int i = 0; i < s.n_items; i++) {
        const struct task_item *it = &s.items[i];
        char head[64];
        snprintf(head, sizeof head, "%s\t%d\t", it->id, it->gold);
        sha256_update(&h, head, strlen(head));
        for (int k = 0; k < 4; k++) {
            if (k) sha256_update(&h, "|", 1);
            sha256_update(&h, it->choices[k], strlen(it->choices[k]));
        }
        sha256_update(&h, "\t", 1);
        sha256_update(&h, it->context, strlen(it->context));
        sha256_update(&h, "\n", 1);
    }
    uint8_t d[32];
    char hex[65];
    sha256_final(&h, d);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
    const char *wh = cJSON_GetObjectItem(j, "listing_sha256")->valuestring;
    CHECK(!strcmp(hex, wh), "listing sha256 %s, the Python reference %s", hex, wh);
    task_set_free(&s);
    cJSON_Delete(j);
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    snprintf(dict, sizeof dict, "%s/wordnet-dict", t ? t : "/tmp");
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dict, dict);
    if (system(cmd)) { CHECK(0, "%s", cmd); return test_summary("test_wordnet"); }
    test_rules();
    test_errors();
    test_real();
    const char *task = NULL;
    CHECK(calib_source_is_eval("/usr/share/wordnet/data.noun", &task) == 1 && task && !strcmp(task, "wordnet"),
          "calibrating on WordNet's files is calibrating on the wordnet task's data");
    return test_summary("test_wordnet");
}
