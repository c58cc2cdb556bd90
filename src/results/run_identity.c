// run_identity.c: run.json's schema check and a run's identity (run_identity.h). The list of
// what is in the identity is the table `fields` below, and nothing else: a field added to
// run.json stays out of it until it is added here (docs/design/run_record.md says why each is in).
#include "results/run_identity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/json_util.h"
#include "base/sha256.h"

int run_schema(const cJSON *run, int *schema, const char *ctx, struct err *e) {
    int v = 1;
    if (!cJSON_IsObject(run)) return err_set(e, ERR_FORMAT, "%s: not a JSON object", ctx);
    int rc = json_opt_int(run, "schema", &v, 1, ctx, e);
    if (rc) return rc;
    if (v < 1) return err_set(e, ERR_FORMAT, "%s: field 'schema': %d is not a run.json schema version", ctx, v);
    if (v > RUN_SCHEMA)
        return err_set(e, ERR_UNSUPPORTED, "%s: run.json schema version %d; this binary reads versions 1 to %d: use the "
                       "newer hifa4-eval that wrote it", ctx, v, RUN_SCHEMA);
    *schema = v;
    return 0;
}

int run_json_load(cJSON **out, const char *dir, struct err *e) {
    char path[4200];
    int rc, schema;
    *out = NULL;
    if ((rc = path_join(path, sizeof path, dir, "run.json", e)) || (rc = json_parse_file(out, path, e))) return rc;
    if ((rc = run_schema(*out, &schema, path, e))) { cJSON_Delete(*out); *out = NULL; }
    return rc;
}

// ---- entries ----
static int add(struct run_identity *id, const char *name, const char *value) {
    if (id->n == id->cap) {
        int nc = id->cap ? 2 * id->cap : 64;
        struct run_id_entry *t = realloc(id->v, (size_t)nc * sizeof *t);
        if (!t) return ERR_NOMEM;
        id->v = t;
        id->cap = nc;
    }
    char *a = strdup(name), *b = strdup(value);
    if (!a || !b) { free(a); free(b); return ERR_NOMEM; }
    id->v[id->n++] = (struct run_id_entry){a, b};
    return 0;
}

static size_t put(char *out, size_t n, size_t k, const char *s) {
    size_t l = strlen(s);
    if (k < n) snprintf(out + k, n - k, "%s", s);
    return k + l;
}

// x as its identity value at out+k: numbers by value (1e-5 and 0.00001 are one value),
// strings as they are, arrays and objects compactly with their members the same way. Returns
// the length the whole value needs (out holds its first n-1 bytes).
static size_t render_at(char *out, size_t n, size_t k, const cJSON *x) {
    char num[40];
    if (cJSON_IsNumber(x)) { // the shortest form that reads back as the same double (1e-05, not 1.0000000000000001e-05)
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(num, sizeof num, "%.*g", prec, x->valuedouble);
            if (strtod(num, NULL) == x->valuedouble) break;
        }
        return put(out, n, k, num);
    }
    if (cJSON_IsString(x)) return put(out, n, k, x->valuestring);
    if (cJSON_IsBool(x)) return put(out, n, k, cJSON_IsTrue(x) ? "true" : "false");
    if (cJSON_IsNull(x)) return put(out, n, k, "null");
    const int arr = cJSON_IsArray(x);
    k = put(out, n, k, arr ? "[" : "{");
    for (const cJSON *c = x->child; c; c = c->next) {
        if (c != x->child) k = put(out, n, k, ",");
        if (!arr) { k = put(out, n, k, c->string ? c->string : ""); k = put(out, n, k, ":"); }
        if (cJSON_IsString(c)) { k = put(out, n, k, "\""); k = put(out, n, k, c->valuestring); k = put(out, n, k, "\""); }
        else k = render_at(out, n, k, c);
    }
    return put(out, n, k, arr ? "]" : "}");
}

// Objects become one entry per leaf ("prefix key"), arrays and scalars one entry.
static int flatten(struct run_identity *id, const char *name, const cJSON *x) {
    if (cJSON_IsObject(x)) {
        for (const cJSON *c = x->child; c; c = c->next) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s %s", name, c->string ? c->string : "");
            int rc = flatten(id, sub, c);
            if (rc) return rc;
        }
        return 0;
    }
    char probe[1];
    size_t len = render_at(probe, sizeof probe, 0, x); // the length only
    char *val = malloc(len + 1);
    if (!val) return ERR_NOMEM;
    val[0] = 0;
    render_at(val, len + 1, 0, x);
    int rc = add(id, name, val);
    free(val);
    return rc;
}

