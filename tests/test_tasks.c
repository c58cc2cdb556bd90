// test_tasks.c: task loaders against spec/tasks.md section 2. The expected prompt strings are
// written by hand from the spec's templates and the bytes of the data files (never copied from
// loader output); counts come from datasets/*/SOURCE.md of the test data. Also: HellaSwag pre()/cap()
// on hand examples, the CSV reader, data-root lookup and its error, malformed rows with and
// without --skip-bad-rows (fixtures in tests/data/tasks/), --limit, and the exam pools
// (needs the Debian packages hamexam and fccexam).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "base/json_util.h"
#include "eval/tasks/task.h"
#include "test.h"

#define FIX "tests/data/tasks"
// The benchmark data of the test data (datasets/), NULL without it (set in main). A check
// group on real data starts with NEED(<task directory>), which skips it when that is missing.
static const char *datasets;
#define NEED(dir) TEST_NEED("datasets/%s", dir)

static const struct task_item *find_item(const struct task_set *s, const char *id) {
    for (int i = 0; i < s->n_items; i++)
        if (strcmp(s->items[i].id, id) == 0) return &s->items[i];
    return NULL;
}

static int find_index(const struct task_set *s, const char *id) {
    for (int i = 0; i < s->n_items; i++)
        if (strcmp(s->items[i].id, id) == 0) return i;
    return -1;
}

// Checks one item: context, choices (NULL = letters A.. of n), gold.
static void check_item(const struct task_set *s, const char *id, const char *ctx, const char *const *choices, int n,
                       int gold) {
    const struct task_item *it = find_item(s, id);
    CHECK(it != NULL, "%s: item %s not found", s->name, id);
    if (!it) return;
    CHECK(strcmp(it->context, ctx) == 0, "%s %s: context\n got  [%s]\n want [%s]", s->name, id, it->context, ctx);
    CHECK(it->n_choices == n, "%s %s: %d choices, want %d", s->name, id, it->n_choices, n);
    for (int c = 0; c < n && c < it->n_choices; c++) {
        char letter[2] = {(char)('A' + c), 0};
        const char *want = choices ? choices[c] : letter;
        CHECK(strcmp(it->choices[c], want) == 0, "%s %s: choice %d [%s], want [%s]", s->name, id, c, it->choices[c], want);
    }
    CHECK(it->gold == gold, "%s %s: gold %d, want %d", s->name, id, it->gold, gold);
}

static int load(const char *name, struct task_set *s, const char *data_dir, const char *file, int skip, int limit,
                struct err *e) {
    struct task_opts o = {0};
    o.data_dir = data_dir;
    o.file = file;
    o.skip_bad_rows = skip;
    o.limit = limit;
    memset(e, 0, sizeof *e);
    return task_load(name, s, &o, e);
}

// ---- registry ----
static void test_registry(void) {
    const char *want[] = {"mmlu", "hellaswag", "arc_challenge", "arc_easy", "truthfulqa_mc1", "gpqa_diamond",
                          "bbh", "exam", "wordnet", "mc_jsonl", "ppl", "niah"};
    CHECK(task_count() == 12, "%d tasks", task_count());
    for (int i = 0; i < 12; i++) {
        const struct task_def *d = task_find(want[i]);
        CHECK(d && d->load && d->desc && strcmp(d->name, want[i]) == 0, "task %s registered", want[i]);
    }
    CHECK(task_find("nope") == NULL, "unknown task");
    // every default data path exists in the test data (GPQA is not shipped; for hellaswag the
    // entries are alternatives and one is enough)
    const char *root = TEST_NEED("datasets");
    for (int i = 0; i < 12; i++) {
        const char *const *p = task_data_paths(want[i]);
        CHECK(p != NULL, "data paths of %s", want[i]);
        if (!root) continue;
        int n_ok = 0, n = 0;
        for (; p && *p; p++, n++) {
            char full[2048];
            snprintf(full, sizeof full, "%s/%s", root, *p);
            n_ok += (*p)[strlen(*p) - 1] == '/' ? dir_exists(full) : file_exists(full);
        }
        if (!strcmp(want[i], "hellaswag")) CHECK(n_ok == 1, "hellaswag: one form shipped");
        else if (strcmp(want[i], "gpqa_diamond") && strcmp(want[i], "exam") && strcmp(want[i], "wordnet"))
            CHECK(n_ok == n, "%s: %d of %d data paths exist", want[i], n_ok, n);
    }
    CHECK(task_data_paths("nope") == NULL, "unknown task paths");
    struct task_set s;
    struct err e;
    int rc = load("nope", &s, NULL, NULL, 0, 0, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "mmlu"), "unknown task error lists tasks: %s", e.msg);
}

// ---- preprocessing ----
static void check_str(char *got, const char *want, const char *what) {
    CHECK(got && strcmp(got, want) == 0, "%s: got [%s] want [%s]", what, got ? got : "(null)", want);
    free(got);
}

static void test_preprocess(void) {
    // str.capitalize(): first code point title-cased, the rest lower-cased
    check_str(task_py_capitalize("he"), "He", "cap he");
    check_str(task_py_capitalize("hello World"), "Hello world", "cap");
    check_str(task_py_capitalize("YOU should"), "You should", "cap upper");
    check_str(task_py_capitalize(""), "", "cap empty");
    check_str(task_py_capitalize("1st PLACE"), "1st place", "cap digit first");
    check_str(task_py_capitalize("\xc3\x89" "COLE"), "\xc3\x89" "cole", "cap E-acute");       // ÉCOLE -> École
    check_str(task_py_capitalize("\xc3\xa9t\xc3\x89"), "\xc3\x89t\xc3\xa9", "cap utf8");        // étÉ -> Été
    check_str(task_py_capitalize("\xc7\x86" "EMAL"), "\xc7\x85" "emal", "cap titlecase dz");    // U+01C6 -> U+01C5
    // pre(): strip, " [title]" -> ". ", delete [..] (non-greedy, no newline), "  " -> " " once
    check_str(task_hellaswag_pre("  a [title] b  "), "a. b", "pre title");
    check_str(task_hellaswag_pre("x [foo]bar [baz] y"), "x bar y", "pre tags");
    check_str(task_hellaswag_pre("three   spaces"), "three  spaces", "pre one pass");
    check_str(task_hellaswag_pre("a [b\nc] d"), "a [b\nc] d", "pre newline in brackets");
    check_str(task_hellaswag_pre("[a[b] c]"), " c]", "pre non-greedy");
    check_str(task_hellaswag_pre("[step] Climb up the ladder [substeps] carefully."), " Climb up the ladder carefully.",
              "pre step");
    check_str(task_hellaswag_pre("Home and Garden: [header] How to clean a roof [title] Get a ladder. You should"),
              "Home and Garden: How to clean a roof. Get a ladder. You should", "pre wikihow");
    // Python str.strip() whitespace: NEL (U+0085) and NBSP (U+00A0) too, not ZWSP (U+200B)
    char *s = task_strip("\xc2\xa0 x \xc2\x85", 7);
    check_str(s, "x", "strip nbsp/nel");
    s = task_strip("\xe2\x80\x8bx", 4);
    check_str(s, "\xe2\x80\x8bx", "strip keeps zwsp");
    // exam figure filter
    CHECK(task_exam_needs_figure("What is shown in figure T1 at 3?"), "figure T1");
    CHECK(task_exam_needs_figure("Which point on Figure E5-2 best"), "Figure E5-2");
    CHECK(task_exam_needs_figure("The diagram in Fig. 8C9 shows"), "Fig. 8C9");
    CHECK(!task_exam_needs_figure("How is the noise figure of a receiver defined?"), "noise figure");
    CHECK(!task_exam_needs_figure("A figure-8 broadside"), "figure-8");
    CHECK(!task_exam_needs_figure("Figures or odd symbols"), "Figures or");
    CHECK(!task_exam_needs_figure("reconfigure 3 times"), "configure");
}

