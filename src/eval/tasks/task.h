// task.h: benchmark task loaders (spec/tasks.md section 2). A loader turns a dataset file into
// multiple-choice items whose context is the exact prompt string and whose choices are the
// continuation texts without the target delimiter; a ppl task just loads its text. Loaders
// know nothing about tokenizers or models: request building and scoring are eval.c's job.
// The second half of this header holds helpers shared by the loaders (data lookup, CSV,
// string building, the MMLU template); eval code only needs the first half.
#ifndef HIFA4_TASK_H
#define HIFA4_TASK_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/common.h"

#define TASK_METRIC_ACC 1u
#define TASK_METRIC_ACC_NORM 2u

struct task_item {
    char *id;        // stable unique id within the task, e.g. "abstract_algebra/17" (0-based row)
    char *subject;   // subject / subtask, or NULL
    char *context;   // the exact prompt (spec/tasks.md section 2), no trailing target delimiter
    int n_choices;
    char **choices;  // choice strings WITHOUT the target delimiter ("A", "Paris", ...)
    int gold;        // index into choices
};

struct task_set {
    char name[64];
    const char *delim;   // target delimiter, " " for every built-in task (static string)
    int n_items;
    struct task_item *items;
    int is_ppl;          // ppl task: items unused, text holds the document(s)
    char *text;
    size_t text_len;
    unsigned metrics;    // TASK_METRIC_ACC | TASK_METRIC_ACC_NORM (which ones the task reports)
    char source[1024];   // files read (resolved paths) and which form (e.g. hellaswag text form)
    char template_version[32];
    int n_bad_rows;      // rows skipped under skip_bad_rows
    int n_odd_choices;   // items with an empty/blank option or two equal options: scored as
                         // lm-eval scores them (every option; equal scores tie to the first),
                         // counted for the report (task_load)
    char odd_first[128]; // the first such item: "id 'X': option 2 is empty"
    uint64_t seed;       // seed used (gpqa shuffle), recorded
    int generate;        // > 0: scored by greedy decoding of this many tokens (niah's generation
                         // form): correct when the decoded text contains choices[gold]
};
#define NIAH_GEN_TOKENS 8 // tokens the generation form of niah decodes (the paper's Table 4)

// Token counter for tasks whose prompts are sized in tokens (niah): the number of tokens of
// s[0..n) under the model's tokenizer, without BOS; negative on error.
typedef int (*task_count_tokens_fn)(void *ctx, const char *s, size_t n);

struct task_opts {
    const char *data_dir;  // --data-dir (may be NULL)
    const char *file;      // explicit file for mc_jsonl / ppl / exam pool dir / niah haystack (may be NULL)
    const char *subject;   // mc_jsonl --subject
    const char *subjects;  // --subjects a,b: keep only items of these subjects / subtasks (NULL: all);
                           // applied by task_load after the loader (and its per-subject --limit)
    int skip_bad_rows;
    uint64_t seed;
    int limit;             // 0 = all; otherwise the first `limit` items in the task's canonical
                           // order - of EACH subject for mmlu and of each subtask for bbh, as
                           // lm-eval's --limit applies to every subtask of a group
    // niah only (others ignore these):
    task_count_tokens_fn count_tokens;  // required by niah
    void *count_ctx;
    const char *niah_lengths;  // comma list of haystack sizes T in tokens (NULL: "1024,2048,4096")
    int niah_per_cell;         // items per (T, depth) cell (0: 4)
    int niah_generate;         // 1: the generation form (--niah-form generate); 0: likelihood
};

struct task_def {
    const char *name;
    const char *desc;
    // Fills *out (zeroed by the caller or not: load zeroes it first). On error *out is left
    // empty (freed) and e names the file and line. Ownership of everything in *out passes to
    // the caller, who releases it with task_set_free.
    int (*load)(struct task_set *out, const struct task_opts *o, struct err *e);
};

