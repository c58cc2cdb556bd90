// case.h: one attention "case" file (../shared/goldens/README.md, attention/ section): q, k, v
// of one sequence, Smooth-QK scales and the call parameters, and a runner that pushes it through
// a registered mode via attn_forward (the same path the model uses). Used by `hifa4-eval attn`
// and the attention tests.
#ifndef HIFA4_ATTN_CASE_H
#define HIFA4_ATTN_CASE_H

#include "attention/attn.h"

struct attn_case {
    int T, H, Hkv, d;
    int window;      // 0 = none
    float softcap;   // 0 = none
    float sm;        // binary32 scale (params.sm_binary32_hex)
    double sm64;     // binary64 scale (params.sm)
    float *q;        // (T, H, d)   owned
    float *k, *v;    // (T, Hkv, d) owned
    float *scales;   // (Hkv, d)    owned; NULL if the file has no `scales`
};

// Loads path: tensors q [T][H][d], k, v [T][Hkv][d] (float dtypes), optional scales [Hkv][d],
// metadata `params` JSON {T, H, Hkv, d, window (null|int), softcap (null|num), sm,
// sm_binary32_hex}. Shapes must agree with params; sm must round to sm_binary32_hex (binary32).
// Errors name the file and the field or tensor. attn_case_free is safe on a zeroed case.
int attn_case_load(struct attn_case *c, const char *path, struct err *e);
void attn_case_free(struct attn_case *c);

// Runs mode `mode` with options o on the case (one sequence, layer 0) and writes out [T][H][d].
// q, k, v of the case are left unchanged (the kernel input rounding works on copies).
int attn_case_run(float *out, const struct attn_case *c, const char *mode, const struct attn_opts *o,
                  struct err *e);

#endif
