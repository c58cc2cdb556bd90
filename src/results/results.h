// results.h: the run directory of DESIGN.md section 4. Per-item sample logs
// samples-<task>-<mode>.jsonl.zst (one JSON line per item, appended crash-safely as complete
// zstd frames of RESULTS_FRAME_ITEMS items so a killed run resumes and ends byte-identical to
// an uninterrupted one), their reader, JSON file helpers and summary.json (the statistics of
// spec/tasks.md section 3, computed from the samples files alone so `report` can redo it).
#ifndef HIFA4_RESULTS_H
#define HIFA4_RESULTS_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

#include "base/common.h"

// Items per zstd frame. Frame boundaries depend only on item indices, never on batches or
// on where a run was interrupted, which is what makes resumed files byte-identical.
#define RESULTS_FRAME_ITEMS 64

// ---- one sample (one item under one mode) ----
struct results_sample {
    int idx;            // item index in the task
    char *id;           // item id (owned)
    char *subject;      // or NULL (owned)
    int gold, n_choices;
    double *ll;         // [n_choices] option logliks (NAN when not finite on disk: null)
    int *n_chars, *n_tok, *greedy; // [n_choices]
    int pred, pred_norm;
    double margin;      // NAN with one choice
    int n_kl;           // token-level rows compared with the reference (0 for the reference)
    double *kl;         // [n_kl]
    int top1_same;
    int nonfinite;      // 1: a log-likelihood was not finite (run --nonfinite count): the item is
                        // left out of every statistic; written only when set
    char *generated;    // niah's generation form: the decoded text (owned), else NULL (not written)
};
void results_sample_free(struct results_sample *s);

