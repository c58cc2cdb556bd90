// fetch_internal.h: what fetch_plan.c and fetch_archive.c share inside net/ (not an API).
#ifndef HIFA4_FETCH_INTERNAL_H
#define HIFA4_FETCH_INTERNAL_H

#include "net/fetch.h"

// 1 if s is 64 hex digits (a sha256).
int fetch_is_hex64(const char *s);

// Unpacks the members the plan's entries name from archive entry ai (p->v[ai], fetched) into
// their destinations, marking them present. Member names are only compared with the
// manifest's, never used as paths. Errors: ERR_FORMAT (a malformed or truncated archive),
// ERR_NOTFOUND (a member missing), ERR_IO.
int fetch_tar_extract(struct fetch_plan *p, int ai, struct err *e);

#endif
