// json_util.c: validated cJSON getters (see json_util.h).
#include "base/json_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// A key given twice in one object: Python's json, and so transformers and
// lm-eval, keep the last value while cJSON's lookup finds the first - the same file would mean
// two things. Refused naming the key and both values. Sorted per object: O(n log n) for a
// tokenizer vocabulary of 150,000 keys.
struct key_at {
    const cJSON *v;
    size_t at; // position in the object: equal keys sort in file order
};

static int key_cmp(const void *a, const void *b) {
    const struct key_at *x = a, *y = b;
    int c = strcmp(x->v->string, y->v->string);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

static int dup_keys(const cJSON *v, const char *ctx, struct err *e) {
    size_t n = 0;
    for (const cJSON *c = v->child; c; c = c->next) n++;
    if (cJSON_IsObject(v) && n > 1) {
        struct key_at *k = malloc(n * sizeof *k);
        if (!k) return err_set(e, ERR_NOMEM, "%s: out of memory checking keys", ctx);
        size_t i = 0;
        for (const cJSON *c = v->child; c; c = c->next, i++) k[i] = (struct key_at){c, i};
        qsort(k, n, sizeof *k, key_cmp);
        int rc = 0;
        for (i = 1; i < n && !rc; i++) {
            if (strcmp(k[i - 1].v->string, k[i].v->string)) continue;
            char first[100];
            snprintf(first, sizeof first, "%s", json_brief(k[i - 1].v));
            rc = err_set(e, ERR_FORMAT, "%s: key '%s' appears twice in one object (values %s and %s): Python's json takes the "
                         "last, so the file means two things; remove one", ctx, k[i].v->string, first, json_brief(k[i].v));
        }
        free(k);
        if (rc) return rc;
    }
    for (const cJSON *c = v->child; c; c = c->next) {
        int rc = dup_keys(c, ctx, e);
        if (rc) return rc;
    }
    return 0;
}

int json_parse(cJSON **out, const char *text, size_t len, const char *ctx, struct err *e) {
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!j) {
        size_t off = end ? (size_t)(end - text) : 0, b = 0;
        while (b < len && (text[b] == ' ' || text[b] == '\t' || text[b] == '\n' || text[b] == '\r')) b++;
        if (b < len && text[b] == '<') // a proxy's, a login's or the hub's error page saved as the file
            return err_set(e, ERR_FORMAT, "%s: an HTML or XML page, not JSON (an error or login page saved in its place?): "
                           "delete the file and fetch it again", ctx);
        return err_set(e, ERR_FORMAT, "%s: invalid JSON near byte %zu", ctx, off);
    }
    // exactly one value: an object followed by a second one or by garbage was read as
    // its first value alone (cJSON stops there; it also skips NUL and control bytes as blanks)
    size_t off = (size_t)(end - text);
    int rc;
    while (off < len && (text[off] == ' ' || text[off] == '\t' || text[off] == '\n' || text[off] == '\r')) off++;
    if (off < len) {
        cJSON_Delete(j);
        return err_set(e, ERR_FORMAT, "%s: %s at byte %zu (exactly one JSON value is allowed)", ctx,
                       text[off] == '{' || text[off] == '[' ? "a second JSON value" : "other characters after the JSON value", off);
    }
    if ((rc = dup_keys(j, ctx, e))) {
        cJSON_Delete(j);
        return rc;
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

// ---- getters: find the field, then check its type ----

enum presence { FIELD_REQUIRED, FIELD_OPTIONAL };

// The field's value, or NULL: absent or JSON null (an error when required, *rc = 0 when
// optional), or obj is no object (always an error).
static const cJSON *field(const cJSON *obj, const char *key, enum presence need, const char *ctx,
                          struct err *e, int *rc) {
    *rc = 0;
    if (!cJSON_IsObject(obj)) {
        *rc = err_set(e, ERR_FORMAT, "%s: expected a JSON object holding '%s'", ctx, key);
        return NULL;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) {
        if (need == FIELD_REQUIRED) *rc = err_set(e, ERR_FORMAT, "%s: missing field '%s'", ctx, key);
        return NULL;
    }
    return v;
}

static int as_num(const cJSON *v, const char *key, double *out, const char *ctx, struct err *e) {
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected a number, got %s", ctx, key, json_brief(v));
    *out = v->valuedouble;
    return 0;
}

static int as_i64(const cJSON *v, const char *key, int64_t *out, const char *ctx, struct err *e) {
    double d = v->valuedouble;
    if (cJSON_IsNumber(v) && isfinite(d) && d != floor(d)) { // cJSON prints 0.9999999999999999 as 1: say what it is
        char num[40];
        num_shortest(num, sizeof num, d);
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected an integer, got %s (not a whole number)", ctx, key, num);
    }
    if (!cJSON_IsNumber(v) || !isfinite(d) || d != floor(d) || fabs(d) > 9007199254740992.0)
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected an integer, got %s", ctx, key, json_brief(v));
    *out = (int64_t)d;
    return 0;
}

static int as_int(const cJSON *v, const char *key, int *out, const char *ctx, struct err *e) {
    int64_t x = 0;
    int rc = as_i64(v, key, &x, ctx, e);
    if (rc) return rc;
    if (x < -2147483647LL || x > 2147483647LL)
        return err_set(e, ERR_RANGE, "%s: field '%s': %lld out of range", ctx, key, (long long)x);
    *out = (int)x;
    return 0;
}

static int as_bool(const cJSON *v, const char *key, int *out, const char *ctx, struct err *e) {
    if (!cJSON_IsBool(v))
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected true/false, got %s", ctx, key, json_brief(v));
    *out = cJSON_IsTrue(v);
    return 0;
}

static int as_str(const cJSON *v, const char *key, const char **out, const char *ctx, struct err *e) {
    if (!cJSON_IsString(v))
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected a string, got %s", ctx, key, json_brief(v));
    *out = v->valuestring;
    return 0;
}

// *out is NULL unless v is an object / array.
static int as_obj(const cJSON *v, const char *key, const cJSON **out, const char *ctx, struct err *e) {
    *out = NULL;
    if (!cJSON_IsObject(v))
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected an object, got %s", ctx, key, json_brief(v));
    *out = v;
    return 0;
}

static int as_arr(const cJSON *v, const char *key, const cJSON **out, const char *ctx, struct err *e) {
    *out = NULL;
    if (!cJSON_IsArray(v))
        return err_set(e, ERR_FORMAT, "%s: field '%s': expected an array, got %s", ctx, key, json_brief(v));
    *out = v;
    return 0;
}

// need: the value or the error; opt: the value, dflt when absent (rc 0), or the error
int json_need_num(const cJSON *obj, const char *key, double *out, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, FIELD_REQUIRED, ctx, e, &rc);
    return v ? as_num(v, key, out, ctx, e) : rc;
}

int json_opt_num(const cJSON *obj, const char *key, double *out, double dflt, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, FIELD_OPTIONAL, ctx, e, &rc);
    if (!v && !rc) *out = dflt;
    return v ? as_num(v, key, out, ctx, e) : rc;
}

