// run_rec.c: run.json read once into struct run_rec (run_rec.h). Each field is checked for its
// type where it is read; errors name the file, the field's path ("tasks[1].n_items") and the
// value. Optional fields absent from older files keep the "absent" value the header gives.
#include "results/run_rec.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/json_util.h"
#include "results/results.h"
#include "results/run_identity.h"

// ---- typed getters: field `key` of object o, whose path in the file is prefix (e.g. "model.") ----
struct at { const char *path, *prefix; }; // the file, the object's path ("" at the top)

static int missing(const struct at *a, const char *key, struct err *e) {
    return err_set(e, ERR_FORMAT, "%s: missing field '%s%s'", a->path, a->prefix, key);
}
static int bad(const struct at *a, const char *key, const char *want, const cJSON *x, struct err *e) {
    return err_set(e, ERR_FORMAT, "%s: field '%s%s': expected %s, got %s", a->path, a->prefix, key, want, json_brief(x));
}
// The field, or NULL when absent or JSON null.
static const cJSON *field(const cJSON *o, const char *key) {
    const cJSON *x = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsNull(x) ? NULL : x;
}
static int get_str(const cJSON *o, const char *key, const char **out, const struct at *a, struct err *e) {
    const cJSON *x = field(o, key);
    if (!x) return 0;
    if (!cJSON_IsString(x)) return bad(a, key, "a string", x, e);
    *out = x->valuestring;
    return 0;
}
static int get_num(const cJSON *o, const char *key, double *out, const struct at *a, struct err *e) {
    const cJSON *x = field(o, key);
    if (!x) return 0;
    if (!cJSON_IsNumber(x)) return bad(a, key, "a number", x, e);
    *out = x->valuedouble;
    return 0;
}
// An integer in [lo, hi].
static int get_int(const cJSON *o, const char *key, int *out, int lo, int hi, const struct at *a, struct err *e) {
    const cJSON *x = field(o, key);
    if (!x) return 0;
    if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || x->valuedouble < lo || x->valuedouble > hi) {
        char want[80];
        snprintf(want, sizeof want, "an integer in [%d, %d]", lo, hi);
        return bad(a, key, want, x, e);
    }
    *out = (int)x->valuedouble;
    return 0;
}
static int get_bool(const cJSON *o, const char *key, int *out, const struct at *a, struct err *e) {
    const cJSON *x = field(o, key);
    if (!x) return 0;
    if (!cJSON_IsBool(x)) return bad(a, key, "true/false", x, e);
    *out = cJSON_IsTrue(x);
    return 0;
}
static int get_obj(const cJSON *o, const char *key, const cJSON **out, const struct at *a, struct err *e) {
    const cJSON *x = field(o, key);
    *out = NULL;
    if (!x) return 0;
    if (!cJSON_IsObject(x)) return bad(a, key, "an object", x, e);
    *out = x;
    return 0;
}
static int get_arr(const cJSON *o, const char *key, const cJSON **out, const struct at *a, struct err *e) {
    const cJSON *x = field(o, key);
    *out = NULL;
    if (!x) return 0;
    if (!cJSON_IsArray(x)) return bad(a, key, "an array", x, e);
    *out = x;
    return 0;
}

