// run_rec.h: run.json as one typed record (docs/design/run_record.md "Reading a run.json").
// Owns struct run_rec - the fields of run.json that report, diff, tables, summary, merge and
// the item probabilities use - and its one reader, run_rec_load, which checks the schema
// (run_identity.h) and the type of every field it fills: a required field missing or any field
// of the wrong type is an error naming the file, the field and the value. Schema-1 files (no
// "schema" field) load with the fields they have. The parsed object stays in the record for
// the code that legitimately walks all of it (the identity, the configuration key, the stamps).
#ifndef HIFA4_RUN_REC_H
#define HIFA4_RUN_REC_H

#include <cjson/cJSON.h>

#include "base/common.h"

#define RUN_REC_MAX_METRICS 8

// One entry of "modes" (modes[0] is the reference).
struct run_rec_mode {
    const char *name;
    const char *label;   // attention.labels[name], or NULL (older files)
    const char *display; // attention.display[name], else name: what reports call the mode
};

// One entry of "storage" (bits per stored Q/K/V/P value of a mode), in the file's order.
struct run_rec_storage {
    const char *mode, *format; // format NULL when absent
    double bits_per_value;     // NAN when absent
    int per_tensor_scale;
};

// One entry of "tasks". Counts are -1 when the file does not record them.
struct run_rec_task {
    const char *name;                          // required
    int n_items;
    int item_lo, item_hi;                      // item_range [lo, hi) of a shard; -1, -1 when absent
    int items;                                 // items its samples files hold: hi - lo, else n_items, else -1
    int n_metrics;
    const char *metrics[RUN_REC_MAX_METRICS];  // "acc", "acc_norm", "ppl", "bits_per_byte"
    int is_ppl, has_acc_norm;
    const char *template_version, *source, *items_sha256, *ppl_score; // NULL when absent
    int n_bad_rows, n_truncated, n_odd_choices;
    const char *odd_choices_first;
    double n_tokens;                           // NAN when absent
};

// Strings point into json and live until run_rec_free; absent optional strings are NULL.
struct run_rec {
    char path[4200]; // dir/run.json, as errors name it
    cJSON *json;     // the whole parsed file (owned): run_identity.h and stamp.h walk it
    int schema;      // 1 (no "schema" field) or 2
    const char *tool, *version, *git_revision, *created, *note;
    struct {
        const char *name, *arg, *path, *hash, *act; // hash: fingerprint version 1
        int fingerprint_version;                    // 0 when absent (schema 1)
        const char *fingerprint;                    // model.fingerprint.hash, NULL when absent
        const char *gguf_file, *gguf_file_type, *gguf_tensor_types, *gguf_sha256; // checkpoint_metadata
    } model;
    struct {
        const char *path, *hash, *bos_policy;
        int add_bos, bos_id, eos_id; // -1 when absent
    } tokenizer;
    int n_modes;                     // >= 1 (required)
    struct run_rec_mode *modes;
    const char *reference;           // "reference", else modes[0]
    struct {
        int tile;                    // -1 when absent
        const char *v_group, *qformat, *qdq_skip;
        const char *qmean;           // NULL when absent: the token form (run_rec_qmean)
        int qmean_revision;          // 0 when absent
    } attention;
    int n_storage;
    struct run_rec_storage *storage;
    struct { const char *path, *sha256; } scales;                        // NULL: a run without scales
    struct { const char *aggregator, *gate, *gate_rule, *alpha, *layer_alphas; } calibration; // "scales_calibration":
                                     // alpha the file's model-level alpha as `calibrate` wrote it ("0.5"); layer_alphas
                                     // "0.5,0,..." when a per-layer gate gave the layers others, else NULL
    int has_shard, shard_k, shard_n;
    double seed;                     // NAN when absent
    int limit;                       // 0: every item; -1 when absent
    const char *subjects;
    int has_replicas, replicas;      // replicas: K beyond the unperturbed run, 0..RESULTS_MAX_REPLICAS
    int n_tasks;                     // required ("tasks", may be empty)
    struct run_rec_task *tasks;
    const char *resume_key;
    int complete;                    // "complete": true
    const char *gemm_arithmetic, *host_cpu, *host_libm;
    const cJSON *timings, *prefix_cache; // this invocation's measurements as recorded (objects or NULL)
};

// Reads dir/run.json into *r. Errors: the file's (json_parse_file), a schema above RUN_SCHEMA
// (ERR_UNSUPPORTED naming both versions), a required field ("modes" non-empty, "tasks", each
// task's "name") missing or any field of the wrong type (ERR_FORMAT: "<dir>/run.json: field
// 'modes[2]': expected a string, got 3"). *r is zeroed first; free it with run_rec_free, also
// after an error.
int run_rec_load(struct run_rec *r, const char *dir, struct err *e);
// The same over an object already parsed (takes ownership of json, also on error); path names
// it in errors.
int run_rec_from_json(struct run_rec *r, cJSON *json, const char *path, struct err *e);
void run_rec_free(struct run_rec *r);

// What a report calls mode `mode` (attention.display[mode]; mode itself when unknown).
const char *run_rec_display(const struct run_rec *r, const char *mode);
// The Q-Mean form: attention.qmean, "token" when absent (files before the option).
const char *run_rec_qmean(const struct run_rec *r);
// The task called name, or NULL (the last of that name, as the readers before this record did).
const struct run_rec_task *run_rec_task(const struct run_rec *r, const char *name);
// 1 when the mode is one of the run's modes.
int run_rec_has_mode(const struct run_rec *r, const char *mode);

#endif