int json_need_int(const cJSON *obj, const char *key, int *out, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, FIELD_REQUIRED, ctx, e, &rc);
    return v ? as_int(v, key, out, ctx, e) : rc;
}

int json_opt_int(const cJSON *obj, const char *key, int *out, int dflt, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, FIELD_OPTIONAL, ctx, e, &rc);
    if (!v && !rc) *out = dflt;
    return v ? as_int(v, key, out, ctx, e) : rc;
}

int json_need_i64(const cJSON *obj, const char *key, int64_t *out, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, FIELD_REQUIRED, ctx, e, &rc);
    return v ? as_i64(v, key, out, ctx, e) : rc;
}

int json_opt_i64(const cJSON *obj, const char *key, int64_t *out, int64_t dflt, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, FIELD_OPTIONAL, ctx, e, &rc);
    if (!v && !rc) *out = dflt;
    return v ? as_i64(v, key, out, ctx, e) : rc;
}

int json_need_bool(const cJSON *obj, const char *key, int *out, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, FIELD_REQUIRED, ctx, e, &rc);
    return v ? as_bool(v, key, out, ctx, e) : rc;
}

int json_opt_bool(const cJSON *obj, const char *key, int *out, int dflt, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, FIELD_OPTIONAL, ctx, e, &rc);
    if (!v && !rc) *out = dflt;
    return v ? as_bool(v, key, out, ctx, e) : rc;
}

int json_need_str(const cJSON *obj, const char *key, const char **out, const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, FIELD_REQUIRED, ctx, e, &rc);
    return v ? as_str(v, key, out, ctx, e) : rc;
}

int json_opt_str(const cJSON *obj, const char *key, const char **out, const char *dflt, const char *ctx,
                 struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, FIELD_OPTIONAL, ctx, e, &rc);
    if (!v && !rc) *out = dflt;
    return v ? as_str(v, key, out, ctx, e) : rc;
}

// obj / arr: *out is NULL on every path that gives no value
typedef int (*as_container)(const cJSON *v, const char *key, const cJSON **out, const char *ctx, struct err *e);
static int container(const cJSON *obj, const char *key, const cJSON **out, enum presence need, as_container as,
                     const char *ctx, struct err *e) {
    int rc;
    const cJSON *v = field(obj, key, need, ctx, e, &rc);
    *out = NULL;
    return v ? as(v, key, out, ctx, e) : rc;
}

int json_need_obj(const cJSON *obj, const char *key, const cJSON **out, const char *ctx, struct err *e) {
    return container(obj, key, out, FIELD_REQUIRED, as_obj, ctx, e);
}

int json_opt_obj(const cJSON *obj, const char *key, const cJSON **out, const char *ctx, struct err *e) {
    return container(obj, key, out, FIELD_OPTIONAL, as_obj, ctx, e);
}

int json_need_arr(const cJSON *obj, const char *key, const cJSON **out, const char *ctx, struct err *e) {
    return container(obj, key, out, FIELD_REQUIRED, as_arr, ctx, e);
}

int json_opt_arr(const cJSON *obj, const char *key, const cJSON **out, const char *ctx, struct err *e) {
    return container(obj, key, out, FIELD_OPTIONAL, as_arr, ctx, e);
}
