// calib_source.h: calibration text sources (spec/calibration.md section 1): a plain or .zst
// text file, or a directory of them, read as one stream; refusal of evaluation data; and the
// deterministic cut of the token stream into samples.
#ifndef HIFA4_CALIB_SOURCE_H
#define HIFA4_CALIB_SOURCE_H

#include <stdint.h>

#include "base/common.h"

// Reads `path` (file or directory: every regular *.txt / *.txt.zst / *.zst / extension-less
// file, sorted by name, joined with "\n"). Unless force, refuses a path that a task of ours
// reads as evaluation data (ERR_USAGE naming the task). *text malloc'd. desc gets a short
// description (path, files, bytes) for provenance.
int calib_source_read(const char *path, int force, char **text, size_t *len, char *desc, size_t n_desc,
                      struct err *e);

// 1 if path looks like evaluation data of a built-in task; *task names it.
int calib_source_is_eval(const char *path, const char **task);

// How a token stream is cut into calibration samples: `samples` chunks of `len` tokens, chosen
// with `seed`, each starting with token `bos` when bos >= 0 (then len-1 text tokens).
struct calib_cut {
    int len, samples;
    uint64_t seed;
    int bos;
};
// Calibration samples: n of a common length, back to back (ids malloc'd, caller frees).
struct calib_samples {
    int32_t *ids; // (n, len)
    int n;
};

// Cuts ids[0..n_ids) into consecutive chunks of cut.len tokens and picks cut.samples of them:
// all chunks in order when there are at most cut.samples, else a seeded choice (xorshift64*,
// Fisher-Yates) returned in stream order. out->ids (out->n x cut.len), out->n the number made.
int calib_make_samples(const int32_t *ids, int n_ids, struct calib_cut cut, struct calib_samples *out,
                       struct err *e);

#endif
