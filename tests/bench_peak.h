// bench_peak.h: the FMA peak of the machine the benchmarks run on, in GFLOP per CPU-second of
// one thread (2 flops per lane per fused multiply-add), so that GEMM and forward figures can
// be printed as fractions of it. Twelve independent accumulator chains of vfmadd231ps (more
// than latency x pipes on current x86 cores), register operands only, in inline assembly so
// that no compiler choice (spills, reordering) can lower the figure. Best of `reps` samples
// of ~0.1 s each. Benchmarks only, never part of `make test`.
#ifndef HIFA4_BENCH_PEAK_H
#define HIFA4_BENCH_PEAK_H

#include <string.h>
#include <time.h>

static double peak_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define PEAK_F(R, i) "vfmadd231ps %%" R "14, %%" R "15, %%" R #i "\n\t"
#define PEAK_F12(R) PEAK_F(R, 0) PEAK_F(R, 1) PEAK_F(R, 2) PEAK_F(R, 3) PEAK_F(R, 4) PEAK_F(R, 5) \
    PEAK_F(R, 6) PEAK_F(R, 7) PEAK_F(R, 8) PEAK_F(R, 9) PEAK_F(R, 10) PEAK_F(R, 11)
#define PEAK_CLOBBER "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
    "xmm11", "xmm14", "xmm15", "cc"

__attribute__((target("avx512f"))) static void peak_loop512(long n) {
    __asm__ volatile("vpxor %%xmm14, %%xmm14, %%xmm14\n\tvpxor %%xmm15, %%xmm15, %%xmm15\n"
                     "1:\n\t" PEAK_F12("zmm") "dec %0\n\tjnz 1b\n\tvzeroupper"
                     : "+r"(n)::PEAK_CLOBBER);
}
__attribute__((target("avx2,fma"))) static void peak_loop256(long n) {
    __asm__ volatile("vpxor %%xmm14, %%xmm14, %%xmm14\n\tvpxor %%xmm15, %%xmm15, %%xmm15\n"
                     "1:\n\t" PEAK_F12("ymm") "dec %0\n\tjnz 1b\n\tvzeroupper"
                     : "+r"(n)::PEAK_CLOBBER);
}
// Scalar FMA (the scalar GEMM path compiles fmaf to vfmadd231ss on FMA machines).
#define PEAK_S(i) "vfmadd231ss %%xmm14, %%xmm15, %%xmm" #i "\n\t"
__attribute__((target("fma"))) static void peak_loop32(long n) {
    __asm__ volatile("vpxor %%xmm14, %%xmm14, %%xmm14\n\tvpxor %%xmm15, %%xmm15, %%xmm15\n"
                     "1:\n\t" PEAK_S(0) PEAK_S(1) PEAK_S(2) PEAK_S(3) PEAK_S(4) PEAK_S(5) PEAK_S(6) PEAK_S(7)
                     PEAK_S(8) PEAK_S(9) PEAK_S(10) PEAK_S(11) "dec %0\n\tjnz 1b"
                     : "+r"(n)::PEAK_CLOBBER);
}

// lanes: 16 (zmm, the avx512 path), 8 (ymm, avx2) or 1 (scalar). Returns 0 if the CPU lacks
// the instructions.
__attribute__((unused)) static double bench_peak(int lanes, int reps) {
    __builtin_cpu_init();
    if (lanes == 16 && !__builtin_cpu_supports("avx512f")) return 0;
    if (lanes != 16 && !__builtin_cpu_supports("fma")) return 0;
    const long n = lanes == 1 ? 10000000L : 5000000L;
    double best = 0;
    for (int r = 0; r < reps; r++) {
        const double t0 = peak_cpu_now();
        if (lanes == 16) peak_loop512(n);
        else if (lanes == 8) peak_loop256(n);
        else peak_loop32(n);
        const double g = (double)n * 12 * 2 * lanes / (peak_cpu_now() - t0) * 1e-9;
        if (g > best) best = g;
    }
    return best;
}

// The peak of a GEMM path by name (gemm_isa_name()).
__attribute__((unused)) static double bench_peak_isa(const char *isa, int reps) {
    return bench_peak(!strncmp(isa, "avx512", 6) ? 16 : !strcmp(isa, "avx2") ? 8 : 1, reps);
}

#endif
