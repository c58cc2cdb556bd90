// json_util.c: validated cJSON getters (see json_util.h).
#include "base/json_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int json_parse(cJSON **out, const char *text, size_t len, const char *ctx, struct err *e) {
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!j) {
        size_t off = end ? (size_t)(end - text) : 0;
        return err_set(e, ERR_FORMAT, "%s: invalid JSON near byte %zu", ctx, off);
    }
    // exactly one value (issue 27): an object followed by a second one or by garbage was read as
    // its first value alone (cJSON stops there; it also skips NUL and control bytes as blanks)
    size_t off = (size_t)(end - text);
    while (off < len && (text[off] == ' ' || text[off] == '\t' || text[off] == '\n' || text[off] == '\r')) off++;
    if (off < len) {
        cJSON_Delete(j);
        return err_set(e, ERR_FORMAT, "%s: %s at byte %zu (exactly one JSON value is allowed)", ctx,
                       text[off] == '{' || text[off] == '[' ? "a second JSON value" : "other characters after the JSON value", off);
    }
    *out = j;
    return 0;
}

int json_parse_file(cJSON **out, const char *path, struct err *e) {
    char *buf;
    size_t len;
    int rc = file_read_all(path, &buf, &len, e);
    if (rc) return rc;
    rc = json_parse(out, buf, len, path, e);
    free(buf);
    return rc;
}

const char *json_brief(const cJSON *v) {
    static _Thread_local char buf[96];
    if (!v) return "nothing";
    char *s = cJSON_PrintUnformatted(v);
    if (!s) return "?";
    size_t n = strlen(s);
    if (n > 60) snprintf(buf, sizeof buf, "%.57s...", s);
    else snprintf(buf, sizeof buf, "%s", s);
    free(s);
    return buf;
}

static const cJSON *field(const cJSON *obj, const char *key, int required, const char *ctx,
                          struct err *e, int *rc) {
    *rc = 0;
    if (!cJSON_IsObject(obj)) {
        *rc = err_set(e, ERR_FORMAT, "%s: expected a JSON object holding '%s'", ctx, key);
        return NULL;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) {
        if (required) *rc = err_set(e, ERR_FORMAT, "%s: missing field '%s'", ctx, key);
        return NULL;
    }
    return v;
}

int json_get_num(const cJSON *obj, const char *key, double *out, int required, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, required, ctx, e, &rc);
    if (!v) return rc;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected a number, got %s", ctx, key, json_brief(v));
    *out = v->valuedouble;
    return 0;
}

int json_get_i64(const cJSON *obj, const char *key, int64_t *out, int required, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, required, ctx, e, &rc);
    if (!v) return rc;
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || !isfinite(d) || d != floor(d) || fabs(d) > 9007199254740992.0)
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected an integer, got %s", ctx, key, json_brief(v));
    *out = (int64_t)d;
    return 0;
}

int json_get_int(const cJSON *obj, const char *key, int *out, int required, const char *ctx, struct err *e) {
    int64_t v = *out;
    int rc = json_get_i64(obj, key, &v, required, ctx, e);
    if (rc) return rc;
    if (v < -2147483647LL || v > 2147483647LL)
        return err_set(e, ERR_RANGE, "%s: field '%s': %lld out of range", ctx, key, (long long)v);
    *out = (int)v;
    return 0;
}

int json_get_bool(const cJSON *obj, const char *key, int *out, int required, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, required, ctx, e, &rc);
    if (!v) return rc;
    if (!cJSON_IsBool(v))
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected true/false, got %s", ctx, key, json_brief(v));
    *out = cJSON_IsTrue(v);
    return 0;
}

int json_get_str(const cJSON *obj, const char *key, const char **out, int required, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, required, ctx, e, &rc);
    if (!v) return rc;
    if (!cJSON_IsString(v))
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected a string, got %s", ctx, key, json_brief(v));
    *out = v->valuestring;
    return 0;
}

int json_get_obj(const cJSON *obj, const char *key, const cJSON **out, int required, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, required, ctx, e, &rc);
    *out = NULL;
    if (!v) return rc;
    if (!cJSON_IsObject(v))
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected an object, got %s", ctx, key, json_brief(v));
    *out = v;
    return 0;
}

int json_get_arr(const cJSON *obj, const char *key, const cJSON **out, int required, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, required, ctx, e, &rc);
    *out = NULL;
    if (!v) return rc;
    if (!cJSON_IsArray(v))
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected an array, got %s", ctx, key, json_brief(v));
    *out = v;
    return 0;
}