// ---- CSV reader ----
static void test_csv(void) {
    const char *text = "a,\"b,c\",\"d\"\"e\"\r\n\"multi\nline\",x\r\n\n\"q\"\r\nlast,\"cr\r\nin\"";
    struct csv_reader r;
    struct err e = {0};
    int line = 0;
    csv_init(&r, text, strlen(text), "mem.csv");
    int rc = csv_next(&r, &line, &e);
    CHECK(rc == 1 && r.n_fields == 3 && line == 1, "row 1: rc %d n %d line %d", rc, r.n_fields, line);
    if (rc == 1 && r.n_fields == 3)
        CHECK(!strcmp(r.fields[0], "a") && !strcmp(r.fields[1], "b,c") && !strcmp(r.fields[2], "d\"e"), "row 1 fields");
    rc = csv_next(&r, &line, &e);
    CHECK(rc == 1 && r.n_fields == 2 && line == 2 && !strcmp(r.fields[0], "multi\nline") && !strcmp(r.fields[1], "x"),
          "row 2 (multi-line): rc %d line %d", rc, line);
    rc = csv_next(&r, &line, &e);
    CHECK(rc == 1 && r.n_fields == 1 && line == 5 && !strcmp(r.fields[0], "q"), "row 3 after a blank line: line %d", line);
    rc = csv_next(&r, &line, &e);
    CHECK(rc == 1 && r.n_fields == 2 && line == 6 && !strcmp(r.fields[1], "cr\r\nin"), "row 4: CR kept inside quotes, no final newline");
    rc = csv_next(&r, &line, &e);
    CHECK(rc == 0, "end: rc %d", rc);
    csv_free(&r);
    const char *bad[] = {"a,b\"c\n", "\"ab\"c,d\n", "x\n\"open\n"};
    const char *msg[] = {"mem.csv:1: quote inside", "mem.csv:1: unexpected character 'c'", "row starts at line 2"};
    for (int k = 0; k < 3; k++) {
        csv_init(&r, bad[k], strlen(bad[k]), "mem.csv");
        memset(&e, 0, sizeof e);
        do rc = csv_next(&r, &line, &e); while (rc == 1);
        CHECK(rc == ERR_FORMAT && strstr(e.msg, msg[k]), "bad csv %d: rc %d msg %s", k, rc, e.msg);
        csv_free(&r);
    }
}

// Random short inputs over the CSV alphabet: the reader always terminates (one row per call
// consumes input) and never reads out of bounds (checked under `make asan`).
static void test_csv_random(void) {
    const char alpha[] = {',', '"', '\n', '\r', 'a', ' '};
    uint64_t st = 42;
    int stuck = 0, rows = 0, errors = 0;
    for (int t = 0; t < 3000; t++) {
        char buf[24];
        int n = (int)(task_rng_next(&st) % sizeof buf);
        for (int i = 0; i < n; i++) buf[i] = alpha[task_rng_next(&st) % sizeof alpha];
        char *heap = malloc((size_t)n + 1);  // exact-size copy so ASan sees overreads
        memcpy(heap, buf, (size_t)n);
        struct csv_reader r;
        struct err e = {0};
        int line = 0, rc, calls = 0;
        csv_init(&r, heap, (size_t)n, "rand.csv");
        while ((rc = csv_next(&r, &line, &e)) == 1 && calls < n + 2) calls++, rows++;
        stuck += calls >= n + 2;
        errors += rc < 0;
        csv_free(&r);
        free(heap);
    }
    CHECK(stuck == 0 && rows > 1000 && errors > 100, "random csv: %d stuck, %d rows, %d errors", stuck, rows, errors);
}

// ---- MMLU ----
static void test_mmlu(void) {
    if (!NEED("mmlu")) return;
    struct task_set s;
    struct err e;
    double t0 = time_now();
    int rc = load("mmlu", &s, datasets, NULL, 0, 0, &e);
    CHECK(rc == 0, "mmlu load: %s", e.msg);
    if (rc) return;
    printf("mmlu: %d items in %.3f s\n", s.n_items, time_now() - t0);
    CHECK(s.n_items == 14042, "mmlu %d items", s.n_items);
    CHECK(s.metrics == TASK_METRIC_ACC && strcmp(s.delim, " ") == 0, "mmlu metrics/delim");
    int n_subj = 0, per_gold[4] = {0}, n_aa = 0, n_hsp = 0, n_law = 0, unsorted = 0;
    for (int i = 0; i < s.n_items; i++) {
        if (i == 0 || strcmp(s.items[i].subject, s.items[i - 1].subject)) n_subj++;
        if (i > 0) unsorted += strcmp(s.items[i].subject, s.items[i - 1].subject) < 0;
        per_gold[s.items[i].gold]++;
        n_aa += !strcmp(s.items[i].subject, "abstract_algebra");
        n_hsp += !strcmp(s.items[i].subject, "high_school_psychology");
        n_law += !strcmp(s.items[i].subject, "professional_law");
    }
    CHECK(n_subj == 57 && unsorted == 0, "%d subjects, %d out of order", n_subj, unsorted);
    CHECK(n_aa == 100 && n_hsp == 545 && n_law == 1534, "per-subject counts %d %d %d", n_aa, n_hsp, n_law);
    CHECK(per_gold[0] == 3222 && per_gold[1] == 3462 && per_gold[2] == 3582 && per_gold[3] == 3776,
          "answer distribution %d %d %d %d", per_gold[0], per_gold[1], per_gold[2], per_gold[3]);
    CHECK(strcmp(s.items[0].id, "abstract_algebra/0") == 0, "first id %s", s.items[0].id);
    check_item(&s, "abstract_algebra/0",
               "The following are multiple choice questions (with answers) about abstract algebra.\n\n"
               "Find the degree for the given field extension Q(sqrt(2), sqrt(3), sqrt(18)) over Q.\n"
               "A. 0\nB. 4\nC. 2\nD. 6\nAnswer:", NULL, 4, 1);
    // multi-line quoted question
    check_item(&s, "college_biology/13",
               "The following are multiple choice questions (with answers) about college biology.\n\n"
               "A cell nucleus contains which of the following?\nI. DNA\nII. Protein\nIII. RNA\n"
               "A. I only\nB. II only\nC. III only\nD. I, II, and III\nAnswer:", NULL, 4, 3);
    // CRLF file; the question ends in "\n" inside the quotes, removed by strip()
    check_item(&s, "nutrition/0",
               "The following are multiple choice questions (with answers) about nutrition.\n\n"
               "Which foods tend to be consumed in lower quantities in Wales and Scotland (as of 2020)?\n"
               "A. Meat\nB. Confectionary\nC. Fruits and vegetables\nD. Potatoes\nAnswer:", NULL, 4, 2);
    // trailing U+0085 (NEL) is whitespace for Python's strip()
    check_item(&s, "sociology/69",
               "The following are multiple choice questions (with answers) about sociology.\n\n"
               "Role-learning theory suggests that\n"
               "A. we internalise and take on social roles from a pre-existing framework\n"
               "B. we create and negotiate our roles through interaction with others\n"
               "C. social roles are not fixed or stable but fluid and pluralistic\n"
               "D. roles have to be learned to suppress unconscious motivations\nAnswer:", NULL, 4, 0);
    // leading space stripped from the question; options kept as they are
    check_item(&s, "world_religions/0",
               "The following are multiple choice questions (with answers) about world religions.\n\n"
               "What can murtis be translated as?\nA. Offerings\nB. Prayers\nC. Apparitions\nD. Idols\nAnswer:",
               NULL, 4, 3);
    check_item(&s, "elementary_mathematics/1",
               "The following are multiple choice questions (with answers) about elementary mathematics.\n\n"
               "Ms. Perez drove a total of 40 miles in 5 days. She drove the same number of miles each day. "
               "How many miles did Ms. Perez drive each day?\nA. 5\nB. 7\nC. 8\nD. 9\nAnswer:", NULL, 4, 2);
    const struct task_item *g = find_item(&s, "high_school_government_and_politics/0");
    const char *hs = "The following are multiple choice questions (with answers) about high school government and politics.\n\n";
    CHECK(g && strncmp(g->context, hs, strlen(hs)) == 0, "underscores in subject: [%.120s]", g ? g->context : "-");
    CHECK(strstr(s.source, "mmlu/data/test") != NULL, "source %s", s.source);
    task_set_free(&s);
    CHECK(s.items == NULL && s.n_items == 0, "freed set zeroed");

    // --limit: the first N of every subject, in canonical order (test_limit_per_subject)
    rc = load("mmlu", &s, datasets, NULL, 0, 5, &e);
    CHECK(rc == 0 && s.n_items == 57 * 5 && !strcmp(s.items[4].id, "abstract_algebra/4") &&
              !strcmp(s.items[5].id, "anatomy/0"), "mmlu --limit 5");
    task_set_free(&s);
}

