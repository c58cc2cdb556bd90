// calib_run.h: runs a model over calibration samples with the statistics hook attached
// (the glue between model, tokenizer, calib_source and calib; no forward-pass copy).
#ifndef HIFA4_CALIB_RUN_H
#define HIFA4_CALIB_RUN_H

#include <stdint.h>

#include "calib/calib.h"
#include "calib/calib_source.h"

struct calib_run_opts {
    int samples, len;          // --calib-samples, --calib-len
    uint64_t seed;
    int agg;                   // enum calib_agg
    struct calib_gate_opts gate;
    int force;                 // allow evaluation data as source
    int threads;               // <= 0: all cores
    int batch_tokens;          // tokens per forward batch
    int stats_ref;             // 1: the reference statistics (calib_observe per sequence, serial);
                               // 0 (default): calib_observe_seqs per layer on the pool (same bits)
    int ranks;                 // enum calib_ranks (default CALIB_ALL_RANKS)
    int weights;               // enum model_weights (default auto)
    int bos;                   // samples start with BOS: -1 as the tokenizer adds it (default), 0 never,
                               // 1 always (the tokenizer must have one)
    int measure;               // 1: after the statistics, the measured gate's pass (docs/results/gate.md) on
                               // gate.meas.samples of the samples, and gate.rule applied
};
// Who runs the batches under MPI: every rank of the job (the calibrate command), or only this
// one (run's automatic calibration, done by rank 0 before the others open the run).
enum calib_ranks { CALIB_ALL_RANKS = 0, CALIB_THIS_RANK = 1 };
void calib_run_opts_default(struct calib_run_opts *o);

// Where a calibration's time went (wall seconds unless noted; filled by calib_run_seqs).
struct calib_run_time {
    double open_s;             // model_open (mapping, weight packing)
    double forward_s;          // the batch loop: forward passes with the statistics hook
    double forward_cpu_s;      // the same in process CPU seconds (all threads)
    double stats_s;            // inside the hook (per-sample statistics), part of forward_s
    double compute_s;          // calib_compute: aggregation, gate, scales
    double measure_s;          // the measured gate's pass (forwards and error), 0 without it
    double measure_cpu_s;      // the same in process CPU seconds
};

struct calib_run {
    char model_id[256];        // basename of the model directory
    char model_hash[65];
    char source_desc[1024];
    struct calib_stats stats;
    struct calib_result result;
    struct calib_run_time time;
};

// Under MPI (base/dist.h) every rank calls these with the same arguments: the forward passes
// are split over the ranks (calib_dist.h) and only rank 0 gets r->result; a worker returns 0
// with r->stats holding only its own samples and no result.
// Statistics over explicit samples: ids (n_samples x len, row-major), all of equal length.
// Uses attention mode `bf16` with f32 activations (spec section 1). With o->measure, rank 0
// then runs the measured gate's pass over the first samples (a second forward each, the error
// of gate_err.h per layer and candidate alpha; r->result.gate) and applies o->gate.rule.
int calib_run_ids(struct calib_run *r, const char *model_dir, const int32_t *ids, int n_samples, int len,
                  const struct calib_run_opts *o, struct err *e);
// Same for samples of different lengths: ids holds the samples back to back (sum of lens[]
// tokens), sample i has lens[i] > 0 tokens. Samples are packed in order into forward batches of
// at most o->batch_tokens tokens (a longer sample runs alone). r->stats keeps every per-sample
// statistic (e.g. kmax of sample i, layer 0 for the Jaccard of spec section 6).
int calib_run_seqs(struct calib_run *r, const char *model_dir, const int32_t *ids, const int *lens, int n_samples,
                   const struct calib_run_opts *o, struct err *e);
// Reads and tokenizes SOURCE with the model's tokenizer and cuts the samples (spec section 1):
// out->ids (out->n x o->len, row-major, malloc'd; fewer than o->samples when the source is
// short, with a warning). desc (n_desc bytes) receives the provenance string of the source.
int calib_run_samples(const char *model_dir, const char *source, const struct calib_run_opts *o,
                      struct calib_samples *out, char *desc, size_t n_desc, struct err *e);
// calib_run_samples, then calib_run_ids.
int calib_run_source(struct calib_run *r, const char *model_dir, const char *source,
                     const struct calib_run_opts *o, struct err *e);
void calib_run_free(struct calib_run *r);

#endif
