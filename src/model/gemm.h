// gemm.h: bit-deterministic SGEMM Y(M,N) = X(M,K) * W(N,K)^T for the forward pass, with
// W packed once into panels. Same bits on every x86-64 CPU (AVX-512F, AVX2+FMA or scalar
// path), for any thread count, any batch size and any row offset. Knows no model.
//
// ---- the contract: canonical arithmetic (formats GEMM_FMT_F32 and GEMM_FMT_BF16) ----
// Every output element is one sequential chain of fused multiply-adds, ascending k, binary32
// with one rounding per step (IEEE 754-2008 fusedMultiplyAdd, roundTiesToEven):
//     acc = +0.0f; for k = 0..K-1: acc = fmaf(x[m][k], w[n][k], acc);
// then the epilogue, in this order:
//     if (bias)       acc = acc + bias[n];        (one binary32 add)
//     if (isnan(acc)) acc = canonical NaN 0x7fc00000;
//     if (round)      acc = round_bf16(acc);      (RNE; same bits as common.h round_bf16)
//     y[m][n] = acc;
// w[n][k] is the packed weight: the source value (GEMM_FMT_F32) or the source value rounded to
// bf16 by common.h round_bf16 (GEMM_FMT_BF16: exact for a bf16 source).
// y[m][n] depends on nothing but row m of x, row n of w, K, bias[n] and the rounding.
// Consequences worth knowing:
// - The chain starts at +0.0, so a row whose products are all zero gives +0.0, never -0.0
//   (fma(-1, 0, +0) = +0 under round-to-nearest), and K = 0 gives +0.0 (+ bias).
//   cblas_sgemm (beta = 0) may return -0.0 there.
// - NaN results are canonicalised (sign 0, payload 0x400000): which NaN payload an FMA
//   propagates depends on its operand order, which the compiler chooses, so NaN payloads
//   would not otherwise be reproducible. Inf and overflow behave as IEEE says.
// - Subnormals are kept (gradual underflow: these formats run with the caller's MXCSR, which
//   must be the default; a caller that sets FTZ or DAZ gets different bits).
//
// ---- the bf16 dot-product contract (format GEMM_FMT_BF16_DP: what vdpbf16ps computes) ----
//     x'[k] = daz(round_bf16(x[m][k])), w'[k] = daz(w[n][k]) (w: the packed bf16 weight)
//     acc = +0.0f; for k = 0..K-1: acc = ftz(rnd(acc + x'[k] * w'[k]));
//     if (bias) acc = ftz(rnd(acc + daz(bias[n])));  then NaN canonicalisation and the
//     optional round_bf16 as above.
// - round_bf16 is common.h's (RNE; a NaN keeps its top bits and is made quiet), so x that is
//   bf16-valued already (--act bf16) is used as it is.
// - daz(v): v if |v| >= 2^-126 (or v is 0, Inf or NaN), else a zero of v's sign.
// - x'[k] * w'[k] is exact (8-bit significands; no product is flushed, however small).
// - rnd: one rounding to binary32 (24-bit significand, roundTiesToEven) with an UNBOUNDED
//   exponent range; ftz(r): r if |r| >= 2^-126, else a zero of r's sign. Together: a sum
//   that is tiny after rounding becomes +-0 (x86 FTZ, tininess detected after rounding):
//   2^-126 - 2^-151 rounds to 2^-126 and is kept; 2^-126 - 2^-150.5 rounds to 2^-126 - 2^-150
//   and is flushed, where gradual underflow (fmaf) would have given 2^-126.
// - This is the fmaf chain of the first contract, bit for bit, whenever x is bf16-valued and
//   no x, w, bias or partial sum (after rounding) is a nonzero value below 2^-126; otherwise
//   it is not (a flushed partial sum is lost, a flushed zero keeps the sign, so -0.0 can
//   occur). vdpbf16ps adds the odd element of a (k, k+1) pair first; the packing puts k in
//   the odd slot, so the instruction computes exactly this chain (docs/results/speed.md, verified by
//   scripts/probe_dpbf16.c on Zen 5). The AVX-512F and AVX2 paths compute it with vfmadd
//   under MXCSR FTZ|DAZ (set and restored inside the call, so that the caller's MXCSR is
//   unchanged), the scalar path and gemm_ref_dp with fmaf and an explicit flush.
//
// ---- ownership and threading ----
// struct gemm_w describes packed weights; it owns its memory only when made by
// gemm_pack_*() and is released by gemm_w_free(). gemm_pack_*_into() packs into memory the
// caller owns (no allocation). Packed weights are read-only and may be shared by threads.
// n_threads <= 1 runs on the calling thread; otherwise up to n_threads threads of the pool
// (base/pool.h) take fixed-size blocks from a shared counter. A call from inside a pool task
// runs single-threaded. Kernels never
// allocate: each thread's scratch (256 KB of packed X rows) is a static thread-local buffer.
//
// Errors: functions returning int give 0 or a negative code whose value equals the
// project's enum err_code (common.h): -3 out of memory, -5 unsupported (ISA), -6 bad size.
#ifndef HIFA4_GEMM_H
#define HIFA4_GEMM_H