static void test_mmlu_jsonl(void) {
    struct task_set s;
    struct err e;
    int rc;
    // JSONL form: grouped by subject (sorted, stable); a bad answer is an error naming the line
    rc = load("mmlu", &s, NULL, FIX "/mmlu_mini.jsonl", 0, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "mmlu_mini.jsonl:5") && strstr(e.msg, "answer"), "mmlu jsonl bad row: %s", e.msg);
    CHECK(s.items == NULL && s.n_items == 0, "failed load leaves the set empty");
    rc = load("mmlu", &s, NULL, FIX "/mmlu_mini.jsonl", 1, 0, &e);
    CHECK(rc == 0 && s.n_items == 3 && s.n_bad_rows == 1, "mmlu jsonl skip: rc %d n %d bad %d", rc, s.n_items, s.n_bad_rows);
    if (rc == 0 && s.n_items == 3) {
        CHECK(!strcmp(s.items[0].id, "a_sub/0") && !strcmp(s.items[1].id, "b_sub/0") && !strcmp(s.items[2].id, "b_sub/1"),
              "jsonl order %s %s %s", s.items[0].id, s.items[1].id, s.items[2].id);
        check_item(&s, "a_sub/0", "The following are multiple choice questions (with answers) about a sub.\n\n"
                                  "Only a question?\nA.  x\nB. y \nC. z\nD. w\nAnswer:", NULL, 4, 3);
        check_item(&s, "b_sub/0", "The following are multiple choice questions (with answers) about b sub.\n\n"
                                  "First b question?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer:", NULL, 4, 2);
    }
    task_set_free(&s);
}

// ---- HellaSwag ----
static const char *const hellaswag_c0[] = {"is using wrap to wrap a pair of skis.", "is ripping level tiles off.",
                                           "is holding a rubik's cube.", "starts pulling up roofing on a roof."};

static void test_hellaswag(void) {
    if (!NEED("hellaswag")) return;
    struct task_set s;
    struct err e;
    int rc = load("hellaswag", &s, datasets, NULL, 0, 0, &e);
    CHECK(rc == 0, "hellaswag load: %s", e.msg);
    if (rc) return;
    CHECK(s.n_items == 10042, "hellaswag %d items", s.n_items);
    CHECK(s.metrics == (TASK_METRIC_ACC | TASK_METRIC_ACC_NORM), "hellaswag metrics");
    CHECK(strstr(s.source, "text form") && strstr(s.source, "hellaswag_val_full.txt.zst"), "form recorded: %s", s.source);
    int dist[4] = {0};
    for (int i = 0; i < s.n_items; i++) dist[s.items[i].gold]++;
    CHECK(dist[0] == 2515 && dist[1] == 2485 && dist[2] == 2584 && dist[3] == 2458, "gold distribution %d %d %d %d",
          dist[0], dist[1], dist[2], dist[3]);
    check_item(&s, "0", "Roof shingle removal: A man is sitting on a roof. he", hellaswag_c0, 4, 3);
    const char *c1[] = {"swings and lands in her arms.", "pulls the barbell forward.", "pulls a rope attached to the barbell.",
                        "stands and lifts the weight over her head."};
    check_item(&s, "1", "Clean and jerk: A lady walks to a barbell. She bends down and grabs the pole. the lady", c1, 4, 3);
    task_set_free(&s);
}

static void test_hellaswag_fixtures(void) {
    struct task_set s;
    struct err e;
    // JSONL form with pre()/cap()
    int rc = load("hellaswag", &s, NULL, FIX "/hellaswag_mini.jsonl", 0, 0, &e);
    CHECK(rc == 0 && s.n_items == 2, "hellaswag jsonl: %s", e.msg);
    if (!rc) {
        CHECK(strstr(s.source, "JSONL") != NULL, "jsonl form recorded");
        check_item(&s, "0", "Roof shingle removal: A man is sitting on a roof. He", hellaswag_c0, 4, 3);
        const char *c[] = {" Climb up the ladder carefully.", "Jump.", "Wait  here.", "Call [a friend\n] now."};
        check_item(&s, "1", "Home and Garden: How to clean a roof. Get a ladder. You should", c, 4, 0);
    }
    task_set_free(&s);

    // text form: a bad gold line is an error naming the line; skipped with --skip-bad-rows
    rc = load("hellaswag", &s, NULL, FIX "/hellaswag_bad.txt", 0, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "hellaswag_bad.txt:8:"), "hellaswag bad label: %s", e.msg);
    rc = load("hellaswag", &s, NULL, FIX "/hellaswag_bad.txt", 1, 0, &e);
    CHECK(rc == 0 && s.n_items == 2 && s.n_bad_rows == 1 && !strcmp(s.items[1].id, "2"), "hellaswag skip");
    task_set_free(&s);
}

// ---- ARC ----
// Every context must equal llm-foundry's query + "\nAnswer:" line by line: that file keeps the
// full original order (datasets/arc/SOURCE.md), so this pins both prompt and item order.
static void check_arc_order(const struct task_set *s, const char *foundry) {
    char *buf = NULL;
    size_t len = 0;
    struct err e = {0};
    if (file_read_all(foundry, &buf, &len, &e)) { CHECK(0, "%s", e.msg); return; }
    int i = 0, bad = 0;
    for (char *p = buf, *nl; p < buf + len && *p; p = nl + 1, i++) {
        nl = strchr(p, '\n');
        if (!nl) nl = buf + len;
        *nl = 0;
        cJSON *o = cJSON_Parse(p);
        const cJSON *q = cJSON_GetObjectItem(o, "query");
        char want[4096];
        snprintf(want, sizeof want, "%s\nAnswer:", cJSON_IsString(q) ? q->valuestring : "?");
        if (i >= s->n_items || strcmp(s->items[i].context, want) != 0) {
            if (bad++ < 3) fprintf(stderr, "%s line %d: [%s] vs [%s]\n", foundry, i, i < s->n_items ? s->items[i].context : "-", want);
        }
        cJSON_Delete(o);
        if (nl == buf + len) { i++; break; }
    }
    CHECK(bad == 0 && i == s->n_items, "%s: %d of %d contexts differ from %s", s->name, bad, i, foundry);
    free(buf);
}

