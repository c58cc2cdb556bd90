// paths.h: where the harness finds its own files at run time (configs/, datasets/) and where
// the download cache lives. No network, no downloads; just path resolution with clear errors.
#ifndef HIFA4_PATHS_H
#define HIFA4_PATHS_H

#include <stddef.h>

#include "base/common.h"

// Repository root holding configs/ and datasets/: $HIFA4_HOME if set (must exist), else the
// directory of the running executable (/proc/self/exe) or one of its two parents (so test
// binaries in build/tests/ find the repo root), else the current directory. A candidate is
// accepted when it contains configs/models or datasets. Writes it to out (n bytes).
// Errors: ERR_NOTFOUND naming every place tried; ERR_RANGE if out is too small.
int paths_home(char *out, size_t n, struct err *e);

// Download cache root: the override set by paths_set_cache(), else $HIFA4_CACHE, else
// $HOME/.cache/hifa4. Does not create it.
// Errors: ERR_NOTFOUND when neither HOME nor an override is set; ERR_RANGE on overflow.
int paths_cache(char *out, size_t n, struct err *e);

// Process-wide cache override (the CLI's --cache DIR); NULL clears it. The string is copied.
// Errors: ERR_RANGE if dir is longer than the internal buffer (4095 bytes).
int paths_set_cache(const char *dir, struct err *e);

#endif
