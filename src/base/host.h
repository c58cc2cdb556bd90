// host.h: provenance of the machine and the build a result was made with (recorded in run.json):
// the git revision of the source tree and the CPU; and the memory available. Reads files only; never fails (unknown
// values are reported as "unknown").
#ifndef HIFA4_HOST_H
#define HIFA4_HOST_H

#include <stddef.h>

// The tool's version (`hifa4-eval --version`, run.json "version"); the git revision says which
// commit of it.
#define HIFA4_VERSION "0.9.0"

// The git revision of the program: the commit it was built from when main has set one (the
// build records it, with "-dirty" when tracked files differed from that commit), so a copy of
// the executable anywhere names its own commit. Without one: HEAD's commit of the .git beside
// the executable, else of the one in the current directory (following a symbolic ref through a
// worktree's common dir and packed-refs); "unknown" when neither has one.
void host_git_revision(char *rev, size_t n);

// Sets the revision host_git_revision reports (main.c, from the build); NULL or "" leaves the
// run-time lookup. The string must outlive the program (a literal).
void host_set_build_revision(const char *rev);

// The CPU's model name (/proc/cpuinfo "model name") and its SIMD level as the code can use it:
// "avx512f", "avx2+fma" or "baseline".
void host_cpu_model(char *out, size_t n);
const char *host_simd_level(void);

// Bytes the kernel says can be allocated without swapping (/proc/meminfo MemAvailable); 0 when
// unknown.
size_t host_mem_available(void);

// The C library and the variant of its libm that this CPU selects, e.g. "glibc 2.36 fma".
// glibc's x86-64 libm picks a compiled variant of exp, log, tanh, erf, expf ... at load time:
// "fma" when the CPU has FMA and AVX2, else "sse2". The variants differ in the last bits of
// some results (measured on glibc 2.36 over every binary32 input: exp, log, tanh, erf in
// binary64 differ; expf on 2 of 2^32 inputs; exp and tanh rounded to binary32 do not), so two
// runs whose strings differ may differ in bits outside the GEMM (docs/design/reproducibility.md).
void host_libm(char *out, size_t n);

#endif
