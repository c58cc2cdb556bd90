// gemm.h: bit-deterministic SGEMM Y(M,N) = X(M,K) * W(N,K)^T for the forward pass, with
// W packed once into panels. Same bits on every x86-64 CPU (AVX-512F, AVX2+FMA or scalar
// path), for any thread count, any batch size and any row offset. Knows no model.
//
// ---- the contract: canonical arithmetic ----
// Every output element is one sequential chain of fused multiply-adds, ascending k, binary32
// with one rounding per step (IEEE 754-2008 fusedMultiplyAdd, roundTiesToEven):
//     acc = +0.0f; for k = 0..K-1: acc = fmaf(x[m][k], w[n][k], acc);
// then the epilogue, in this order:
//     if (bias)       acc = acc + bias[n];        (one binary32 add)
//     if (isnan(acc)) acc = canonical NaN 0x7fc00000;
//     if (bf16_round) acc = round_bf16(acc);      (RNE; same bits as common.h round_bf16)
//     y[m][n] = acc;
// y[m][n] depends on nothing but row m of x, row n of w, K, bias[n] and bf16_round.
// Consequences worth knowing:
// - The chain starts at +0.0, so a row whose products are all zero gives +0.0, never -0.0
//   (fma(-1, 0, +0) = +0 under round-to-nearest), and K = 0 gives +0.0 (+ bias).
//   cblas_sgemm (beta = 0) may return -0.0 there.
// - NaN results are canonicalised (sign 0, payload 0x400000): which NaN payload an FMA
//   propagates depends on its operand order, which the compiler chooses, so NaN payloads
//   would not otherwise be reproducible. Inf and overflow behave as IEEE says.
// - Subnormals are kept (no FTZ/DAZ: the code never touches MXCSR; a caller that sets FTZ
//   or DAZ gets different bits and breaks the contract).
//
// ---- ownership and threading ----
// struct gemm_w describes packed weights; it owns its memory only when made by
// gemm_pack_*() and is released by gemm_w_free(). gemm_pack_*_into() packs into memory the
// caller owns (no allocation). Packed weights are read-only and may be shared by threads.
// n_threads <= 1 runs on the calling thread; otherwise one OpenMP parallel region of up to
// n_threads threads takes fixed-size blocks from a shared counter (dynamic scheduling).
// Call from outside any parallel region (a nested call runs single-threaded). Kernels never
// allocate: each thread's scratch (256 KB of packed X rows) is a static thread-local buffer.
//
// Errors: functions returning int give 0 or a negative code whose value equals the
// project's enum err_code (common.h): -3 out of memory, -5 unsupported (ISA), -6 bad size.
#ifndef HIFA4_GEMM_H
#define HIFA4_GEMM_H

#include <stddef.h>
#include <stdint.h>

enum { GEMM_ERR_NOMEM = -3, GEMM_ERR_UNSUPPORTED = -5, GEMM_ERR_RANGE = -6 };

// Columns per panel: packed W is ceil(N/GEMM_NR) panels of (K, GEMM_NR) floats, k-major,
// panel p holding columns p*GEMM_NR.. (rows of W), zero-padded past N. The layout does not
// depend on the ISA: weights packed once run on every path.
#define GEMM_NR 16

struct gemm_w {
    int N, K;        // W is (N, K)
    float *p;        // (ceil(N/GEMM_NR), K, GEMM_NR) panels, 64-byte aligned; owned if own
    int own;         // 1: p was allocated by gemm_pack_* and is freed by gemm_w_free
};

// Source element types for packing.
enum gemm_src { GEMM_SRC_F32 = 0, GEMM_SRC_BF16 = 1, GEMM_SRC_F16 = 2 };

// ---- packing ----
// Bytes gemm_pack_into needs for an (N, K) matrix (0 if N or K is negative or the size
// overflows size_t).
size_t gemm_packed_bytes(int N, int K);

// Packs W (N, K) from rows of `src` (element type `type`, row stride ld >= K elements; bf16
// and f16 are uint16 bit patterns) into mem, which must be 64-byte aligned and hold
// gemm_packed_bytes(N, K) bytes; fills *w (which does not own mem). The conversion to f32 is
// exact and bit-identical to common.h bf16_to_f32 / f16_to_f32 (subnormals, Inf, NaN
// payloads, signalling NaNs unchanged). Runs on up to n_threads OpenMP threads.
// Returns 0, or GEMM_ERR_RANGE (negative size, ld < K, misaligned mem, bytes too small).
int gemm_pack_into(struct gemm_w *w, void *mem, size_t bytes, const void *src, int type, size_t ld, int N, int K,
                   int n_threads);