// Registry of built-in tasks in a fixed order (task_at(0..task_count()-1)). task_find returns
// NULL for an unknown name. The returned pointers are static.
int task_count(void);
const struct task_def *task_at(int i);
const struct task_def *task_find(const char *name);
// Convenience: find + load; unknown name is ERR_NOTFOUND listing the known tasks. A task that
// loads but holds no item (ppl: no text) - an empty file, only blank lines, every row skipped
// as malformed - is ERR_FORMAT naming the task and its data. *out is zeroed first and left
// empty on error.
int task_load(const char *name, struct task_set *out, const struct task_opts *o, struct err *e);
// Paths, relative to a data root, that a task reads by default (the downloader's manifests
// datasets/<task>.json use the same ones): a static NULL-terminated list; a path ending in '/'
// is a directory (mmlu: the 57 <subject>_test.csv, bbh: the <subtask>.json files); for
// hellaswag and gpqa_diamond the entries are alternatives tried in order; exam's are optional
// copies of the Debian pools (else /usr/share/hamexam, /usr/share/fccexam). Empty list for
// mc_jsonl (--task-file only); NULL for an unknown task.
const char *const *task_data_paths(const char *name);
// Frees every item and the text; safe on a zeroed or half-built set; leaves it zeroed.
void task_set_free(struct task_set *s);

// ============================================================================================
// ---- helpers shared by the loaders (data.c, registry.c) ----

// Data lookup (data.c). Roots, tried in order: o->data_dir, $HIFA4_DATA, $HIFA4_CACHE/datasets
// or else $HOME/.cache/hifa4/datasets. Each root has the layout of ../shared/datasets.
// task_data_try: 1 and the resolved path in out when rel exists under some root as a regular
// file (want_dir=0) or a directory (want_dir=1), else 0.
int task_data_try(char *out, size_t n, const struct task_opts *o, const char *rel, int want_dir);
// Fills e with ERR_NOTFOUND: names the task, every relative path in rels (n_rels of them, the
// alternatives tried), every root with its origin, and suggests `hifa4-eval download --task`.
int task_data_missing(struct err *e, const struct task_opts *o, const char *task,
                      const char *const *rels, int n_rels);
// try + missing for a single file/dir.
int task_data_find(char *out, size_t n, const struct task_opts *o, const char *task,
                   const char *rel, int want_dir, struct err *e);