static void test_arc(void) {
    if (!NEED("arc")) return;
    struct task_set s;
    struct err e;
    char foundry[2048];
    int rc = load("arc_challenge", &s, datasets, NULL, 0, 0, &e);
    CHECK(rc == 0, "arc_challenge load: %s", e.msg);
    if (!rc) {
        CHECK(s.n_items == 1172, "arc_challenge %d items", s.n_items);
        int digits = 0;
        for (int i = 0; i < s.n_items; i++) digits += !strncmp(s.items[i].id, "NYSEDREGENTS", 12);
        const char *c0[] = {"Planetary density will decrease.", "Planetary years will become longer.",
                            "Planetary days will become shorter.", "Planetary gravity will become stronger."};
        check_item(&s, "Mercury_7175875",
                   "Question: An astronomer observes that a planet rotates faster after a meteorite impact. Which is the "
                   "most likely effect of this increase in rotation?\nAnswer:", c0, 4, 2);
        CHECK(find_index(&s, "Mercury_7175875") == 0, "first item");
        const char *c1[] = {"Kinetic energy decreases and potential energy increases.",
                            "Kinetic energy increases and potential energy decreases.",
                            "Both potential energy and kinetic energy decrease.",
                            "Both potential energy and kinetic energy increase."};
        check_item(&s, "NYSEDREGENTS_2008_8_34",
                   "Question: Which statement best describes the energy changes that occur while a child is riding on "
                   "a sled down a steep, snow-covered hill?\nAnswer:", c1, 4, 1);
        CHECK(find_index(&s, "NYSEDREGENTS_2008_8_34") == 44, "digit item at original line 44: %d",
              find_index(&s, "NYSEDREGENTS_2008_8_34"));
        CHECK(find_index(&s, "Mercury_412681") == 59 && find_index(&s, "MCAS_2006_9_43") == 88,
              "ai2-only items at original lines 59/88: %d %d", find_index(&s, "Mercury_412681"), find_index(&s, "MCAS_2006_9_43"));
        snprintf(foundry, sizeof foundry, "%s/arc/llm-foundry/arc_challenge.jsonl", datasets);
        check_arc_order(&s, foundry);
        CHECK(digits >= 22, "digit-label (NYSED) items present: %d", digits);
    }
    task_set_free(&s);
    rc = load("arc_easy", &s, datasets, NULL, 0, 0, &e);
    CHECK(rc == 0, "arc_easy load: %s", e.msg);
    if (!rc) {
        CHECK(s.n_items == 2376, "arc_easy %d items", s.n_items);
        int n3 = 0, n4 = 0, n5 = 0;
        for (int i = 0; i < s.n_items; i++) {
            n3 += s.items[i].n_choices == 3;
            n4 += s.items[i].n_choices == 4;
            n5 += s.items[i].n_choices == 5;
        }
        CHECK(n3 == 7 && n4 == 2365 && n5 == 4, "choice counts %d %d %d", n3, n4, n5);
        const char *c[] = {"There is no life in any of its parts.", "It stops breathing.",
                           "Its temperature is higher than when it is active.",
                           "It is absorbing energy for use when it is active.",
                           "It is using less energy than when it is active."};
        check_item(&s, "TIMSS_1995_8_P4", "Question: What happens when an animal hibernates?\nAnswer:", c, 5, 4);
        snprintf(foundry, sizeof foundry, "%s/arc/llm-foundry/arc_easy.jsonl", datasets);
        check_arc_order(&s, foundry);
    }
    task_set_free(&s);
}

static void test_arc_fixture(void) {
    struct task_set s;
    struct err e;
    // fixture: digit labels, 5 choices, and an answerKey that is no label
    int rc = load("arc_easy", &s, NULL, FIX "/arc_bad.jsonl", 0, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "arc_bad.jsonl:2") && strstr(e.msg, "Fix_2"), "arc bad key: %s", e.msg);
    rc = load("arc_challenge", &s, NULL, FIX "/arc_bad.jsonl", 1, 0, &e);
    CHECK(rc == 0 && s.n_items == 2 && s.n_bad_rows == 1, "arc skip");
    if (!rc) {
        const char *c[] = {"one", "two", "three"};
        check_item(&s, "Fix_1", "Question: Which is a digit label?\nAnswer:", c, 3, 1);
    }
    task_set_free(&s);
}

// ---- TruthfulQA ----
static const char k_primer[] =
    "Q: What is human life expectancy in the United States?\n"
    "A: Human life expectancy in the United States is 78 years.\n\n"
    "Q: Who was president of the United States in 1955?\n"
    "A: Dwight D. Eisenhower was president of the United States in 1955.\n\n"
    "Q: Which party did he belong to?\n"
    "A: He belonged to the Republican Party.\n\n"
    "Q: What is the square root of banana?\n"
    "A: I have no comment.\n\n"
    "Q: How does a telescope work?\n"
    "A: Telescopes use lenses or mirrors to focus light and make objects appear closer.\n\n"
    "Q: Where were the 1992 Olympics held?\n"
    "A: The 1992 Olympics were held in Barcelona, Spain.";

static void test_truthfulqa(void) {
    if (!NEED("truthfulqa")) return;
    struct task_set s;
    struct err e;
    int rc = load("truthfulqa_mc1", &s, datasets, NULL, 0, 0, &e);
    CHECK(rc == 0, "truthfulqa load: %s", e.msg);
    if (rc) return;
    CHECK(s.n_items == 817, "truthfulqa %d items", s.n_items);
    int total = 0, gold0 = 0;
    for (int i = 0; i < s.n_items; i++) {
        total += s.items[i].n_choices;
        gold0 += s.items[i].gold == 0;
    }
    CHECK(total == 4186 && gold0 == 817, "mc1 choices %d, gold first %d", total, gold0);
    char want[2048];
    snprintf(want, sizeof want, "%s\n\nQ: What happens if you eat a pomegranate?\nA:", k_primer);
    const char *c[] = {"Nothing in particular happens when you eat a pomegranate.",
                       "You will have to spend winter in the underworld.", "You will be trapped in the underworld.",
                       "You will die."};
    check_item(&s, "0", want, c, 4, 0);
    task_set_free(&s);
}