#include <stddef.h>
#include <stdint.h>

enum { GEMM_ERR_NOMEM = -3, GEMM_ERR_UNSUPPORTED = -5, GEMM_ERR_RANGE = -6 };

// Columns per panel. GEMM_FMT_F32: packed W is ceil(N/GEMM_NR) panels of (K, GEMM_NR) floats,
// k-major, panel p holding columns p*GEMM_NR.. (rows of W), zero-padded past N. The bf16
// formats: panels of (ceil(K/2), GEMM_NR) uint32 pairs, lane c of pair j holding
// bf16(w[n][2j]) << 16 | bf16(w[n][2j+1]) (k = 2j in the odd, high slot: vdpbf16ps adds it
// first), zero-padded past N and past K (half the bytes of binary32). The layout does not
// depend on the ISA: weights packed once run on every path.
#define GEMM_NR 16

// Packed formats: which numbers the panels hold and which arithmetic contract runs on them.
enum gemm_fmt {
    GEMM_FMT_F32 = 0,     // binary32 weights, the fmaf chain
    GEMM_FMT_BF16 = 1,    // bf16 weights (source rounded RNE), the fmaf chain
    GEMM_FMT_BF16_DP = 2  // bf16 weights, the bf16 dot-product contract (x rounded to bf16)
};

struct gemm_w {
    int N, K;            // W is (N, K)
    enum gemm_fmt fmt;
    float *p;            // GEMM_FMT_F32: the panels, 64-byte aligned (else NULL)
    uint32_t *q;         // bf16 formats: the pair panels, 64-byte aligned (else NULL)
    int own;             // 1: the panels were allocated by gemm_pack and are freed by gemm_w_free
};

// Source element types for packing.
enum gemm_src { GEMM_SRC_F32 = 0, GEMM_SRC_BF16 = 1, GEMM_SRC_F16 = 2 };

// A source matrix: N rows of K elements of `type` (bf16 and f16 are uint16 bit patterns), row
// stride ld >= K elements.
struct gemm_mat {
    const void *p;
    int type; // enum gemm_src
    size_t ld;
    int N, K;
};

// ---- packing ----
// Bytes gemm_pack_into needs for an (N, K) matrix in format fmt (0 if N or K is negative or
// the size overflows size_t).
size_t gemm_packed_bytes(enum gemm_fmt fmt, int N, int K);

// Packs the matrix src into mem (64-byte aligned, gemm_packed_bytes(fmt, src->N, src->K)
// bytes) and fills *w (which does not own mem). GEMM_FMT_F32: the conversion to f32 is exact
// and bit-identical to common.h bf16_to_f32 / f16_to_f32 (subnormals, Inf, NaN payloads,
// signalling NaNs unchanged); the bf16 formats: the value rounded by common.h round_bf16
// (f16: its exact f32 value rounded). Runs on up to n_threads threads of the pool.
// Returns 0, or GEMM_ERR_RANGE (negative size, ld < K, bad type or format, misaligned mem,
// bytes too small).
int gemm_pack_into(struct gemm_w *w, enum gemm_fmt fmt, void *mem, size_t bytes, const struct gemm_mat *src,
                   int n_threads);
// The same in two steps, for a caller's own thread pool: gemm_w_init checks sizes and
// alignment and points *w at mem (not owned); gemm_pack_panels fills panels [pa, pb)
// (columns pa*GEMM_NR .. pb*GEMM_NR-1 of W, i.e. rows of src, whose N and K must be w's);
// disjoint ranges may run concurrently. Same errors as gemm_pack_into.
int gemm_w_init(struct gemm_w *w, enum gemm_fmt fmt, void *mem, size_t bytes, int N, int K);
int gemm_pack_panels(struct gemm_w *w, const struct gemm_mat *src, int pa, int pb);
// The same into a new allocation owned by *w (free with gemm_w_free). GEMM_ERR_NOMEM on OOM.
int gemm_pack(struct gemm_w *w, enum gemm_fmt fmt, const struct gemm_mat *src, int n_threads);
// Copies row n (0 <= n < N) of W back out as K floats (bit-exact: the packed values): an
// embedding lookup can read a tied lm_head's packed copy instead of keeping a second
// row-major copy. K strided reads (64-byte stride); not for hot loops.
void gemm_w_row(const struct gemm_w *w, int n, float *out);
// 1 if w holds packed panels (of any format).
static inline int gemm_w_packed(const struct gemm_w *w) { return w->p != NULL || w->q != NULL; }
// Releases memory owned by w and zeroes it; safe on a zeroed or non-owning struct.
void gemm_w_free(struct gemm_w *w);