// ---- sections ----
static int read_model(struct run_rec *r, struct err *e) {
    const struct at top = {r->path, ""}, at = {r->path, "model."}, fa = {r->path, "model.fingerprint."},
                    ca = {r->path, "model.checkpoint_metadata."};
    const cJSON *m, *fp, *cm;
    int rc = get_obj(r->json, "model", &m, &top, e);
    if (rc || !m) return rc;
    if ((rc = get_str(m, "name", &r->model.name, &at, e)) || (rc = get_str(m, "arg", &r->model.arg, &at, e)) ||
        (rc = get_str(m, "path", &r->model.path, &at, e)) || (rc = get_str(m, "hash", &r->model.hash, &at, e)) ||
        (rc = get_str(m, "act", &r->model.act, &at, e)) || (rc = get_obj(m, "fingerprint", &fp, &at, e)) ||
        (rc = get_obj(m, "checkpoint_metadata", &cm, &at, e)))
        return rc;
    if (fp && ((rc = get_int(fp, "version", &r->model.fingerprint_version, 1, 1000, &fa, e)) ||
               (rc = get_str(fp, "hash", &r->model.fingerprint, &fa, e))))
        return rc;
    if (cm && ((rc = get_str(cm, "gguf_file", &r->model.gguf_file, &ca, e)) ||
               (rc = get_str(cm, "gguf_file_type", &r->model.gguf_file_type, &ca, e)) ||
               (rc = get_str(cm, "gguf_tensor_types", &r->model.gguf_tensor_types, &ca, e)) ||
               (rc = get_str(cm, "gguf_sha256", &r->model.gguf_sha256, &ca, e))))
        return rc;
    return 0;
}

static int read_tokenizer(struct run_rec *r, struct err *e) {
    const struct at top = {r->path, ""}, at = {r->path, "tokenizer."};
    const cJSON *t;
    r->tokenizer.bos_id = r->tokenizer.eos_id = -1;
    int rc = get_obj(r->json, "tokenizer", &t, &top, e);
    if (rc || !t) return rc;
    if ((rc = get_str(t, "path", &r->tokenizer.path, &at, e)) || (rc = get_str(t, "hash", &r->tokenizer.hash, &at, e)) ||
        (rc = get_str(t, "bos_policy", &r->tokenizer.bos_policy, &at, e)) ||
        (rc = get_bool(t, "add_bos", &r->tokenizer.add_bos, &at, e)) ||
        (rc = get_int(t, "bos_id", &r->tokenizer.bos_id, -1, 1 << 30, &at, e)) ||
        (rc = get_int(t, "eos_id", &r->tokenizer.eos_id, -1, 1 << 30, &at, e)))
        return rc;
    return 0;
}

// "modes" (required, strings, at least one) with each mode's attention.labels and .display.
static int read_modes(struct run_rec *r, const cJSON *labels, const cJSON *display, struct err *e) {
    const struct at top = {r->path, ""}, la = {r->path, "attention.labels."}, da = {r->path, "attention.display."};
    const cJSON *ms;
    int rc = get_arr(r->json, "modes", &ms, &top, e), n = cJSON_GetArraySize(ms);
    if (rc) return rc;
    if (!ms) return missing(&top, "modes", e);
    if (n < 1) return err_set(e, ERR_FORMAT, "%s: field 'modes': empty (the reference mode comes first)", r->path);
    if (!(r->modes = calloc((size_t)n, sizeof *r->modes))) return err_set(e, ERR_NOMEM, "%s: out of memory", r->path);
    const cJSON *x;
    cJSON_ArrayForEach(x, ms) {
        struct run_rec_mode *m = &r->modes[r->n_modes];
        if (!cJSON_IsString(x))
            return err_set(e, ERR_FORMAT, "%s: field 'modes[%d]': expected a string, got %s", r->path, r->n_modes, json_brief(x));
        m->name = m->display = x->valuestring;
        r->n_modes++;
        if ((rc = get_str(labels, m->name, &m->label, &la, e)) || (rc = get_str(display, m->name, &m->display, &da, e)))
            return rc;
    }
    r->reference = r->modes[0].name;
    return get_str(r->json, "reference", &r->reference, &top, e);
}

static int read_attention(struct run_rec *r, struct err *e) {
    const struct at top = {r->path, ""}, at = {r->path, "attention."};
    const cJSON *a, *labels = NULL, *display = NULL;
    r->attention.tile = -1;
    int rc = get_obj(r->json, "attention", &a, &top, e);
    if (!rc && a &&
        ((rc = get_int(a, "tile", &r->attention.tile, 0, 1 << 30, &at, e)) ||
         (rc = get_str(a, "v_group", &r->attention.v_group, &at, e)) || (rc = get_str(a, "qformat", &r->attention.qformat, &at, e)) ||
         (rc = get_str(a, "qmean", &r->attention.qmean, &at, e)) ||
         (rc = get_int(a, "qmean_revision", &r->attention.qmean_revision, 0, 1 << 30, &at, e)) ||
         (rc = get_str(a, "qdq_skip", &r->attention.qdq_skip, &at, e)) || (rc = get_obj(a, "labels", &labels, &at, e)) ||
         (rc = get_obj(a, "display", &display, &at, e))))
        return rc;
    return rc ? rc : read_modes(r, labels, display, e);
}