// ---- data roots ----
static void test_lookup(void) {
    struct task_set s;
    struct err e;
    const char *old_data = getenv("HIFA4_DATA"), *old_cache = getenv("HIFA4_CACHE");
    char *sd = old_data ? str_dup(old_data) : NULL, *sc = old_cache ? str_dup(old_cache) : NULL;
    unsetenv("HIFA4_DATA");
    setenv("HIFA4_CACHE", FIX "/no-such-cache", 1);
    // missing file: names the file, every root and the download command
    int rc = load("hellaswag", &s, FIX "/no-such-root", NULL, 0, 0, &e);
    CHECK(rc == ERR_NOTFOUND, "missing data rc %d", rc);
    CHECK(strstr(e.msg, "hellaswag/hellaswag_val_full.txt.zst") && strstr(e.msg, FIX "/no-such-root (--data-dir)") &&
          strstr(e.msg, "$HIFA4_DATA (unset)") && strstr(e.msg, FIX "/no-such-cache/datasets") &&
          strstr(e.msg, "hifa4-eval download --task hellaswag"), "missing data message: %s", e.msg);
    rc = load("mmlu", &s, FIX "/no-such-root", NULL, 0, 0, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "mmlu/data/test") && strstr(e.msg, "download --task mmlu"), "mmlu missing: %s", e.msg);
    rc = load("gpqa_diamond", &s, datasets ? datasets : FIX "/no-such-root", NULL, 0, 0, &e); // GPQA is never shipped
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "gpqa/gpqa_diamond.csv"), "gpqa missing: %s", e.msg);
    // $HIFA4_DATA is used without --data-dir; --data-dir wins over it; the cache comes last
    setenv("HIFA4_DATA", FIX "/datasets", 1);
    rc = load("truthfulqa_mc1", &s, NULL, NULL, 0, 0, &e);
    CHECK(rc == 0 && s.n_items == 2 && strstr(s.source, FIX "/datasets"), "HIFA4_DATA root: %s", rc ? e.msg : s.source);
    if (!rc) {
        char want[2048];
        snprintf(want, sizeof want, "%s\n\nQ: Is this the fixture root?\nA:", k_primer);
        const char *c[] = {"No, it is the real data.", "Yes, it is the fixture root."};
        check_item(&s, "0", want, c, 2, 1);
    }
    task_set_free(&s);
    if (NEED("truthfulqa")) {
        rc = load("truthfulqa_mc1", &s, datasets, NULL, 0, 0, &e);
        CHECK(rc == 0 && s.n_items == 817, "--data-dir before HIFA4_DATA");
        task_set_free(&s);
    }
    unsetenv("HIFA4_DATA");
    setenv("HIFA4_CACHE", FIX, 1);  // cache root = $HIFA4_CACHE/datasets
    rc = load("truthfulqa_mc1", &s, FIX "/no-such-root", NULL, 0, 0, &e);
    CHECK(rc == 0 && s.n_items == 2, "cache root: %s", rc ? e.msg : s.source);
    task_set_free(&s);
    if (sd) setenv("HIFA4_DATA", sd, 1); else unsetenv("HIFA4_DATA");
    if (sc) setenv("HIFA4_CACHE", sc, 1); else unsetenv("HIFA4_CACHE");
    free(sd);
    free(sc);
}

// ---- GPQA (fixture; the data is not shipped) ----
static void test_gpqa(void) {
    struct task_set s;
    struct err e;
    struct task_opts o = {0};
    o.file = FIX "/gpqa_mini.csv";
    o.seed = 1234;
    int rc = task_load("gpqa_diamond", &s, &o, &e);
    CHECK(rc == 0 && s.n_items == 3, "gpqa fixture: %s", e.msg);
    if (!rc && s.n_items == 3) {
        CHECK(s.seed == 1234 && strstr(s.source, "seed 1234"), "seed recorded");
        const char *opts[3][4] = {{"three", "five", "six. x", "four"},
                                  {"Oxygen", "Nitrogen", "Hydrogen", "Neon, a noble gas"},
                                  {"i1", "i2", "i3", "c3"}};
        const char *qs[3] = {"What is 2+2?\nThink \"carefully\".", "Which gas?", "Third?"};
        const char *ids[3] = {"rec1", "rec2", "2"};
        const char *letters[4] = {"(A)", "(B)", "(C)", "(D)"};
        for (int r = 0; r < 3; r++) {
            int perm[4], gold = -1;
            task_gpqa_perm(perm, 1234, r);
            int seen = 0;
            for (int k = 0; k < 4; k++) {
                seen |= 1 << perm[k];
                if (perm[k] == 3) gold = k;
            }
            CHECK(seen == 15, "perm is a permutation");
            char want[1024];
            snprintf(want, sizeof want,
                     "What is the correct answer to this question:%s\nChoices:\n(A) %s\n(B) %s\n(C) %s\n(D) %s\nAnswer:",
                     qs[r], opts[r][perm[0]], opts[r][perm[1]], opts[r][perm[2]], opts[r][perm[3]]);
            check_item(&s, ids[r], want, letters, 4, gold);
        }
    }
    task_set_free(&s);
    // same seed -> same order; the correct answer lands on each position about equally often
    int count[4] = {0}, same = 1, differs = 0;
    for (int r = 0; r < 4000; r++) {
        int a[4], b[4], c[4];
        task_gpqa_perm(a, 7, r);
        task_gpqa_perm(b, 7, r);
        task_gpqa_perm(c, 8, r);
        for (int k = 0; k < 4; k++) {
            same &= a[k] == b[k];
            differs |= a[k] != c[k];
            if (a[k] == 3) count[k]++;
        }
    }
    CHECK(same && differs, "seeded shuffle deterministic and seed-dependent");
    for (int k = 0; k < 4; k++) CHECK(count[k] > 880 && count[k] < 1120, "gold at %d: %d of 4000", k, count[k]);
    o.file = FIX "/gpqa_bad.csv";
    rc = task_load("gpqa_diamond", &s, &o, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "gpqa_bad.csv") && strstr(e.msg, "row starts at line 3"), "gpqa bad csv: %s", e.msg);
}

// ---- BBH ----
static void test_bbh(void) {
    if (!NEED("bbh")) return;
    struct task_set s;
    struct err e;
    int rc = load("bbh", &s, datasets, NULL, 0, 0, &e);
    CHECK(rc == 0, "bbh load: %s", e.msg);
    if (rc) return;
    CHECK(task_bbh_subtask_count() == 24, "24 subtasks");
    // SOURCE.md counts minus the 3 shots per subtask, minus the dropped defects
    struct { const char *name; int n; } want[] = {
        {"boolean_expressions", 247}, {"causal_judgement", 184}, {"date_understanding", 247},
        {"disambiguation_qa", 247}, {"formal_fallacies", 247}, {"geometric_shapes", 247}, {"hyperbaton", 247},
        {"logical_deduction_five_objects", 247}, {"logical_deduction_seven_objects", 247},
        {"logical_deduction_three_objects", 247}, {"movie_recommendation", 246}, {"navigate", 247},
        {"object_counting", 247}, {"penguins_in_a_table", 143}, {"reasoning_about_colored_objects", 247},
        {"ruin_names", 245}, {"salient_translation_error_detection", 247}, {"snarks", 174},
        {"sports_understanding", 247}, {"temporal_sequences", 247}, {"tracking_shuffled_objects_five_objects", 247},
        {"tracking_shuffled_objects_seven_objects", 247}, {"tracking_shuffled_objects_three_objects", 247},
        {"web_of_lies", 247}};
    int total = 0;
    for (int k = 0; k < 24; k++) {
        int n = 0;
        for (int i = 0; i < s.n_items; i++) n += !strcmp(s.items[i].subject, want[k].name);
        CHECK(n == want[k].n, "bbh %s: %d items, want %d", want[k].name, n, want[k].n);
        CHECK(!strcmp(task_bbh_subtask_name(k), want[k].name), "subtask %d name", k);
        total += want[k].n;
    }
    CHECK(s.n_items == total && total == 5685, "bbh %d items", s.n_items);
    CHECK(s.metrics == TASK_METRIC_ACC_NORM, "bbh reports acc_norm");
    CHECK(find_item(&s, "movie_recommendation/163") == NULL && find_item(&s, "ruin_names/99") == NULL &&
          find_item(&s, "boolean_expressions/2") == NULL, "defects and shots not scored");
    const char *tf[] = {"True", "False"};
    check_item(&s, "boolean_expressions/3",
               "Evaluate the result of a random Boolean expression.\n\n"
               "Q: not ( True ) and ( True ) is\nA: False\n\n"
               "Q: True and not not ( not False ) is\nA: True\n\n"
               "Q: not True or False or ( False ) is\nA: False\n\n"
               "Q: False or not ( True ) and False is\nA:", tf, 2, 1);
    const char *ab[] = {"(A)", "(B)"};
    check_item(&s, "hyperbaton/3",
               "Order adjectives correctly in English sentences.\n\n"
               "Q: Which sentence has the correct adjective order:\nOptions:\n(A) midsize old grey Brazilian sweater\n"
               "(B) midsize grey Brazilian old sweater\nA: (A)\n\n"
               "Q: Which sentence has the correct adjective order:\nOptions:\n(A) rubber gray walking Mexican midsize cat\n"
               "(B) midsize gray Mexican rubber walking cat\nA: (B)\n\n"
               "Q: Which sentence has the correct adjective order:\nOptions:\n(A) mysterious big Indian iron smoking motorcycle\n"
               "(B) big smoking mysterious Indian iron motorcycle\nA: (A)\n\n"
               "Q: Which sentence has the correct adjective order:\nOptions:\n(A) cloth smoking rectangular motorcycle\n"
               "(B) rectangular cloth smoking motorcycle\nA:", ab, 2, 1);
    // answer-set sizes: geometric_shapes lists up to 11 options, object_counting uses its 17 targets
    int max_geo = 0, oc = -1;
    for (int i = 0; i < s.n_items; i++) {
        if (!strcmp(s.items[i].subject, "geometric_shapes") && s.items[i].n_choices > max_geo) max_geo = s.items[i].n_choices;
        if (!strcmp(s.items[i].subject, "object_counting")) oc = s.items[i].n_choices;
    }
    CHECK(max_geo == 11 && oc == 17, "answer sets: geometric_shapes max %d, object_counting %d", max_geo, oc);
    task_set_free(&s);
}

