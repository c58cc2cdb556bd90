// run_identity.h: what a run is a run of (docs/design/run_record.md "Identity"). run.json carries a
// schema version ("schema"; absent = 1); this binary writes RUN_SCHEMA and refuses a newer one.
// A run's identity is an explicit list of named inputs that can change a number - the weights'
// fingerprint with its version, every field of config.json, the tokenizer's files, the
// activation rounding, modes and attention options, the scales' sha256, each task's items by
// content, seed, limit, subjects, window, shard, replicas, the GEMM arithmetic and the binary's
// numerics version - read from run.json. Its sha256 is the configuration key of a schema-2
// run ("resume_key"); --resume, merge, diff and tables compare two identities entry by entry
// and name what differs ("config.json rope_theta 10000 vs 500000").
#ifndef HIFA4_RUN_IDENTITY_H
#define HIFA4_RUN_IDENTITY_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/common.h"

// The run.json schema this binary writes (1: no "schema" field; 2: adds "schema",
// model.fingerprint, model.config_json, tokenizer.files, numerics).
#define RUN_SCHEMA 2
// The numerics version of this binary: raised when any change makes a sample's bits differ
// for the same inputs (recorded in run.json "numerics"."version"; runs before the field: 1).
#define RUN_NUMERICS_VERSION 1

// *schema = run's schema (1 when absent). A schema above RUN_SCHEMA is ERR_UNSUPPORTED naming
// ctx and both versions; a malformed field ERR_FORMAT.
int run_schema(const cJSON *run, int *schema, const char *ctx, struct err *e);
// Reads and parses dir/run.json and checks its schema (run_schema). *out owned by the caller.
int run_json_load(cJSON **out, const char *dir, struct err *e);

struct run_id_entry { char *name, *value; };
struct run_identity {
    int n, cap;
    struct run_id_entry *v; // sorted by name
};
// Builds run's identity (with_shard: the shard's k/n too). ERR_NOMEM only.
int run_identity_build(struct run_identity *id, const cJSON *run, int with_shard, struct err *e);
void run_identity_free(struct run_identity *id);
// sha256 (hex) of the entries as "name=value\n" lines.
void run_identity_key(char hex[65], const struct run_identity *id);
// The entries in which a and b differ, as "name A vs B" (long hashes cut to 12 digits; an
// entry one side lacks is "(none)") joined by "; ", at most 6 then "and N more"; returns the
// number of differing entries (0: out = ""). Entries whose name starts with one of the
// prefixes in skip (NULL-terminated list, or NULL) are not compared.
int run_identity_diff(char *out, size_t n, const struct run_identity *a, const struct run_identity *b,
                      const char *const *skip);
// The same for two run.json objects (identities built with with_shard); -1 when out of memory.
int run_json_diff(char *out, size_t n, const cJSON *a, const cJSON *b, int with_shard, const char *const *skip);

#endif
