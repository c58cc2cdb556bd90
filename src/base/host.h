// host.h: provenance of the machine and the build a result was made with (recorded in run.json):
// the git revision of the source tree and the CPU; and the memory available. Reads files only; never fails (unknown
// values are reported as "unknown").
#ifndef HIFA4_HOST_H
#define HIFA4_HOST_H

#include <stddef.h>

// The tool's version (`hifa4-eval --version`, run.json "version"); the git revision says which
// commit of it.
#define HIFA4_VERSION "0.9.0"

// The git revision (HEAD's commit) of the tree the executable was built in: the .git beside the
// executable, else the one in the current directory. Follows a symbolic ref through a
// worktree's common dir and packed-refs. "unknown" when neither has one.
void host_git_revision(char *rev, size_t n);

// The CPU's model name (/proc/cpuinfo "model name") and its SIMD level as the code can use it:
// "avx512f", "avx2+fma" or "baseline".
void host_cpu_model(char *out, size_t n);
const char *host_simd_level(void);

// Bytes the kernel says can be allocated without swapping (/proc/meminfo MemAvailable); 0 when
// unknown.
size_t host_mem_available(void);

#endif