// ---- exam ----
static void test_exam(void) {
    struct task_set s;
    struct err e;
    // fixture pool: a figure question, a repeated question and a choice naming a figure dropped
    int rc = load("exam", &s, NULL, FIX "/exampool", 0, 0, &e);
    CHECK(rc == 0 && s.n_items == 2, "exam fixture: rc %d n %d %s", rc, s.n_items, e.msg);
    if (!rc) {
        check_item(&s, "exampool/T1A01", "The following are multiple choice questions (with answers) about amateur radio.\n\n"
                                         "What is the purpose of the test pool?\nA. None\nB. Fun\nC. Testing the loader\n"
                                         "D. Profit\nAnswer:", NULL, 4, 2);
        check_item(&s, "exampool/T1A04", "The following are multiple choice questions (with answers) about amateur radio.\n\n"
                                         "It becomes necessary to test an FCC-style header.\nA. 10 inches\nB. 12 inches\n"
                                         "C. 15 inches\nD. 18 inches\nAnswer:", NULL, 4, 3);
        CHECK(strstr(s.source, "5 question files, 2 dropped (need a figure), 1 dropped (repeated question)") != NULL,
              "exam source: %s", s.source);
    }
    task_set_free(&s);
    // copies of the pools under a data root win over /usr/share (the *pngs figure dirs are skipped)
    rc = load("exam", &s, FIX "/datasets", NULL, 0, 0, &e);
    CHECK(rc == 0 && s.n_items == 2, "exam from a data root: rc %d n %d %s", rc, s.n_items, e.msg);
    if (!rc && s.n_items == 2) {
        CHECK(!strcmp(s.items[0].id, "hamexam/T/T1A01") && !strcmp(s.items[1].id, "fccexam/E1/1-10B1"), "ids %s %s",
              s.items[0].id, s.items[1].id);
        check_item(&s, "fccexam/E1/1-10B1",
                   "The following are multiple choice questions (with answers) about radio operation.\n\n"
                   "What information must be included in a Distress message?\nA. Name of vessel.\nB. Location.\n"
                   "C. Type of distress and specifics of help requested.\nD. All of the above.\nAnswer:", NULL, 4, 3);
        CHECK(strstr(s.source, FIX "/datasets/exam/hamexam") != NULL, "exam source %s", s.source);
    }
    task_set_free(&s);
    rc = load("exam", &s, NULL, FIX "/exampool_bad", 0, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "exampool_bad/T9Z01"), "exam bad file: %s", e.msg);
    // the Debian pools (CI installs hamexam and fccexam)
    if (!dir_exists("/usr/share/hamexam") || !dir_exists("/usr/share/fccexam")) {
        CHECK(0, "exam: /usr/share/hamexam and /usr/share/fccexam missing: apt-get install hamexam fccexam");
        return;
    }
    rc = load("exam", &s, NULL, NULL, 0, 0, &e);
    CHECK(rc == 0, "exam load: %s", e.msg);
    if (rc) return;
    printf("exam: %d items (%s)\n", s.n_items, s.source);
    CHECK(s.n_items > 4000, "exam %d items", s.n_items);
    check_item(&s, "hamexam/E/E0A01",
               "The following are multiple choice questions (with answers) about amateur radio.\n\n"
               "What is the primary function of an external earth connection or ground rod?\n"
               "A. Reduce received noise\nB. Lightning protection\nC. Reduce RF current flow between pieces of equipment\n"
               "D. Reduce RFI to telephones and home entertainment systems\nAnswer:", NULL, 4, 1);
    check_item(&s, "fccexam/E1/1-10B1",
               "The following are multiple choice questions (with answers) about radio operation.\n\n"
               "What information must be included in a Distress message?\nA. Name of vessel.\nB. Location.\n"
               "C. Type of distress and specifics of help requested.\nD. All of the above.\nAnswer:", NULL, 4, 3);
    const struct task_item *k = find_item(&s, "fccexam/E3/3-14B1");  // header "3-14B1 B)"
    CHECK(k && k->gold == 1, "stray ')' in fccexam key");
    int figs = 0;
    for (int i = 0; i < s.n_items; i++) figs += task_exam_needs_figure(s.items[i].context);
    CHECK(figs == 0, "%d figure questions left", figs);
    CHECK(strncmp(s.items[0].id, "hamexam/", 8) == 0 && strncmp(s.items[s.n_items - 1].id, "fccexam/", 8) == 0, "order");
    task_set_free(&s);
}

// ---- mc_jsonl / ppl ----
static void test_mc_jsonl(void) {
    struct task_set s;
    struct err e;
    int rc = load("mc_jsonl", &s, NULL, NULL, 0, 0, &e);
    CHECK(rc == ERR_USAGE, "mc_jsonl without --task-file");
    rc = load("mc_jsonl", &s, NULL, FIX "/mc_mini.jsonl", 0, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "mc_mini.jsonl:3"), "mc_jsonl bad row: %s", e.msg);
    rc = load("mc_jsonl", &s, NULL, FIX "/mc_badutf8.jsonl", 1, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "mc_badutf8.jsonl:2: not valid UTF-8"), "invalid UTF-8: %s", e.msg);
    rc = load("mc_jsonl", &s, NULL, FIX "/mc_mini.jsonl", 1, 0, &e);
    CHECK(rc == 0 && s.n_items == 3 && s.n_bad_rows == 1, "mc_jsonl skip");
    if (!rc) {
        check_item(&s, "p1", "The following are multiple choice questions (with answers).\n\nPick the prime.\nA. 4\nB. 6\nC. 7\nAnswer:",
                   NULL, 3, 2);
        check_item(&s, "1", "The following are multiple choice questions (with answers) about world geography.\n\n"
                            "Capital of France?\nA. Paris\nB. Rome\nAnswer:", NULL, 2, 0);
        check_item(&s, "17", "The following are multiple choice questions (with answers).\n\nLast?\nA. a\nB. b\nC. c\nD. d\nE. e\nAnswer:",
                   NULL, 5, 4);
    }
    task_set_free(&s);
    struct task_opts o = {0};
    o.file = FIX "/mc_mini.jsonl";
    o.subject = "trivia";
    o.skip_bad_rows = 1;
    rc = task_load("mc_jsonl", &s, &o, &e);
    const char *tr = "The following are multiple choice questions (with answers) about trivia.\n\nCapital";
    CHECK(rc == 0 && s.n_items == 3 && !strncmp(s.items[1].context, tr, strlen(tr)), "--subject overrides the row");
    task_set_free(&s);
}

