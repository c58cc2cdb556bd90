// ops.h: stateless kernels of the forward pass (STYLE.md section 5): RMSNorm, RoPE (rotate
// half), SiLU/GELU gated products, soft-capping and a binary64 matmul reference (the GEMMs
// themselves are gemm.h's).
// Output first, then const inputs, then dims. No allocation, no I/O, no globals.
//
// `bf16` arguments select the rounding of a BF16 PyTorch model (DESIGN.md section 3: every
// op output is a bf16 tensor); with bf16 = 0 the op is computed in binary64 and rounded once
// to binary32 (the goldens' non-attention math is binary64).
#ifndef HIFA4_OPS_H
#define HIFA4_OPS_H

#include <stddef.h>

// ---- RMSNorm ----
// out[i] = x[i] / sqrt(mean(x^2) + eps) * w'[i], w' = w or (1 + w) (plus_one, Gemma2).
// bf16 = 1 rounds like HF: Llama/Qwen/Mistral/Phi3 (`w * bf16(x_normed)`, two roundings),
// Gemma2 (`bf16(x_normed * (1 + w))`, computed in f32, one rounding). out may alias x.
// x, out: (n)
void ops_rmsnorm(float *out, const float *x, const float *w, int n, double eps, int plus_one, int bf16);

// ---- RoPE (HF rotate_half convention) ----
// x: (n_heads, head_dim) of one token, rotated in place on channels [0, rot_dim): for
// i < rot_dim/2, (x[i], x[i + rot_dim/2]) <- (x[i] c - x[i+r/2] s, x[i+r/2] c + x[i] s) with
// c = cos[i], s = sin[i] (binary64 tables for this position, attention factor included).
// Channels >= rot_dim pass through (Phi3 partial rotary); rot_dim <= head_dim <= CFG_MAX_HEAD_DIM. bf16 = 1: cos/sin rounded to bf16,
// each product and the sum rounded to bf16 (HF `q * cos + rotate_half(q) * sin` in bf16).
void ops_rope(float *x, const double *cos, const double *sin, int n_heads, int head_dim, int rot_dim, int bf16);

// ---- gated activations ----
// out[i] = act(gate[i]) * up[i]; bf16: act computed in binary32 (as PyTorch does for a bf16
// tensor) and rounded to bf16, then the product rounded (HF order).
// act is enum act_fn (config.h). out may alias gate or up. (n)
void ops_act_mul(float *out, const float *gate, const float *up, size_t n, int act, int bf16);
// The bf16 path's activation of one value, round_bf16(act(x)) in binary32 libm: the scalar
// reference of ops_act_mul's table (which holds it for every bf16 value).
float ops_act32(int act, float x);
double ops_silu64(double x);
double ops_gelu_tanh64(double x);
double ops_gelu64(double x);

// ---- soft-capping (Gemma2 final logits): x <- cap * tanh(x / cap) ----
// bf16: x/cap, tanh and the product each rounded to bf16 (HF's three bf16 ops). (n)
void ops_softcap(float *x, size_t n, double cap, int bf16);

// ---- residual add: x += y (bf16: result rounded) (n) ----
void ops_add(float *x, const float *y, size_t n, int bf16);

// ---- matmul reference: Y(M,N) = X(M,K) * W(N,K)^T, ldy = row stride of Y (>= N) ----
// The forward pass's GEMMs are gemm.h's deterministic kernel (bit-exact against its own fmaf
// reference, gemm_ref); this binary64 product is the independent tolerance reference.
// Naive reference with binary64 accumulation (tests only).
void ops_matmul_ref(float *y, const float *x, const float *w, int M, int N, int K, int ldy);

#endif
