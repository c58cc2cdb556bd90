// fingerprint.h: a checkpoint's content fingerprint, version 2: every byte of every
// safetensors file (header and all tensor data) through XXH64, combined in file order with
// each file's size by sha256. Version 1 (st_fingerprint, safetensors.h) hashed the headers and
// three 4 KiB windows per tensor, so an edit elsewhere in a tensor (rows 16-23 of a q_proj)
// left it unchanged; it stays what scales files and the scales cache are keyed by.
// Each file's XXH64 is cached under the download cache (paths_cache()/fingerprints/), keyed by
// the file's identity - device, inode, size and modification time in nanoseconds - so a
// checkpoint is read once; a changed file (new mtime or size) is hashed again.
#ifndef HIFA4_IO_FINGERPRINT_H
#define HIFA4_IO_FINGERPRINT_H

#include "io/safetensors.h"

#define ST_FINGERPRINT_VERSION 2

// What st_fingerprint_all did: files whose hash came from the cache, bytes hashed now, seconds.
struct st_fingerprint_stats {
    int files, cached;
    double bytes_hashed, seconds;
};

// hex = the version-2 fingerprint of st's files. stats may be NULL. A cache that cannot be
// read or written is skipped (the hash is computed); errors: ERR_IO when a file cannot be
// stat'ed, naming it.
int st_fingerprint_all(const struct safetensors *st, char hex[65], struct st_fingerprint_stats *stats, struct err *e);

#endif