// "storage": {mode: {format, bits_per_value, per_tensor_scale}} in the file's order.
static int read_storage(struct run_rec *r, struct err *e) {
    const struct at top = {r->path, ""};
    const cJSON *s, *x;
    int rc = get_obj(r->json, "storage", &s, &top, e);
    if (rc || !s) return rc;
    if (!(r->storage = calloc((size_t)cJSON_GetArraySize(s) + 1, sizeof *r->storage)))
        return err_set(e, ERR_NOMEM, "%s: out of memory", r->path);
    cJSON_ArrayForEach(x, s) {
        char prefix[300];
        snprintf(prefix, sizeof prefix, "storage.%s.", x->string);
        const struct at at = {r->path, prefix};
        struct run_rec_storage *st = &r->storage[r->n_storage++];
        st->mode = x->string;
        st->bits_per_value = NAN;
        if (!cJSON_IsObject(x)) return err_set(e, ERR_FORMAT, "%s: field 'storage.%s': expected an object, got %s", r->path, x->string, json_brief(x));
        if ((rc = get_str(x, "format", &st->format, &at, e)) || (rc = get_num(x, "bits_per_value", &st->bits_per_value, &at, e)) ||
            (rc = get_bool(x, "per_tensor_scale", &st->per_tensor_scale, &at, e)))
            return rc;
    }
    return 0;
}

// "scales", "scales_calibration", "shard", "replicas", "gemm", "host".
static int read_inputs(struct run_rec *r, struct err *e) {
    const struct at top = {r->path, ""}, sa = {r->path, "scales."}, ca = {r->path, "scales_calibration."},
                    ha = {r->path, "shard."}, ra = {r->path, "replicas."}, ga = {r->path, "gemm."}, oa = {r->path, "host."};
    const cJSON *s, *c, *sh, *rp, *g, *h;
    int rc;
    if ((rc = get_obj(r->json, "scales", &s, &top, e)) || (rc = get_obj(r->json, "scales_calibration", &c, &top, e)) ||
        (rc = get_obj(r->json, "shard", &sh, &top, e)) || (rc = get_obj(r->json, "replicas", &rp, &top, e)) ||
        (rc = get_obj(r->json, "gemm", &g, &top, e)) || (rc = get_obj(r->json, "host", &h, &top, e)))
        return rc;
    if ((rc = get_str(s, "path", &r->scales.path, &sa, e)) || (rc = get_str(s, "sha256", &r->scales.sha256, &sa, e)) ||
        (rc = get_str(c, "aggregator", &r->calibration.aggregator, &ca, e)) ||
        (rc = get_str(c, "gate", &r->calibration.gate, &ca, e)) || (rc = get_str(c, "gate_rule", &r->calibration.gate_rule, &ca, e)) ||
        (rc = get_str(c, "alpha", &r->calibration.alpha, &ca, e)) ||
        (rc = get_str(c, "layer_alphas", &r->calibration.layer_alphas, &ca, e)) ||
        (rc = get_str(g, "arithmetic", &r->gemm_arithmetic, &ga, e)) || (rc = get_str(h, "cpu", &r->host_cpu, &oa, e)) ||
        (rc = get_str(h, "libm", &r->host_libm, &oa, e)))
        return rc;
    if (sh) {
        r->has_shard = 1;
        r->shard_k = r->shard_n = -1;
        if ((rc = get_int(sh, "n", &r->shard_n, 1, 1 << 20, &ha, e)) || (rc = get_int(sh, "k", &r->shard_k, 0, r->shard_n - 1, &ha, e)))
            return rc;
        if (r->shard_k < 0) return missing(&ha, "k", e);
        if (r->shard_n < 0) return missing(&ha, "n", e);
    }
    if (rp) {
        r->has_replicas = 1;
        r->replicas = -1;
        if ((rc = get_int(rp, "k", &r->replicas, 0, RESULTS_MAX_REPLICAS, &ra, e))) return rc;
        if (r->replicas < 0) return missing(&ra, "k", e);
    }
    return 0;
}