// ---- the list: what is in a run's identity ----
// path: run.json field ("a.b"); name: what a message calls it; dflt: its value when run.json
// lacks it (what every binary before the field computed), or NULL (absent stays absent).
struct id_field { const char *path, *name, *dflt; };
static const struct id_field fields[] = {
    {"model.config_json", "config.json", NULL},       // schema 2: every field of config.json
    {"model.config", "model config", NULL},           // the sizes (schema 1 has only these)
    {"model.act", "activations", NULL},
    {"tokenizer.hash", "tokenizer", NULL},            // the tokenizer as loaded (vocabulary, merges, ...)
    {"tokenizer.files", "tokenizer file", NULL},      // schema 2: sha256 of tokenizer.json, tokenizer_config.json
    {"tokenizer.bos_policy", "--bos", NULL},
    {"tokenizer.add_bos", "add_bos", NULL},
    {"tokenizer.bos_id", "bos_id", NULL},
    {"tokenizer.eos_id", "eos_id", NULL},
    {"modes", "modes", NULL},
    {"attention.tile", "--tile", NULL},
    {"attention.v_group", "--v-group", NULL},
    {"attention.qformat", "--qformat", NULL},
    {"attention.qmean", "--qmean", "token"},
    {"attention.qdq_skip", "--qdq-skip", "none"},
    {"attention.labels", "mode", NULL},
    {"scales.sha256", "scales sha256", "none"},
    {"seed", "--seed", NULL},
    {"limit", "--limit", NULL},
    {"subjects", "--subjects", NULL},
    {"window", "window", NULL},
    {"replicas", "replicas", NULL},
    {"gemm.arithmetic", "GEMM arithmetic", "openblas"},
    {"numerics.version", "numerics version", "1"},
};
// per task (by name): its items by content and what turns them into requests
static const struct id_field task_fields[] = {
    {"items_sha256", "items sha256", NULL}, {"source", "source", NULL}, // source: schema-1 runs before items_sha256
    {"template_version", "template", NULL}, {"metrics", "metrics", NULL},
    {"n_items", "items", NULL},             {"n_bad_rows", "bad rows", NULL},
    {"seed", "seed", NULL},                 {"ppl_ctx", "--ppl-ctx", NULL},
    {"ppl_score", "--ppl-score", "all"},
};

static const cJSON *at(const cJSON *o, const char *path) {
    char part[64];
    while (o && *path) {
        const char *dot = strchr(path, '.');
        size_t l = dot ? (size_t)(dot - path) : strlen(path);
        snprintf(part, sizeof part, "%.*s", (int)l, path);
        o = cJSON_GetObjectItemCaseSensitive(o, part);
        path += l + (dot != NULL);
    }
    return o;
}

static int add_field(struct run_identity *id, const cJSON *obj, const struct id_field *f, const char *prefix) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", prefix, f->name);
    const cJSON *x = at(obj, f->path);
    if (x && !cJSON_IsNull(x)) return flatten(id, name, x);
    return f->dflt ? add(id, name, f->dflt) : 0;
}

// The weights: version 2 (every byte) from "model.fingerprint", else version 1 (model.hash).
static int add_weights(struct run_identity *id, const cJSON *run) {
    const cJSON *fp = at(run, "model.fingerprint");
    const char *h2 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fp, "hash"));
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(fp, "version");
    const char *h1 = cJSON_GetStringValue(at(run, "model.hash"));
    char val[160];
    if (h2 && cJSON_IsNumber(v)) snprintf(val, sizeof val, "version %d %s", (int)v->valuedouble, h2);
    else snprintf(val, sizeof val, "version 1 %s", h1 ? h1 : "?");
    return add(id, "model fingerprint", val);
}

// The channel form's arithmetic revision: 1 when a channel-form run predates the field.
static int add_qmean_revision(struct run_identity *id, const cJSON *run) {
    const char *q = cJSON_GetStringValue(at(run, "attention.qmean"));
    if (!q || strcmp(q, "channel")) return 0;
    const cJSON *r = at(run, "attention.qmean_revision");
    char val[32];
    snprintf(val, sizeof val, "%d", cJSON_IsNumber(r) ? (int)r->valuedouble : 1);
    return add(id, "Q-Mean channel revision", val);
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const struct run_id_entry *)a)->name, ((const struct run_id_entry *)b)->name);
}

