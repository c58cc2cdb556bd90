// scales.h: loading Smooth-QK scales files (spec/calibration.md section 7) for the attention
// modes with ATTN_F_SQK. Knows nothing about how scales are computed (calib.c does that).
#ifndef HIFA4_ATTN_SCALES_H
#define HIFA4_ATTN_SCALES_H

#include "base/common.h"

// Scales must lie in [1/ATTN_SCALE_MAX, ATTN_SCALE_MAX]. Smooth-QK computes bf16(q*s) and k/s
// (spec/attention.md): with |s| <= 2^64 a query or key of magnitude up to 2^64 - far beyond any
// trained model's activations - stays below the binary32/bf16 overflow threshold 2^128, while
// a scale such as 1e38 (finite, yet q*s = inf for any |q| > 3.4) would feed inf into the
// kernel and turn every score into NaN.
#define ATTN_SCALE_MAX 0x1p64f

// Loads tensor `smooth_qk.scales` (F32 [n_layers][Hkv][d]) from the safetensors file `path`
// into *out (malloc'd, n_layers*Hkv*d floats, caller frees). Errors (each naming the file):
// missing tensor, dtype other than F32, a shape other than [n_layers][Hkv][d] (message gives
// both shapes), a scale that is not finite, not positive or outside [2^-64, 2^64] (naming its
// layer, kv head and channel), and a metadata `model_hash` that is non-empty and differs from
// model_hash (ERR_MISMATCH naming both). A file without a hash (like the goldens) is accepted;
// model_hash NULL skips the check.
int attn_scales_load(float **out, const char *path, int n_layers, int Hkv, int d, const char *model_hash,
                     struct err *e);
// The shape a scales tensor must have: [n_layers][n_kv_heads][head_dim].
struct attn_scales_shape {
    int n_layers, n_kv_heads, head_dim;
};
// The same over a scales file already in memory (buf, len; name stands for the path in errors).
int attn_scales_load_mem(float **out, const void *buf, size_t len, const char *name, struct attn_scales_shape shape,
                         const char *model_hash, struct err *e);

// Where a model's Smooth-QK scales live by default (`calibrate` writes there, `run` and
// `trace` look there): <cache>/scales/<scales_id>-<weights fingerprint, 16 hex>.safetensors
// (paths.h's cache; keyed by the weights, so two checkpoints of one name never share scales,
// and nothing is written into the source tree). model_dir: the checkpoint (its safetensors
// fingerprint). Errors: opening the checkpoint, ERR_RANGE for a path longer than n.
int attn_scales_cache_path(char *out, size_t n, const char *scales_id, const char *model_dir, struct err *e);
// The default scales file of a model if one exists: an older set-up's
// configs/scales/<scales_id>.safetensors (in the current directory, else under paths_home;
// read with a note saying so), else attn_scales_cache_path. Returns 1 with the path in out,
// else 0 (out empty; a checkpoint that cannot be fingerprinted counts as no file).
int attn_scales_default(char *out, size_t n, const char *scales_id, const char *model_dir);

#endif
