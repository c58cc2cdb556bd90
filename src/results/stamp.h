// stamp.h: what a samples file says it is (every file proves what it is). A samples
// file starts with a zstd skippable frame (ignored by every zstd reader: the decompressed text
// and the item frames are unchanged) holding the JSON
//   {"hifa4_samples": 1, "task": T, "mode": M, "config_key": K, "model_hash": H}
// K is run.json's "resume_key" (results_config_key with the shard) and H its "model.hash"; in a
// run with --replicas, replica 0's files (mode M itself) carry the key without the "replicas"
// record - the plain run's, whose file they equal byte for byte - and "M@r<k>" files the whole. A
// samples file copied from another run, task or mode is then named instead of being scored as
// this run's. A file without the frame (written before it existed) is read unchecked.
#ifndef HIFA4_RESULTS_STAMP_H
#define HIFA4_RESULTS_STAMP_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/common.h"

struct results_stamp {
    char task[128], mode[128];
    char key[65];         // "" when unknown (a run.json without resume_key): not compared
    char model[65];       // "" when unknown: not compared
    char fix[2048];       // expected stamps only: the command that re-scores a foreign file
};

// The stamp the samples files of task/mode in run directory dir (run.json object `run`) must carry;
// fix names the remedy: remove the file, then resume the run (results_resume_command).
void results_stamp_expect(struct results_stamp *st, const cJSON *run, const char *dir, const char *task, const char *mode);
// The skippable frame holding st: *buf malloc'd (*n bytes).
int results_stamp_frame(const struct results_stamp *st, char **buf, size_t *n, struct err *e);
// Bytes of the stamp frame at the start of raw (0 if it has none; such a frame is skipped by
// readers that walk frames).
size_t results_stamp_size(const char *raw, size_t len);
// Checks the stamp at the start of raw (the file's bytes as stored) against want: a stamp of
// another task, mode, configuration or model is ERR_MISMATCH naming path, both values and
// want->fix; a malformed stamp is ERR_FORMAT; no stamp is accepted.
int results_stamp_check(const char *path, const char *raw, size_t len, const struct results_stamp *want, struct err *e);
// The same reading path (its first stamp frame only); a missing file is accepted.
int results_stamp_check_file(const char *path, const struct results_stamp *want, struct err *e);

// "hifa4-eval run ... --resume": the command in run.json with --resume added, each argument
// shell-quoted where needed (single quotes; ' as '\''), so it can be pasted. 0 if built; -1
// (out = "") when run.json has no usable command or it does not fit n.
int results_resume_command(char *out, size_t n, const cJSON *run);

#endif
