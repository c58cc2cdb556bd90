// scales.h: loading Smooth-QK scales files (spec/calibration.md section 7) for the attention
// modes with ATTN_F_SQK. Knows nothing about how scales are computed (calib.c does that).
#ifndef HIFA4_ATTN_SCALES_H
#define HIFA4_ATTN_SCALES_H

#include "base/common.h"

// Loads tensor `smooth_qk.scales` (F32 [n_layers][Hkv][d]) from the safetensors file `path`
// into *out (malloc'd, n_layers*Hkv*d floats, caller frees). Errors (each naming the file):
// missing tensor, dtype other than F32, a shape other than [n_layers][Hkv][d] (message gives
// both shapes), a non-finite or non-positive scale (naming its index), and a metadata
// `model_hash` that is non-empty and differs from model_hash (ERR_MISMATCH naming both). A file
// without a hash (like the goldens) is accepted; model_hash NULL skips the check.
int attn_scales_load(float **out, const char *path, int n_layers, int Hkv, int d, const char *model_hash,
                     struct err *e);

// The scales file `calibrate` writes by default for a model: configs/scales/<model_id>.safetensors
// in the current directory, else under the installation's home (paths_home). Returns 1 with
// the path in out when one exists, else 0 (out empty).
int attn_scales_default(char *out, size_t n, const char *model_id);

#endif