// Growable byte buffer (NUL-terminated once anything was appended). Caller frees b->p.
// The first error of a put/printf is kept in err: later calls append nothing and return it.
struct results_buf { char *p; size_t n, cap; int err; };
int results_buf_put(struct results_buf *b, const char *s, size_t n);
int results_buf_printf(struct results_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Appends the JSON line of s (with its '\n') to b. Keys in a fixed order, doubles printed
// with %.17g (round-trip exact), so equal samples give equal bytes.
int results_sample_line(struct results_buf *b, const struct results_sample *s);
// Parses one line; ctx names file:line in errors. *s owned by the caller (results_sample_free).
int results_sample_parse(struct results_sample *s, const char *line, size_t len, const char *ctx, struct err *e);

// Reads a whole samples file (any number of complete frames); item indices must be consecutive
// (a shard starts at its first item). *out is an array of *n samples
// (free each with results_sample_free, then free(*out)). A truncated last frame is an error
// (use results_writer_open with resume to repair a killed run's file).
int results_samples_read(const char *path, struct results_sample **out, int *n, struct err *e);
// The samples file of task/mode in run directory dir, whose run.json is `run` (run_rec.h): its stamp checked
// first (stamp.h: a file of another run, task or mode is ERR_MISMATCH naming it and the fix).
struct run_rec;
int results_samples_read_run(const char *dir, const struct run_rec *run, const char *task, const char *mode,
                             struct results_sample **out, int *n, struct err *e);
// The same over the decompressed text of a samples file (buf, len; path names it in errors).
int results_samples_parse_text(const char *buf, size_t len, const char *path, struct results_sample **out, int *n,
                               struct err *e);

// ---- crash-safe writer ----
struct results_writer {
    FILE *f;
    char path[4096];
    struct results_buf pending; // lines not yet in a frame
    int n_pending;
    int n_items;                // items written to the file or pending
    void *cctx;                 // ZSTD_CCtx
};
// Counts the items in the complete frames of an existing file (0 if it does not exist);
// a torn frame at the end (a killed run) is ignored.
int results_samples_count(const char *path, int *n_items, struct err *e);
// The same over the raw (compressed) bytes of a samples file.
int results_samples_count_mem(const char *raw, size_t len, const char *path, int *n_items, struct err *e);
// Opens path for appending. keep_items = 0 truncates/creates; otherwise keep_items must be a
// multiple of RESULTS_FRAME_ITEMS (or the file's whole item count) and the file is cut right
// after the frame that holds item keep_items-1.
// A new file (keep_items 0) starts with stamp's frame when stamp is not NULL (stamp.h); a kept
// file keeps the stamp it has.
struct results_stamp;
int results_writer_open(struct results_writer *w, const char *path, int keep_items, const struct results_stamp *stamp,
                        struct err *e);
// Adds one sample's line; writes and flushes a frame every RESULTS_FRAME_ITEMS items.
int results_writer_add(struct results_writer *w, const struct results_sample *s, struct err *e);
// Adds one line as results_sample_line made it (len bytes ending in its '\n'; a line of a
// distributed run's worker rank). Not one line: ERR_INTERNAL.
int results_writer_add_line(struct results_writer *w, const char *line, size_t len, struct err *e);
// Writes the last partial frame, fsyncs and closes. Safe on a zeroed writer.
int results_writer_close(struct results_writer *w, struct err *e);
// Closes without writing pending items (error paths).
void results_writer_abort(struct results_writer *w);

// ---- files of a run ----
// "<dir>/samples-<task>-<mode>.jsonl.zst" ('/' and other unsafe characters of the mode -> '_';
// '+' kept).
int results_samples_path(char *out, size_t n, const char *dir, const char *task, const char *mode, struct err *e);
// Pretty-prints j to path atomically (trailing newline).
int results_write_json(const char *path, const cJSON *j, struct err *e);
// The configuration key of run.json object `run` ("resume_key"): for a schema-2 run the sha256
// of its identity (run_identity.h: the explicit list of every input that can change a number);
// for a schema-1 run (no "schema" field) the key its binary computed, so its samples files'
// stamps still check. with_shard adds the "shard" field. Equal keys: a run may be resumed over
// another, or shards merged; run_identity_diff names what differs when they are not equal.
void results_config_key(char hex[65], const cJSON *run, int with_shard);
// The Q-Mean form a run.json records (attention.qmean): "token" or "channel"; "token" for
// files written before the option existed (the paper's Alg. 1 was the only form). Static or
// run-owned storage.
const char *results_run_qmean(const cJSON *run);
// 0 when run.json (the record `run` of directory dir) says "complete": true - every samples
// file, summary.json, report.md, tables and plots were written - else ERR_MISMATCH naming the
// directory and how to finish it (run --resume). report, diff and tables refuse such a run:
// its samples files may hold fewer items in one mode than another (a killed run).
int results_check_complete(const char *dir, const struct run_rec *run, struct err *e);
// summary.json (object sum) of run directory dir belongs to its run.json (record run): its
// "run_key" stamp equals run.json's "resume_key" (a summary or run.json without them, written
// before the stamp, is accepted). Else ERR_MISMATCH naming both keys and `report DIR`, the fix.
int results_summary_check(const char *dir, const struct run_rec *run, const cJSON *sum, struct err *e);
// Default run directory results/<model basename>-<UTC yyyymmdd-hhmmss>.
int results_default_dir(char *out, size_t n, const char *model, struct err *e);

// ---- summary (spec/tasks.md section 3) ----
// Builds summary.json's object from the run directory: reads run.json ("tasks": [{name,
// metrics}], "modes": [names, reference first]) and every samples file. Per task and mode:
// n, acc +- stderr, acc_norm +- stderr (tasks that report it), per-subject acc; per mode vs
// the reference: flips, PFR + Wilson 95%, hurts, helps, dAcc, McNemar exact p (on acc and
// acc_norm), margins of the reference and the mode on items every mode answers correctly,
// token KL (mean, p50, p90, p99, max) and same-top-1 rate; across tasks D_avg and D_w per
// mode (acc, and acc_norm over tasks that report it). Tasks whose metrics include "ppl" (one
// sample per window) get per mode tokens, bytes, loglik, ppl and bits_per_byte, and vs the
// reference d_ppl and the token statistics; they are left out of D_avg / D_w. Items marked
// nonfinite in any mode are left out of every statistic of their task (all modes, so the
// comparisons stay paired) and counted in the task's "nonfinite": {"excluded", "modes"}. A
// samples file with another number of items than the reference mode's is ERR_MISMATCH naming
// it. *out owned by the caller.
//
// Noise (results/noise.h): every accuracy task also gets "noise" (flip, hurt, help
// probabilities with bootstrap intervals per mode, null flip rates, all pairs of non-reference
// modes), and the summary a top-level "noise" with the replicas' record and "pooled" (the same
// over the items of every accuracy task together). With run.json "replicas": {"k": K} the
// samples files of replicas 1..K (modes "<mode>@r<r>") are read too: an item non-finite in any
// replica leaves every statistic, and a file of another length is ERR_MISMATCH as above.
int results_summarize(const char *run_dir, cJSON **out, struct err *e);

// Replicas beyond the unperturbed run (run --replicas K).
#define RESULTS_MAX_REPLICAS 64

#endif