int run_identity_build(struct run_identity *id, const cJSON *run, int with_shard, struct err *e) {
    memset(id, 0, sizeof *id);
    int rc = add_weights(id, run);
    if (!rc) rc = add_qmean_revision(id, run);
    for (size_t i = 0; !rc && i < sizeof fields / sizeof fields[0]; i++) rc = add_field(id, run, &fields[i], "");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(run, "shard");
    if (!rc && with_shard && sh) rc = flatten(id, "shard", sh);
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(run, "tasks")) {
        const char *tn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        char prefix[160];
        snprintf(prefix, sizeof prefix, "task %s ", tn ? tn : "?");
        int has_items = cJSON_GetObjectItemCaseSensitive(t, "items_sha256") != NULL;
        for (size_t i = 0; !rc && i < sizeof task_fields / sizeof task_fields[0]; i++)
            if (!(has_items && !strcmp(task_fields[i].path, "source"))) rc = add_field(id, t, &task_fields[i], prefix);
    }
    if (rc) { run_identity_free(id); return err_set(e, ERR_NOMEM, "run identity: out of memory"); }
    if (id->n > 1) qsort(id->v, (size_t)id->n, sizeof *id->v, cmp_entry);
    return 0;
}

void run_identity_free(struct run_identity *id) {
    for (int i = 0; i < id->n; i++) { free(id->v[i].name); free(id->v[i].value); }
    free(id->v);
    memset(id, 0, sizeof *id);
}

void run_identity_key(char hex[65], const struct run_identity *id) {
    struct sha256 s;
    uint8_t d[32];
    sha256_init(&s);
    for (int i = 0; i < id->n; i++) {
        sha256_update(&s, id->v[i].name, strlen(id->v[i].name));
        sha256_update(&s, "=", 1);
        sha256_update(&s, id->v[i].value, strlen(id->v[i].value));
        sha256_update(&s, "\n", 1);
    }
    sha256_final(&s, d);
    sha256_to_hex(d, hex);
}

// ---- differences ----
// v for a message: a run of 40+ hex digits (a hash) cut to its first 12, then "..".
static void brief(char *out, size_t n, const char *v) {
    size_t k = 0;
    for (const char *p = v; *p && k + 1 < n;) {
        size_t h = strspn(p, "0123456789abcdef");
        if (h >= 40) {
            k += (size_t)snprintf(out + k, n - k, "%.12s..", p);
            p += h;
        } else {
            out[k++] = *p++;
            out[k] = 0;
        }
        if (k >= n) k = n - 1;
    }
    out[k < n ? k : n - 1] = 0;
    if (!*v) snprintf(out, n, "\"\"");
}

static int skipped(const char *name, const char *const *skip) {
    for (int i = 0; skip && skip[i]; i++)
        if (!strncmp(name, skip[i], strlen(skip[i]))) return 1;
    return 0;
}

static void say(char *out, size_t n, int k, const char *name, const char *a, const char *b) {
    char ba[120], bb[120];
    size_t l = strlen(out);
    if (k > 6) return;
    if (k == 6) { snprintf(out + l, n - l, "; ..."); return; }
    brief(ba, sizeof ba, a ? a : "(none)");
    brief(bb, sizeof bb, b ? b : "(none)");
    snprintf(out + l, n - l, "%s%s %s vs %s", l ? "; " : "", name, ba, bb);
}

int run_identity_diff(char *out, size_t n, const struct run_identity *a, const struct run_identity *b,
                      const char *const *skip) {
    int k = 0, i = 0, j = 0;
    if (n) out[0] = 0;
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->v[i].name, b->v[j].name);
        const char *name = c <= 0 ? a->v[i].name : b->v[j].name;
        const char *va = c <= 0 ? a->v[i].value : NULL, *vb = c >= 0 ? b->v[j].value : NULL;
        if (c <= 0) i++;
        if (c >= 0) j++;
        if ((va && vb && !strcmp(va, vb)) || skipped(name, skip)) continue;
        say(out, n, k++, name, va, vb);
    }
    if (k > 6) {
        size_t l = strlen(out);
        snprintf(out + l, n - l, " (%d differences in all)", k);
    }
    return k;
}

int run_json_diff(char *out, size_t n, const cJSON *a, const cJSON *b, int with_shard, const char *const *skip) {
    struct run_identity ia, ib;
    struct err e = {0};
    if (run_identity_build(&ia, a, with_shard, &e)) return -1;
    if (run_identity_build(&ib, b, with_shard, &e)) { run_identity_free(&ia); return -1; }
    int k = run_identity_diff(out, n, &ia, &ib, skip);
    run_identity_free(&ia);
    run_identity_free(&ib);
    return k;
}
