// trace.h: attention diagnostics over real inputs (spec/attention.md section 5; paper Table 4
// and Figure 8): runs a model under several attention modes with attn_opts.diag on the same
// token sequences (a task's model inputs, or a text cut into windows of each context length)
// and collects, per mode and input set, per-layer attention-output rel-L2 and cosine against
// mode f32, K max-abs after smoothing and the eps_bar histogram. Writes trace.json and SVGs.
// Never changes a result: the diagnostics are read from the attention context.
#ifndef HIFA4_TRACE_H
#define HIFA4_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "attention/attn.h"
#include "base/common.h"

#define TRACE_MAX_MODES 16

// One input set: sequences run back to back through every mode.
struct trace_set {
    char name[64];     // "ctx4096", "task-mmlu" (also used in file names)
    int ctx;           // window length of a text set; 0 for a task set
    int n_seq;
    int *seq_len;      // [n_seq], owned
    int32_t *ids;      // sequences back to back (n_tokens), owned
    int64_t n_tokens;
};
void trace_sets_free(struct trace_set *sets, int n); // frees the array too; NULL is fine

// A text file (plain or .zst) tokenized with the model's tokenizer (or tok_dir's when not NULL;
// one with more ids than the model's vocabulary is ERR_MISMATCH) and cut into consecutive
// windows of win.ctx[i] tokens (BOS first when the tokenizer adds one, then ctx-1 text tokens), the
// first `limit` windows of each length (limit <= 0: all). A length the text cannot fill once,
// or one above the model's max_position_embeddings, is an error naming both numbers.
// *sets (win.n_ctx of them) owned by the caller (trace_sets_free).
struct trace_windows {
    const int *ctx; // (n_ctx) window lengths, one set each
    int n_ctx;
    int limit;      // windows per length (<= 0: all)
};
int trace_sets_text(struct trace_set **sets, const char *model_dir, const char *tok_dir, const char *text_path,
                    struct trace_windows win, struct err *e);
// A task's model inputs exactly as `run` builds them (eval_plan_build: one sequence per distinct
// context+choice input, BOS per the tokenizer, left-truncated to the model's window), first
// `limit` items (0: all), tokenizer as for trace_sets_text. One set named "task-<task>".
int trace_sets_task(struct trace_set **sets, const char *model_dir, const char *tok_dir, const char *task,
                    const char *data_dir, int limit, struct err *e);

#define TRACE_QMEAN_BOTH 2 // trace_opts.qmean: every mode with Q-Mean in both forms, token first

struct trace_opts {
    int tile;            // Bc (default 128)
    int v_group, qformat;// enum attn_vgroup / attn_qformat (defaults: attn_opts_default's)
    int qmean;           // enum attn_qmean, or TRACE_QMEAN_BOTH (default: attn_opts_default's)
    unsigned qdq_skip;   // enum attn_qdq_skip: operands left unquantized (default 0)
    int threads;         // <= 0: all cores
    int act_bf16;        // activation rounding of the forward pass (default 1, as `run`)
    int batch_tokens;    // tokens per forward batch (default 8192; a longer sequence runs alone)
    const char *scales;  // Smooth-QK scales file; NULL: attn_scales_default of the model basename
                         // (current directory, then the harness home) when it exists
};
void trace_opts_default(struct trace_opts *o);

struct trace_cell {            // one (mode, set)
    struct attn_diag_layer *layer; // [n_layers], copied from the context after the set
    struct attn_diag_acc total;    // eps_bar histogram and K max-abs merged over layers
    double forward_s;
};

struct trace_result {
    char model_id[256], model_hash[65];
    char scales[4096];             // scales file used ("" if none)
    int n_layers, H, Hkv, d;
    int tile, act_bf16;
    int n_modes;                       // entries run: a mode, in both Q-Mean forms with TRACE_QMEAN_BOTH
    char modes[TRACE_MAX_MODES][64];   // mode of each entry, in order
    unsigned mode_flags[TRACE_MAX_MODES]; // its flags (with ATTN_F_QMEAN_CH in the channel form)
    int qmean[TRACE_MAX_MODES];        // its enum attn_qmean, -1 for a mode without Q-Mean
    char display[TRACE_MAX_MODES][128];// its name in tables and plots: "hifa4 (channel)" (attn_mode_display)
    unsigned qdq_skip;                 // trace_opts.qdq_skip
    char skipped[512];                 // modes skipped for lack of scales, comma separated
    int n_sets;
    const struct trace_set *sets;      // borrowed from the caller
    struct trace_cell *cells;          // [n_modes][n_sets]
};

// Runs every mode over every set, a mode with Q-Mean in the form(s) o->qmean asks for (more
// than TRACE_MAX_MODES entries: ERR_USAGE). Unknown mode or tile: ERR_USAGE. Modes with Smooth-QK are
// skipped with a warning when no scales file is given or found; a scales file that does not
// match the model (shape, hash) is an error. Results are independent of the thread count and
// of batch_tokens (the diagnostics sum in sequence order).
// The attention modes to run, by name (attn_mode_find), each once.
struct trace_modes {
    const char *const *names; // (n)
    int n;
};
int trace_run(struct trace_result *r, const char *model_dir, const struct trace_set *sets, int n_sets,
              struct trace_modes want, const struct trace_opts *o, struct err *e);
void trace_result_free(struct trace_result *r);
const struct trace_cell *trace_cell(const struct trace_result *r, int mode, int set);

// Table 4-style summary per set: modes as columns; rel-L2 and cosine at layer 0, mean and
// worst over layers; K max-abs; eps_bar tiles and share below zero.
void trace_print(FILE *f, const struct trace_result *r);
// out_dir/trace.json and per set eps_bar-<set>.svg (Fig. 8: fraction of (row, tile) pairs per
// eps_bar bin, one curve per quantized mode) and rel_l2-<set>.svg (per-layer rel-L2 per mode).
int trace_write(const struct trace_result *r, const char *out_dir, struct err *e);
// The JSON text of trace.json (malloc'd, caller frees), for tests.
int trace_json_text(const struct trace_result *r, char **out, struct err *e);

#endif