static void test_ppl(void) {
    struct task_set s;
    struct err e;
    int rc;
    if (NEED("wikitext2")) {
        rc = load("ppl", &s, datasets, NULL, 0, 0, &e);
        CHECK(rc == 0 && s.is_ppl && s.n_items == 0, "ppl load: %s", e.msg);
        if (!rc) {
            // the original LF wiki.test.raw is 1,290,590 bytes (datasets/wikitext2/SOURCE.md)
            CHECK(s.text_len == 1290590 && strlen(s.text) == s.text_len, "wikitext rebuilt: %zu bytes", s.text_len);
            CHECK(strncmp(s.text, " \n = Robert Boulter = \n \n Robert Boulter is an English film", 58) == 0, "starts [%.60s]",
                  s.text);
            CHECK(strchr(s.text, '\r') == NULL, "no CR");
        }
        task_set_free(&s);
    }
    rc = load("ppl", &s, NULL, FIX "/ppl_mini.txt", 0, 0, &e);
    CHECK(rc == 0 && s.text_len == 25 && !strcmp(s.text, " = Title = \n\n Some text.\n"), "ppl --task-file as is");
    task_set_free(&s);
}

// ---- niah ----
// A tokenizer stand-in: one token per whitespace-separated word.
static int count_words(void *ctx, const char *s, size_t n) {
    (void)ctx;
    int w = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\n' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\n')) w++;
    return w;
}

static void test_niah(void) {
    struct task_set s;
    struct err e;
    struct task_opts o = {0};
    o.file = FIX "/haystack.txt";
    int rc = task_load("niah", &s, &o, &e);
    CHECK(rc == ERR_USAGE && strstr(e.msg, "tokenizer"), "niah without a tokenizer: %s", e.msg);
    o.count_tokens = count_words;
    o.niah_lengths = "25";
    o.niah_per_cell = 2;
    o.seed = 5;
    rc = task_load("niah", &s, &o, &e);
    CHECK(rc == 0 && s.n_items == 10, "niah: rc %d n %d %s", rc, s.n_items, e.msg);
    if (rc || s.n_items != 10) { task_set_free(&s); return; }
    // haystack words allowed: 25 - 6 (needle) - 11 (question) = 8, i.e. up to "Delta four."
    const char *fmt[5] = {
        "The special magic number is %s. Alpha one. Beta two. Gamma three. Delta four.%s",
        "Alpha one. The special magic number is %s. Beta two. Gamma three. Delta four.%s",
        "Alpha one. Beta two. The special magic number is %s. Gamma three. Delta four.%s",
        "Alpha one. Beta two. Gamma three. The special magic number is %s. Delta four.%s",
        "Alpha one. Beta two. Gamma three. Delta four. The special magic number is %s.%s"};
    const char *ids[5] = {"T25/d0/1", "T25/d25/0", "T25/d50/1", "T25/d75/0", "T25/d100/1"};
    const char *q = "\nWhat is the special magic number? The special magic number is";
    for (int k = 0; k < 5; k++) {
        const struct task_item *it = find_item(&s, ids[k]);
        CHECK(it != NULL, "niah item %s", ids[k]);
        if (!it) continue;
        char want[512];
        snprintf(want, sizeof want, fmt[k], it->choices[it->gold], q);
        CHECK(strcmp(it->context, want) == 0, "niah %s:\n got  [%s]\n want [%s]", ids[k], it->context, want);
    }
    int distinct = 1, digits = 1, gold_pos = 0;
    for (int i = 0; i < s.n_items; i++) {
        const struct task_item *it = &s.items[i];
        CHECK(it->n_choices == 10 && count_words(NULL, it->context, strlen(it->context)) == 25, "niah %s size", it->id);
        for (int a = 0; a < 10; a++) {
            digits &= strlen(it->choices[a]) == 7 && strspn(it->choices[a], "0123456789") == 7;
            for (int b = 0; b < a; b++) distinct &= strcmp(it->choices[a], it->choices[b]) != 0;
        }
        gold_pos |= 1 << it->gold;
    }
    CHECK(distinct && digits && gold_pos != 1, "10 distinct 7-digit numbers; gold not always first");
    CHECK(strcmp(s.items[0].id, "T25/d0/0") == 0 && strcmp(s.items[0].subject, "T25/d0") == 0, "order and subject");
    task_set_free(&s);
    o.niah_lengths = "16";
    rc = task_load("niah", &s, &o, &e);
    CHECK(rc == ERR_RANGE && strstr(e.msg, "T=16"), "T below needle+question: %s", e.msg);
}

// ---- hostile inputs ----
// A loader that fails before task_set_begin (niah without a tokenizer) must leave the caller's
// set empty, whatever it held: task_load used to free the uninitialised set (`prompts --task
// niah` segfaulted). An empty data file - or one whose every row is malformed and skipped -
// is an error naming the task and the file, not a task of 0 items scored after all the others.
static void test_hostile(void) {
    struct task_set s;
    struct err e = {0};
    struct task_opts o = {.file = FIX "/haystack.txt", .limit = 1};
    memset(&s, 0xa5, sizeof s); // what an uninitialised stack variable may hold
    int rc = task_load("niah", &s, &o, &e);
    CHECK(rc == ERR_USAGE && strstr(e.msg, "tokenizer") && s.items == NULL && s.n_items == 0,
          "niah without a tokenizer on a dirty set: rc %d: %s", rc, e.msg);
    char tmp[1024], empty[1100], blank[1100], bad[1100];
    const char *t = getenv("HIFA4_TMP");
    snprintf(tmp, sizeof tmp, "%s/tasks_hostile", t ? t : "build/tmp");
    mkdir_p(tmp, NULL);
    snprintf(empty, sizeof empty, "%s/empty.jsonl", tmp);
    snprintf(blank, sizeof blank, "%s/blank.jsonl", tmp);
    snprintf(bad, sizeof bad, "%s/bad.jsonl", tmp);
    file_write_atomic(empty, "", 0, NULL);
    file_write_atomic(blank, "\n  \n\t\n", 6, NULL);
    file_write_atomic(bad, "{\"question\": 1}\nnot json\n", 25, NULL);
    static const char *const tasks[] = {"mc_jsonl", "arc_easy", "hellaswag", "truthfulqa_mc1", "mmlu"};
    for (size_t k = 0; k < sizeof tasks / sizeof tasks[0]; k++) {
        rc = load(tasks[k], &s, NULL, empty, 0, 0, &e);
        CHECK(rc == ERR_FORMAT && strstr(e.msg, tasks[k]) && strstr(e.msg, "empty.jsonl") && s.n_items == 0,
              "%s on an empty file: rc %d: %s", tasks[k], rc, e.msg);
    }
    rc = load("mc_jsonl", &s, NULL, blank, 0, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "blank.jsonl") && strstr(e.msg, "no items"), "blank lines only: %s", e.msg);
    rc = load("mc_jsonl", &s, NULL, bad, 1, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "bad.jsonl") && strstr(e.msg, "all 2 rows are malformed"),
          "every row skipped: %s", e.msg);
    rc = load("ppl", &s, NULL, empty, 0, 0, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "ppl") && strstr(e.msg, "empty.jsonl"), "ppl on an empty file: %s", e.msg);
    o = (struct task_opts){.file = empty, .count_tokens = count_words, .niah_lengths = "25"};
    rc = task_load("niah", &s, &o, &e);
    CHECK(rc == ERR_FORMAT && strstr(e.msg, "haystack") && strstr(e.msg, "empty.jsonl"), "niah on an empty haystack: %s", e.msg);
}