static int read_metrics(struct run_rec_task *t, const cJSON *ms, const struct at *at, struct err *e) {
    const cJSON *x;
    cJSON_ArrayForEach(x, ms) {
        if (!cJSON_IsString(x))
            return err_set(e, ERR_FORMAT, "%s: field '%smetrics[%d]': expected a string, got %s", at->path, at->prefix,
                           t->n_metrics, json_brief(x));
        if (t->n_metrics == RUN_REC_MAX_METRICS)
            return err_set(e, ERR_RANGE, "%s: field '%smetrics': more than %d metrics", at->path, at->prefix, RUN_REC_MAX_METRICS);
        t->metrics[t->n_metrics++] = x->valuestring;
        t->is_ppl |= !strcmp(x->valuestring, "ppl");
        t->has_acc_norm |= !strcmp(x->valuestring, "acc_norm");
    }
    return 0;
}

static int read_task(struct run_rec_task *t, const cJSON *x, const struct at *at, struct err *e) {
    const cJSON *ms, *ir;
    int rc;
    *t = (struct run_rec_task){.n_items = -1, .item_lo = -1, .item_hi = -1, .items = -1, .n_bad_rows = -1,
                               .n_truncated = -1, .n_tokens = NAN};
    if ((rc = get_str(x, "name", &t->name, at, e))) return rc;
    if (!t->name) return missing(at, "name", e);
    if ((rc = get_int(x, "n_items", &t->n_items, 0, INT_MAX, at, e)) || (rc = get_arr(x, "metrics", &ms, at, e)) ||
        (rc = get_arr(x, "item_range", &ir, at, e)) || (rc = get_str(x, "template_version", &t->template_version, at, e)) ||
        (rc = get_str(x, "source", &t->source, at, e)) || (rc = get_str(x, "items_sha256", &t->items_sha256, at, e)) ||
        (rc = get_str(x, "ppl_score", &t->ppl_score, at, e)) || (rc = get_int(x, "n_bad_rows", &t->n_bad_rows, 0, INT_MAX, at, e)) ||
        (rc = get_int(x, "n_truncated", &t->n_truncated, 0, INT_MAX, at, e)) ||
        (rc = get_int(x, "n_odd_choices", &t->n_odd_choices, 0, INT_MAX, at, e)) ||
        (rc = get_str(x, "odd_choices_first", &t->odd_choices_first, at, e)) || (rc = get_num(x, "n_tokens", &t->n_tokens, at, e)) ||
        (rc = read_metrics(t, ms, at, e)))
        return rc;
    if (ir) {
        const cJSON *lo = cJSON_GetArrayItem(ir, 0), *hi = cJSON_GetArrayItem(ir, 1);
        if (cJSON_GetArraySize(ir) != 2 || !cJSON_IsNumber(lo) || !cJSON_IsNumber(hi) || lo->valuedouble < 0 ||
            hi->valuedouble < lo->valuedouble || hi->valuedouble > INT_MAX || lo->valuedouble != floor(lo->valuedouble) ||
            hi->valuedouble != floor(hi->valuedouble))
            return bad(at, "item_range", "[first, end) item indices", ir, e);
        t->item_lo = (int)lo->valuedouble;
        t->item_hi = (int)hi->valuedouble;
    }
    t->items = ir ? t->item_hi - t->item_lo : t->n_items;
    return 0;
}

