// out_path.h: no command destroys an input. An output path that is one of the command's inputs
// (`calibrate --out MODEL/model.safetensors` overwrote the weights, `attn --out` its case file)
// is refused before anything is read or written. Paths are compared by file identity (device
// and inode: any spelling, a symlink or a hard link of the input is the input), not by text.
#ifndef HIFA4_OUT_PATH_H
#define HIFA4_OUT_PATH_H

#include "base/common.h"

// ERR_USAGE when `out` (the value of option `opt`, e.g. "--out"; NULL: not given, fine) is empty, or is an existing
// path with the identity of one of inputs[0..n) (entries may be NULL or missing: skipped), or
// is an existing file directly inside an input that is a directory (a checkpoint's files are
// its inputs: model.safetensors, config.json, tokenizer.json). A path that does not exist yet
// destroys nothing and passes; so does a new file in an input directory.
int out_path_check(const char *opt, const char *out, const char *const *inputs, int n, struct err *e);

#endif
