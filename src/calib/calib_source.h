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

// Cuts ids[0..n_ids) into consecutive chunks of `len` tokens (BOS first when bos >= 0, then
// len-1 text tokens) and picks `samples` of them: all chunks in order when there are at most
// `samples`, else a seeded choice (xorshift64*, Fisher-Yates) returned in stream order.
// *out (samples x len, malloc'd) and *n_out (number of samples made).
int calib_make_samples(const int32_t *ids, int n_ids, int len, int samples, uint64_t seed, int bos,
                       int32_t **out, int *n_out, struct err *e);

#endif
