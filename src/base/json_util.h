// json_util.h: typed, validated access to cJSON objects. Every getter names the source
// (file or context string) and the field in its error, as DESIGN.md section 6 asks.
#ifndef HIFA4_JSON_UTIL_H
#define HIFA4_JSON_UTIL_H

#include <cjson/cJSON.h>

#include "base/common.h"

// Parses a JSON text holding exactly one value (only blanks after it: a second value or other
// characters are ERR_FORMAT naming the byte); errors name ctx (usually the file path). *out owned by caller (cJSON_Delete).
int json_parse(cJSON **out, const char *text, size_t len, const char *ctx, struct err *e);
// Reads (zstd-aware, see file_read_all) and parses a file.
int json_parse_file(cJSON **out, const char *path, struct err *e);

// Getters, two per type. A present field of the wrong type is always an error, naming ctx
// (usually the file path), the field and the value: "<ctx>: field 'key': expected <type>, got
// <json>" (and *out is left unchanged). obj itself must be a JSON object.
// json_need_*: the field is required; missing (or JSON null) is "<ctx>: missing field 'key'".
// json_opt_*: the field is optional; missing (or JSON null) sets *out to dflt and returns 0.
int json_need_num(const cJSON *obj, const char *key, double *out, const char *ctx, struct err *e);
int json_opt_num(const cJSON *obj, const char *key, double *out, double dflt, const char *ctx, struct err *e);
// Integers: a number with no fraction, |v| <= 2^53; int also within +-2147483647 (ERR_RANGE).
int json_need_int(const cJSON *obj, const char *key, int *out, const char *ctx, struct err *e);
int json_opt_int(const cJSON *obj, const char *key, int *out, int dflt, const char *ctx, struct err *e);
int json_need_i64(const cJSON *obj, const char *key, int64_t *out, const char *ctx, struct err *e);
int json_opt_i64(const cJSON *obj, const char *key, int64_t *out, int64_t dflt, const char *ctx, struct err *e);
// true/false as 1/0.
int json_need_bool(const cJSON *obj, const char *key, int *out, const char *ctx, struct err *e);
int json_opt_bool(const cJSON *obj, const char *key, int *out, int dflt, const char *ctx, struct err *e);
// *out points into obj (valid while obj lives); dflt may be NULL.
int json_need_str(const cJSON *obj, const char *key, const char **out, const char *ctx, struct err *e);
int json_opt_str(const cJSON *obj, const char *key, const char **out, const char *dflt, const char *ctx,
                 struct err *e);
// A field that must be an object / array; *out points into obj. The optional ones set *out to
// NULL when the field is absent (and on every error, as the required ones do).
int json_need_obj(const cJSON *obj, const char *key, const cJSON **out, const char *ctx, struct err *e);
int json_opt_obj(const cJSON *obj, const char *key, const cJSON **out, const char *ctx, struct err *e);
int json_need_arr(const cJSON *obj, const char *key, const cJSON **out, const char *ctx, struct err *e);
int json_opt_arr(const cJSON *obj, const char *key, const cJSON **out, const char *ctx, struct err *e);

// Short printable rendering of a JSON value for error messages (static buffer per thread).
const char *json_brief(const cJSON *v);

#endif