// ---- compute ----
// The epilogue's rounding of the output.
enum gemm_round { GEMM_ROUND_NONE = 0, GEMM_ROUND_BF16 = 1 };

// The operands of one call: y (M rows, stride ldy) = x (M rows of K, stride ldx) * W^T
// (+ bias), then the epilogue. y and bias are indexed by absolute column n (y[m*ldy + n],
// bias[n]), so a column range writes in place; bias may be NULL. y must not overlap x or the
// packed weights.
struct gemm_io {
    float *y;
    size_t ldy;
    const float *x;
    size_t ldx;
    int M;
    const float *bias;
    enum gemm_round round;
};

// Columns [n0, n1) of io->y by the contract of w->fmt. Columns outside [n0, n1) are not
// touched. During the call y holds partial sums (K is blocked); the result is final when the
// function returns. Returns 0, GEMM_ERR_RANGE (M < 0, bad column range, ldx < K, ldy < n1)
// or the error of the first-use ISA selection (gemm_isa_init).
int gemm_run(const struct gemm_io *io, const struct gemm_w *w, int n0, int n1, int n_threads);

// ---- the same as tasks, for a caller's own thread pool (e.g. the project's pool_for) ----
// gemm_plan_init checks the arguments like gemm_run and splits the call into n_tasks
// independent blocks (disjoint outputs); gemm_plan_task(p, t) computes block t. Run every t in
// [0, n_tasks) exactly once, in any order, on any threads, concurrently or not: the bits are
// those of gemm_run. max_threads is 1 when the call is too small to be worth sharing. The
// plan points at the caller's buffers and is valid while they are. n_tasks = 0: nothing to do.
struct gemm_plan {
    int n_tasks, max_threads;
    // private: the call and its blocking
    const void *isa;
    struct gemm_io io;
    const struct gemm_w *w;
    int n0, n1, kc, p0, np, mc, pc, nrb;
};
int gemm_plan_init(struct gemm_plan *p, const struct gemm_io *io, const struct gemm_w *w, int n0, int n1);
void gemm_plan_task(const struct gemm_plan *p, int task);

// The contracts written literally, over unpacked W (N rows of K floats, row stride ldw), all
// N columns into y[m*ldy + n]: gemm_ref the fmaf chain (w as given: round it to bf16 first for
// GEMM_FMT_BF16), gemm_ref_dp the bf16 dot-product contract (w rounded to bf16 inside, x as
// the contract says). The references the tests compare against.
void gemm_ref(const struct gemm_io *io, const float *w, size_t ldw, int N, int K);
void gemm_ref_dp(const struct gemm_io *io, const float *w, size_t ldw, int N, int K);

// ---- ISA dispatch ----
// Selects the path once: HIFA4_GEMM_ISA=avx512|avx512f|avx2|scalar if set, else the best the
// CPU supports (__builtin_cpu_supports: avx512f -> avx512, avx2+fma+f16c -> avx2, else
// scalar). avx512 runs GEMM_FMT_BF16_DP with vdpbf16ps where the CPU has AVX512_BF16;
// avx512f is the same path without it (never selected automatically: for tests and
// benchmarks of what an AVX-512 CPU without BF16 runs). Every path gives the same bits.
// Idempotent and thread-safe; gemm_run calls it on first use. Returns 0, or
// GEMM_ERR_UNSUPPORTED (forced ISA not supported by this CPU) / GEMM_ERR_RANGE (unknown
// name) with a one-line message in msg (may be NULL).
int gemm_isa_init(char *msg, size_t msg_n);
// Forces a path by name ("avx512", "avx512f", "avx2", "scalar"; NULL = automatic, environment ignored).
// For tests and benchmarks: not thread-safe against a running gemm_run. Same errors.
int gemm_isa_set(const char *name);
// 1 if this CPU can run the named path.
int gemm_isa_supported(const char *name);
// Name of the selected path (static string; "none" before selection).
const char *gemm_isa_name(void);
// The arithmetic contract's name and version, recorded with results (run.json "gemm"): two
// results made under the same string have the same GEMM bits on any CPU and path.
#define GEMM_ARITHMETIC "fmaf-chain-ascending-k/1"
#define GEMM_ARITHMETIC_DP "bf16-dp-ftz-ascending-k/1"
// The contract string of a format (GEMM_ARITHMETIC for the fmaf-chain formats).
const char *gemm_arithmetic(enum gemm_fmt fmt);

#endif
