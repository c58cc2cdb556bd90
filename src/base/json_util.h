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

// Getters: required=1 makes a missing field an error; with required=0 a missing (or JSON
// null) field leaves *out unchanged and returns 0. A present field of the wrong type is
// always an error: "<ctx>: field 'key': expected <type>, got <json>".
int json_get_num(const cJSON *obj, const char *key, double *out, int required, const char *ctx, struct err *e);
int json_get_int(const cJSON *obj, const char *key, int *out, int required, const char *ctx, struct err *e);
int json_get_i64(const cJSON *obj, const char *key, int64_t *out, int required, const char *ctx, struct err *e);
int json_get_bool(const cJSON *obj, const char *key, int *out, int required, const char *ctx, struct err *e);
// *out points into obj (valid while obj lives).
int json_get_str(const cJSON *obj, const char *key, const char **out, int required, const char *ctx, struct err *e);
// Field that must be an object / array (NULL when absent and not required).
int json_get_obj(const cJSON *obj, const char *key, const cJSON **out, int required, const char *ctx, struct err *e);
int json_get_arr(const cJSON *obj, const char *key, const cJSON **out, int required, const char *ctx, struct err *e);

// Short printable rendering of a JSON value for error messages (static buffer per thread).
const char *json_brief(const cJSON *v);

#endif
