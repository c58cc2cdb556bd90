// fuzz_jsonl_lines.c: the line splitting of the JSONL task readers over arbitrary
// bytes: task_lines_next + task_jsonl_parse, the path every JSONL loader takes, and mc_jsonl
// through its real --task-file path. Invariants: the lines cover the buffer in order, split at
// every LF and nowhere else; an accepted row holds no CR and no NUL (raw or \u0000) and is one
// JSON value - the row doubled ("v v"), a CR put before it or a NUL byte appended inside are
// refused; a blank line is never a row; mc_jsonl's items plus its skipped rows are its rows.
// fuzz-seeds: tests/data/tasks/*.jsonl tests/data/fuzz/jsonl_lines/*
// fuzz-max-len: 4096
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval/tasks/task.h"
#include "fuzz.h"
#include "fuzz_task.h"

static void fail(const char *what, const char *line, size_t n) {
    fprintf(stderr, "jsonl_lines: %s: '%.*s'\n", what, (int)(n > 200 ? 200 : n), line);
    abort();
}

static int accepts(const char *line, size_t n) {
    cJSON *j = NULL;
    struct err e = {0};
    int ok = task_jsonl_parse(&j, line, n, "fuzz", &e) == 0;
    if (!ok && (!e.code || !e.msg[0])) fail("refused without a message", line, n);
    cJSON_Delete(j);
    return ok;
}

// Checks one accepted row against the rows made from it that must be refused.
static void check_row(const char *line, size_t n) {
    if (memchr(line, '\r', n) || memchr(line, 0, n)) fail("a row with a CR or NUL accepted", line, n);
    char *b = malloc(2 * n + 2);
    memcpy(b, line, n), b[n] = ' ', memcpy(b + n + 1, line, n);
    if (accepts(b, 2 * n + 1)) fail("two values on one line accepted", line, n);
    b[0] = '\r', memcpy(b + 1, line, n);
    if (accepts(b, n + 1)) fail("a lone CR accepted", line, n);
    memcpy(b, line, n), b[n] = 0;
    if (accepts(b, n + 1)) fail("a NUL after the value accepted", line, n);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *buf = (const char *)data;
    struct task_lines it;
    task_lines_init(&it, buf, size);
    const char *lp, *prev_end = buf;
    size_t ll;
    int rows = 0, lf = 0;
    for (size_t k = 0; k < size; k++) lf += buf[k] == '\n';
    while (task_lines_next(&it, &lp, &ll)) {
        if (lp < prev_end || lp + ll > buf + size) fail("a line outside the buffer or out of order", lp, ll);
        if (memchr(lp, '\n', ll)) fail("a line holding an LF", lp, ll);
        if (lp > buf && lp[-1] != '\n') fail("a line not starting after an LF", lp, ll);
        size_t k = 0;
        while (k < ll && (lp[k] == ' ' || lp[k] == '\t')) k++;
        if (k == ll) fail("a blank line returned as a row", lp, ll);
        if (it.lineno < 1 || it.lineno > lf + 1) fail("a line number outside the file", lp, ll);
        prev_end = lp + ll;
        rows++;
        if (accepts(lp, ll)) check_row(lp, ll);
    }
    // mc_jsonl through its file: with --skip-bad-rows every row is an item or a skipped row
    char path[1024];
    fz_write(path, sizeof path, "in.jsonl", data, size);
    struct task_opts o = {.file = path, .skip_bad_rows = 1, .seed = 1};
    struct task_set s;
    struct err e = {0};
    if (task_load("mc_jsonl", &s, &o, &e) == 0) {
        fz_check_set(&s);
        if (s.n_items + s.n_bad_rows != rows) {
            fprintf(stderr, "jsonl_lines: %d items + %d skipped rows, %d rows\n", s.n_items, s.n_bad_rows, rows);
            abort();
        }
        task_set_free(&s);
    }
    return 0;
}