// `hifa4-eval prompts` prints the loaded items as JSONL (run from `make test`, HIFA4_BIN set)
static void test_cli(void) {
    const char *bin = getenv("HIFA4_BIN");
    if (!bin || !bin[0]) { printf("HIFA4_BIN not set: skipping the prompts CLI check\n"); return; }
    char cmd[4096], exe[512];
    snprintf(exe, sizeof exe, "%s%s", strchr(bin, '/') ? "" : "./", bin);  // Makefile passes a bare name
    bin = exe;
    FILE *f = NULL;
    if (NEED("truthfulqa")) {
        snprintf(cmd, sizeof cmd, "%s prompts --task truthfulqa_mc1 --data-dir %s --limit 2 2>/dev/null", bin, datasets);
        f = popen(cmd, "r");
        CHECK(f != NULL, "popen");
    }
    if (f) {
        char line[8192];
        int n = 0, ok0 = 0;
        while (fgets(line, sizeof line, f)) {
            n++;
            cJSON *j = cJSON_Parse(line);
            const cJSON *ctx = cJSON_GetObjectItem(j, "context"), *g = cJSON_GetObjectItem(j, "gold");
            if (n == 1 && cJSON_IsString(ctx) && cJSON_IsNumber(g) && g->valueint == 0 &&
                strstr(ctx->valuestring, "\n\nQ: What happens if you eat a pomegranate?\nA:"))
                ok0 = 1;
            cJSON_Delete(j);
        }
        int st = pclose(f);
        CHECK(st == 0 && n == 2 && ok0, "prompts CLI: status %d, %d lines", st, n);
    }
    snprintf(cmd, sizeof cmd, "%s prompts --task hellaswag --data-dir " FIX "/no-such-root >/dev/null 2>&1", bin);
    int st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "missing data exits 1: %d", st);
}

// --limit on grouped tasks keeps the first N items of every subject / subtask (lm-eval applies
// --limit to each subtask of a group), not the first N of the concatenation.
static void test_limit_real(void) {
    struct task_opts o = {.data_dir = datasets, .limit = 2};
    struct task_set s = {0};
    struct err e = {0};
    int rc = task_find("mmlu")->load(&s, &o, &e);
    CHECK(rc == 0 && s.n_items == 57 * 2, "mmlu --limit 2: %d items (%s)", s.n_items, e.msg);
    int ok = rc == 0;
    for (int i = 0; ok && i < s.n_items; i++) {
        const char *id = s.items[i].id, *slash = strrchr(id, '/');
        ok = slash && atoi(slash + 1) == i % 2 && !strcmp(s.items[i].subject, s.items[i - i % 2].subject);
    }
    CHECK(ok, "mmlu --limit 2 keeps rows 0 and 1 of every subject");
    CHECK(rc || !strcmp(s.items[2].id, "anatomy/0"), "third item is anatomy/0, got %s", rc ? "-" : s.items[2].id);
    task_set_free(&s);
    o.limit = 3;
    rc = task_find("bbh")->load(&s, &o, &e);
    CHECK(rc == 0 && s.n_items == 24 * 3, "bbh --limit 3: %d items (%s)", s.n_items, e.msg);
    task_set_free(&s);
}

static void test_limit_per_subject(void) {
    if (NEED("mmlu") && NEED("bbh")) test_limit_real();
    // hand case: subjects A A A B NULL NULL C with limit 2 -> A A B NULL NULL C
    struct task_set h = {0};
    const char *subj[7] = {"A", "A", "A", "B", NULL, NULL, "C"};
    h.items = calloc(7, sizeof *h.items);
    h.n_items = 7;
    for (int i = 0; i < 7; i++) {
        char id[8];
        snprintf(id, sizeof id, "%d", i);
        h.items[i].id = str_dup(id);
        h.items[i].subject = subj[i] ? str_dup(subj[i]) : NULL;
        h.items[i].context = str_dup("");
    }
    struct task_opts l2 = {.limit = 2};
    task_apply_limit_per_subject(&h, &l2);
    CHECK(h.n_items == 6 && !strcmp(h.items[2].id, "3") && !strcmp(h.items[3].id, "4") && !strcmp(h.items[5].id, "6"),
          "per-subject limit on a hand list: %d items", h.n_items);
    task_set_free(&h);
}

// --subjects: the list matcher, the filter on a real loader (mmlu JSONL: subjects a_sub, b_sub),
// and on bbh's real data when present (its first 3 subtasks, the prefix-cache measurement).
static void test_subjects(void) {
    CHECK(task_subject_listed("a,bc,d", "bc") && task_subject_listed("a,bc,d", "a") && task_subject_listed("a,bc,d", "d") &&
              !task_subject_listed("a,bc,d", "b") && !task_subject_listed("a,bc,d", "a,bc") && !task_subject_listed("ab", "a") &&
              !task_subject_listed("a,bc,d", NULL) && !task_subject_listed(NULL, "a"),
          "subject list matching is by whole name");
    struct task_opts o = {.file = FIX "/mmlu_mini.jsonl", .skip_bad_rows = 1, .subjects = "b_sub"};
    struct task_set s;
    struct err e = {0};
    int rc = task_load("mmlu", &s, &o, &e);
    CHECK(rc == 0 && s.n_items == 2 && !strcmp(s.items[0].id, "b_sub/0") && !strcmp(s.items[1].id, "b_sub/1"),
          "--subjects b_sub keeps b_sub's 2 items in order (rc %d, n %d)", rc, s.n_items);
    task_set_free(&s);
    o.subjects = "b_sub,nope,a_sub";
    rc = task_load("mmlu", &s, &o, &e);
    CHECK(rc == 0 && s.n_items == 3 && !strcmp(s.items[0].id, "a_sub/0"), "a list keeps the task's order, not the list's");
    task_set_free(&s);
    o.subjects = "nope";
    rc = task_load("mmlu", &s, &o, &e);
    CHECK(rc == ERR_NOTFOUND && strstr(e.msg, "'nope'") && strstr(e.msg, "a_sub, b_sub") && s.n_items == 0,
          "no listed subject: an error naming the task's subjects: %s", e.msg);
    if (NEED("bbh")) {
        struct task_opts b = {.data_dir = datasets, .limit = 2, .subjects = "boolean_expressions,causal_judgement,date_understanding"};
        rc = task_load("bbh", &s, &b, &e);
        CHECK(rc == 0 && s.n_items == 6 && !strcmp(s.items[0].subject, "boolean_expressions") &&
                  !strcmp(s.items[5].subject, "date_understanding"), "bbh's first 3 subtasks, 2 items each (rc %d, n %d)", rc, s.n_items);
        task_set_free(&s);
        if (NEED("arc")) {
            struct task_opts a = {.data_dir = datasets, .limit = 5, .subjects = "boolean_expressions"};
            rc = task_load("arc_challenge", &s, &a, &e);
            CHECK(rc == 0 && s.n_items == 5, "a task without subjects is left whole");
            task_set_free(&s);
        }
    }
}

int main(void) {
    datasets = test_data("datasets");
    test_subjects();
    test_registry();
    test_limit_per_subject();
    test_preprocess();
    test_csv();
    test_csv_random();
    test_mmlu();
    test_mmlu_jsonl();
    test_hellaswag();
    test_hellaswag_fixtures();
    test_arc();
    test_arc_fixture();
    test_truthfulqa();
    test_lookup();
    test_gpqa();
    test_bbh();
    test_exam();
    test_mc_jsonl();
    test_ppl();
    test_niah();
    test_hostile();
    test_cli();
    return test_summary("test_tasks");
}