// The same in two steps, for a caller's own thread pool: gemm_w_init checks sizes and
// alignment and points *w at mem (not owned); gemm_pack_panels fills panels [pa, pb)
// (columns pa*GEMM_NR .. pb*GEMM_NR-1 of W, i.e. rows of src); disjoint ranges may run
// concurrently. Same errors as gemm_pack_into.
int gemm_w_init(struct gemm_w *w, void *mem, size_t bytes, int N, int K);
int gemm_pack_panels(struct gemm_w *w, const void *src, int type, size_t ld, int pa, int pb);
// The same into a new allocation owned by *w (free with gemm_w_free). GEMM_ERR_NOMEM on OOM.
int gemm_pack(struct gemm_w *w, const void *src, int type, size_t ld, int N, int K, int n_threads);
// Copies row n (0 <= n < N) of W back out as K floats (bit-exact): an embedding lookup can
// read a tied lm_head's packed copy instead of keeping a second row-major copy. K strided
// reads (64-byte stride); not for hot loops.
void gemm_w_row(const struct gemm_w *w, int n, float *out);
// Releases memory owned by w and zeroes it; safe on a zeroed or non-owning struct.
void gemm_w_free(struct gemm_w *w);

// ---- compute ----
// Columns [n0, n1) of y (M rows, stride ldy) = x (M, w->K; stride ldx) * W^T, then the
// epilogue of the contract. y and bias are indexed by absolute column n (y[m*ldy + n],
// bias[n]), so a column range writes in place; bias may be NULL. Columns outside [n0, n1)
// are not touched. y must not overlap x or the packed weights. During the call y holds
// partial sums (K is blocked); the result is final when the function returns.
// Returns 0, GEMM_ERR_RANGE (M < 0, bad column range, ldx < K, ldy < n1) or the error of
// the first-use ISA selection (gemm_isa_init).
int gemm_run(float *y, size_t ldy, const float *x, size_t ldx, const struct gemm_w *w, int M, int n0, int n1,
             const float *bias, int bf16_round, int n_threads);

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
    float *y;
    size_t ldy, ldx;
    const float *x, *w, *bias;
    int K, M, n0, n1, bf16, kc, p0, np, mc, pc, nrb;
};
int gemm_plan_init(struct gemm_plan *p, float *y, size_t ldy, const float *x, size_t ldx, const struct gemm_w *w,
                   int M, int n0, int n1, const float *bias, int bf16_round);
void gemm_plan_task(const struct gemm_plan *p, int task);

// The contract written literally: scalar fmaf chain over unpacked W (N, K) (row stride ldw),
// all N columns into y[m*ldy + n], same epilogue. The reference the tests compare against.
void gemm_ref(float *y, size_t ldy, const float *x, size_t ldx, const float *w, size_t ldw, int M, int N, int K,
              const float *bias, int bf16_round);

// ---- ISA dispatch ----
// Selects the path once: HIFA4_GEMM_ISA=avx512|avx2|scalar if set, else the best the CPU
// supports (__builtin_cpu_supports: avx512f -> avx512, avx2+fma+f16c -> avx2, else scalar).
// Idempotent and thread-safe; gemm_run calls it on first use. Returns 0, or
// GEMM_ERR_UNSUPPORTED (forced ISA not supported by this CPU) / GEMM_ERR_RANGE (unknown
// name) with a one-line message in msg (may be NULL).
int gemm_isa_init(char *msg, size_t msg_n);
// Forces a path by name ("avx512", "avx2", "scalar"; NULL = automatic, environment ignored).
// For tests and benchmarks: not thread-safe against a running gemm_run. Same errors.
int gemm_isa_set(const char *name);
// 1 if this CPU can run the named path.
int gemm_isa_supported(const char *name);
// Name of the selected path (static string; "none" before selection).
const char *gemm_isa_name(void);
// The arithmetic contract's name and version, recorded with results (run.json "gemm"): two
// results made under the same string have the same GEMM bits on any CPU and path.
#define GEMM_ARITHMETIC "fmaf-chain-ascending-k/1"

#endif