// Growable string (all append functions return 0 or ERR_NOMEM; s->p is always NUL-terminated
// once anything was appended). Owned by the caller: free(s->p).
struct sbuf { char *p; size_t n, cap; };
int sb_putn(struct sbuf *s, const char *p, size_t n);
int sb_puts(struct sbuf *s, const char *p);
int sb_printf(struct sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Detaches the string (an empty one if nothing was appended); NULL on OOM.
char *sb_take(struct sbuf *s);

// RFC 4180 CSV reader over an in-memory buffer. Quoted fields may hold commas, "" escapes and
// line breaks; a CR before a row's LF is dropped, CRs inside quotes are kept; a missing final
// newline is fine. A quote inside an unquoted field or text after a closing quote is an error.
struct csv_reader {
    const char *p, *end;
    const char *path;  // for messages
    int line;          // 1-based line where the next row starts
    char **fields;     // current row (owned by the reader, valid until the next call)
    int n_fields, cap_fields;
    struct sbuf field;
};
void csv_init(struct csv_reader *r, const char *buf, size_t len, const char *path);
// 1 = a row was read (r->fields, r->n_fields; *row_line = its first line), 0 = end of input,
// negative = ERR_FORMAT/ERR_NOMEM naming path and line. Blank lines are skipped.
int csv_next(struct csv_reader *r, int *row_line, struct err *e);
void csv_free(struct csv_reader *r);

// file_read_all (zstd-aware) plus UTF-8 validation: invalid UTF-8 is ERR_FORMAT naming the
// path and the first bad line. *buf owned by the caller (free).
int task_read_text(const char *path, char **buf, size_t *len, struct err *e);

// Python str.strip(): removes leading/trailing whitespace (ASCII whitespace, U+001C-U+001F,
// U+0085 and Unicode Zs/Zl/Zp) from a UTF-8 string; returns a new malloc'd string.
char *task_strip(const char *s, size_t n);
// Length of the line starting at p (up to '\n' or end), without a trailing '\r'.
size_t task_line_len(const char *p, const char *end);
// Iterator over the non-blank lines of a text buffer (JSONL rows): blank lines (only spaces
// and tabs) are skipped, a trailing '\r' is dropped. lineno is the 1-based number of the
// line just returned, counting blank lines, for "file:line" errors.
struct task_lines {
    const char *p, *end;
    int lineno;
};
void task_lines_init(struct task_lines *it, const char *buf, size_t len);
// 1 with *line (not NUL-terminated) and *len set, 0 at the end of the buffer.
int task_lines_next(struct task_lines *it, const char **line, size_t *len);

// One JSONL row (a line from task_lines_next) -> *out (cJSON_Delete): exactly one JSON value
// (json_parse), no CR left inside the line (a lone CR: the file's line endings are not LF or
// CRLF) and no NUL, raw or as \u0000, anywhere. Errors are ERR_FORMAT "<ctx>: ..." naming the
// column (a CR-only file was one item, a NUL cut a question short).
int task_jsonl_parse(cJSON **out, const char *line, size_t len, const char *ctx, struct err *e);

// The MMLU template of spec/tasks.md section 2 (also used by exam and mc_jsonl):
// "The following are multiple choice questions (with answers) about " + subject + ".\n\n" +
// question.strip() + "\nA. " + c0 + ... + "\nAnswer:". subject may be NULL: then the header
// is "The following are multiple choice questions (with answers).\n\n" (mc_jsonl only).
// subject is used as given (callers replace "_" by " "). n <= 26.
char *task_mmlu_prompt(const char *subject, const char *question, const char *const *choices, int n);

// Item building. task_push_item takes ownership of nothing: it copies every string.
// choices may be NULL for letter choices ("A".. n letters).
int task_push_item(struct task_set *s, const char *id, const char *subject, const char *context,
                   const char *const *choices, int n_choices, int gold);
// Same but adopts the malloc'd context (freed on failure too).
int task_push_item_own(struct task_set *s, const char *id, const char *subject, char *context,
                       const char *const *choices, int n_choices, int gold);
// A malformed row: with o->skip_bad_rows counts it in s->n_bad_rows, warns and returns 0;
// else fills e with ERR_FORMAT "<path>:<line>: <msg>" (just "<path>: " for line <= 0) and
// returns it.
int task_bad_row(struct task_set *s, const struct task_opts *o, struct err *e, const char *path,
                 int line, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
// Appends "; "-separated text to s->source (truncating with "..." if it does not fit).
void task_source_add(struct task_set *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Keeps the first o->limit items (no-op for limit <= 0), freeing the rest.
void task_apply_limit(struct task_set *s, const struct task_opts *o);
// Keeps the first o->limit items of every run of consecutive items with the same subject
// (grouped tasks: mmlu subjects, bbh subtasks), freeing the rest.
void task_apply_limit_per_subject(struct task_set *s, const struct task_opts *o);
// Keeps the items for which keep(item, ctx) is non-zero (order kept), freeing the rest.
void task_keep_if(struct task_set *s, int (*keep)(const struct task_item *it, const void *ctx), const void *ctx);

// ---- --subjects (eval/tasks/subjects.c) ----
// 1 when `subject` is one of the names of the comma list `subjects` (exact, case-sensitive).
int task_subject_listed(const char *subjects, const char *subject);
// 1 when some item of s has this subject.
int task_has_subject(const struct task_set *s, const char *subject);
// Writes "a, b, ... (N in all)": the first distinct subjects of s, for error messages.
void task_subject_list(char *out, size_t n, const struct task_set *s);
// Keeps only the items whose subject is listed. A task whose items have no subject (arc, ppl)
// is left whole; a task with subjects of which none is listed is ERR_NOTFOUND naming some of them.
int task_keep_subjects(struct task_set *s, const char *subjects, struct err *e);
// Common start of every loader: zero *s, set name, delim " ", metrics, template version, seed.
void task_set_begin(struct task_set *s, const char *name, unsigned metrics, const char *tmpl_version,
                    const struct task_opts *o);

// HellaSwag preprocessing (spec/tasks.md section 2), exposed for tests. Return malloc'd strings.
// pre: strip, " [title]" -> ". ", delete every "[...]" (non-greedy, no newline inside),
// "  " -> " " (one pass). cap: Python str.capitalize() (first code point title-cased, the rest
// lower-cased, via utf8proc).
char *task_hellaswag_pre(const char *s);
char *task_py_capitalize(const char *s);

// Task-specific pieces exposed for tests: the GPQA option permutation for (seed, row)
// (perm[k] = original option at position k; originals: incorrect 1-3, then correct = 3), the
// exam figure filter, and the BBH subtask table.
void task_gpqa_perm(int perm[4], uint64_t seed, int row);
int task_exam_needs_figure(const char *s);
int task_bbh_subtask_count(void);
const char *task_bbh_subtask_name(int i);
// The 57 MMLU subjects in canonical order (their files are <subject>_test.csv); NULL out of range.
int task_mmlu_subject_count(void);
const char *task_mmlu_subject_name(int i);

// splitmix64 step (the PRNG behind seeded shuffles).
uint64_t task_rng_next(uint64_t *state);

#endif
