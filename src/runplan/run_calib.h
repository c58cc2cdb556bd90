// run_calib.h: the Smooth-QK scales of a run whose modes need them and that was given none:
// calibrate's default file for the model when it exists, else a calibration run here first,
// on the default calibration source (the Brown corpus, never an evaluation split), written
// where the next run finds it: <cache>/scales/<scales id>-<fingerprint>.safetensors, the file
// `calibrate` writes too (attention/scales.h: attn_scales_cache_path, attn_scales_default).
#ifndef HIFA4_RUN_CALIB_H
#define HIFA4_RUN_CALIB_H

#include <cjson/cJSON.h>

#include "base/common.h"
#include "calib/calib_run.h"
#include "calib/rule_args.h"
#include "eval/run.h"
#include "runplan/model_arg.h"

// The default calibration (spec/calibration.md section 1) and why these sizes: docs/design/calibration.md.
#define RUN_CALIB_SOURCE "brown"                 // datasets/brown.json
#define RUN_CALIB_REL "brown/brown.txt.zst"      // its file under a data root
#define RUN_CALIB_SAMPLES 64
#define RUN_CALIB_LEN 512

// The default calibration text (RUN_CALIB_REL) under a data root (data_dir, $HIFA4_DATA, the
// cache), else fetched like task data (datasets/brown.json; unless offline). path[0] = 0 and
// the reason in e (ERR_NOTFOUND naming where it looked and how to get it) when there is none.
int run_calib_text(char *path, size_t n, const char *data_dir, int offline, struct err *e);

// 1 if a mode of o needs Smooth-QK scales.
int run_calib_needed(const struct run_opts *o);
// Removes the modes that need Smooth-QK scales from o (saying so in one line with `why`); the
// reference mode never needs them. f32 remains if nothing else does.
void run_calib_drop_modes(struct run_opts *o, const char *why);

struct run_calib_opts {
    const char *data_dir;      // --data-dir (searched first for the calibration text)
    int offline;               // never fetch the calibration text
    int threads;               // 0: all cores
    int required;              // 1: the user asked for a mode that needs scales, by name or by the
                               // bare form (no source is an error naming the three ways out); with
                               // --attn all, those modes are skipped in one line
    const char *calib_text;    // --calib FILE: calibrate on this text (its scales cached apart), or NULL
    const char *gate_rule;     // --gate-rule (NULL: CALIB_RULE_DEFAULT); a measured calibration is
                               // cached under its own name (<id>-<fingerprint>-measured)
    const char *qmean;         // the run's --qmean: the measured rule's error uses the same form
};
// Fills scales (n bytes) with the scales file for m: calibrate's default file if it exists
// (*record NULL), else calibrates (one log line first: source, samples, an estimate of the time),
// writes the file and sets *record to run.json's scales.calibration (source, file, samples,
// length, seconds, gate). scales[0] = 0 when no calibration text is found and !o->required
// (the caller drops the modes; the warning says how to get the text). Errors: calibrate's.
int run_calib_default(char *scales, size_t n, cJSON **record, const struct model_ref *m,
                      const struct run_calib_opts *o, struct err *e);

#endif