static int read_tasks(struct run_rec *r, struct err *e) {
    const struct at top = {r->path, ""};
    const cJSON *ts, *x;
    int rc = get_arr(r->json, "tasks", &ts, &top, e);
    if (rc) return rc;
    if (!ts) return missing(&top, "tasks", e);
    if (!(r->tasks = calloc((size_t)cJSON_GetArraySize(ts) + 1, sizeof *r->tasks)))
        return err_set(e, ERR_NOMEM, "%s: out of memory", r->path);
    cJSON_ArrayForEach(x, ts) {
        char prefix[40];
        snprintf(prefix, sizeof prefix, "tasks[%d].", r->n_tasks);
        const struct at at = {r->path, prefix};
        if (!cJSON_IsObject(x))
            return err_set(e, ERR_FORMAT, "%s: field 'tasks[%d]': expected an object, got %s", r->path, r->n_tasks, json_brief(x));
        if ((rc = read_task(&r->tasks[r->n_tasks], x, &at, e))) return rc;
        r->n_tasks++;
    }
    return 0;
}

// The top level's scalars and the invocation's measurements.
static int read_top(struct run_rec *r, struct err *e) {
    const struct at top = {r->path, ""};
    r->seed = NAN;
    r->limit = -1;
    return get_str(r->json, "tool", &r->tool, &top, e) || get_str(r->json, "version", &r->version, &top, e) ||
           get_str(r->json, "git_revision", &r->git_revision, &top, e) || get_str(r->json, "created", &r->created, &top, e) ||
           get_str(r->json, "note", &r->note, &top, e) || get_num(r->json, "seed", &r->seed, &top, e) ||
           get_int(r->json, "limit", &r->limit, 0, INT_MAX, &top, e) || get_str(r->json, "subjects", &r->subjects, &top, e) ||
           get_str(r->json, "resume_key", &r->resume_key, &top, e) || get_bool(r->json, "complete", &r->complete, &top, e) ||
           get_obj(r->json, "timings", &r->timings, &top, e) || get_obj(r->json, "prefix_cache", &r->prefix_cache, &top, e)
               ? ERR_FORMAT : 0;
}

int run_rec_from_json(struct run_rec *r, cJSON *json, const char *path, struct err *e) {
    memset(r, 0, sizeof *r);
    r->json = json;
    snprintf(r->path, sizeof r->path, "%s", path);
    int rc = run_schema(json, &r->schema, r->path, e);
    if (!rc) rc = read_top(r, e);
    if (!rc) rc = read_model(r, e);
    if (!rc) rc = read_tokenizer(r, e);
    if (!rc) rc = read_attention(r, e);
    if (!rc) rc = read_storage(r, e);
    if (!rc) rc = read_inputs(r, e);
    if (!rc) rc = read_tasks(r, e);
    return rc;
}

int run_rec_load(struct run_rec *r, const char *dir, struct err *e) {
    char path[4200];
    cJSON *json = NULL;
    memset(r, 0, sizeof *r);
    int rc = path_join(path, sizeof path, dir, "run.json", e);
    if (!rc) rc = json_parse_file(&json, path, e);
    return rc ? rc : run_rec_from_json(r, json, path, e);
}

void run_rec_free(struct run_rec *r) {
    if (!r) return;
    free(r->modes);
    free(r->storage);
    free(r->tasks);
    cJSON_Delete(r->json);
    memset(r, 0, sizeof *r);
}

const char *run_rec_display(const struct run_rec *r, const char *mode) {
    for (int m = 0; m < r->n_modes; m++)
        if (!strcmp(r->modes[m].name, mode)) return r->modes[m].display;
    return mode;
}

const char *run_rec_qmean(const struct run_rec *r) { return r->attention.qmean ? r->attention.qmean : "token"; }

const struct run_rec_task *run_rec_task(const struct run_rec *r, const char *name) {
    const struct run_rec_task *hit = NULL;
    for (int t = 0; t < r->n_tasks; t++)
        if (!strcmp(r->tasks[t].name, name)) hit = &r->tasks[t];
    return hit;
}

int run_rec_has_mode(const struct run_rec *r, const char *mode) {
    for (int m = 0; m < r->n_modes; m++)
        if (!strcmp(r->modes[m].name, mode)) return 1;
    return 0;
}
