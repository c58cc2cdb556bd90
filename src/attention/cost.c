// cost.c: exact work counts of an attention call, the parameter file loader and the cycle
// model of spec/cost.md. See cost.h for the contract.
#include "attention/cost.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention/attn.h"
#include "base/json_util.h"

// ---- names ----
static const char *const vop_names[COST_V_COUNT] = {
    "max", "sub", "exp", "sum", "cast", "qdq", "add", "qmean_gemv",
    "row_mr", "row_mr_exp", "row_l", "row_o",
    "qkv_qdq", "smooth", "qmean", "final",
};
static const int vop_kind[COST_V_COUNT] = {
    COST_K_MAX, COST_K_SUB, COST_K_EXP, COST_K_SUM, COST_K_CAST, COST_K_QDQ, COST_K_ADD, COST_K_QMEAN,
    COST_K_ROW, COST_K_EXP, COST_K_ROW, COST_K_ROW,
    COST_K_QDQ, COST_K_SMOOTH, COST_K_QMEAN, COST_K_FINAL,
};
static const char *const kind_names[COST_K_COUNT] = {
    "max", "sub", "exp", "sum", "cast", "qdq", "add", "row", "smooth", "qmean", "final",
};

const char *cost_vop_name(int vop) { return (vop >= 0 && vop < COST_V_COUNT) ? vop_names[vop] : "?"; }
const char *cost_kind_name(int kind) { return (kind >= 0 && kind < COST_K_COUNT) ? kind_names[kind] : "?"; }
int cost_vop_kind(int vop) { return (vop >= 0 && vop < COST_V_COUNT) ? vop_kind[vop] : 0; }

// ---- counts ----
int64_t cost_visited_tiles(int T, int window, int Br, int Bc) {
    if (T <= 0 || Br <= 0 || Bc <= 0) return 0;
    int64_t n = 0;
    for (int64_t i_lo = 0; i_lo < T; i_lo += Br) {
        int64_t i_hi = i_lo + Br - 1 < T - 1 ? i_lo + Br - 1 : T - 1;
        // tile t (keys [t*Bc, t*Bc+Bc-1]) holds a visible (i, j) iff the differences i - j
        // over the block x tile rectangle, the interval [i_lo - (t*Bc+Bc-1), i_hi - t*Bc],
        // meet [0, window-1]: t*Bc <= i_hi and t*Bc + Bc - 1 >= i_lo - window + 1.
        int64_t t_hi = i_hi / Bc, t_lo = 0;
        if (window > 0) {
            int64_t first_key = i_lo - window + 1; // oldest key some row of the block sees
            if (first_key > 0) t_lo = first_key / Bc;
        }
        n += t_hi - t_lo + 1;
    }
    return n;
}

// ---- checked 64-bit arithmetic: a count that does not fit names itself ----
// (counts are exact integers; a wrapped one printed a negative Softmax column for a 70B shape
// at T = 4M)
struct ck { const char *bad; };
static int64_t ck_mul(struct ck *k, const char *what, int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) { if (!k->bad) k->bad = what; return 0; }
    return r;
}
static void ck_add(struct ck *k, const char *what, int64_t *acc, int64_t v) {
    if (__builtin_add_overflow(*acc, v, acc) && !k->bad) k->bad = what;
}

// a += b with every field checked; on overflow *a is unchanged and the field is named.
static int add_checked(struct cost_counts *a, const struct cost_counts *b, struct err *e) {
    struct cost_counts t = *a;
    struct ck k = {0};
    ck_add(&k, "calls", &t.calls, b->calls);
    ck_add(&k, "tokens", &t.tokens, b->tokens);
    ck_add(&k, "tiles", &t.tiles, b->tiles);
    ck_add(&k, "cube_macs.qk16", &t.mac16_qk, b->mac16_qk);
    ck_add(&k, "cube_macs.pv16", &t.mac16_pv, b->mac16_pv);
    ck_add(&k, "cube_macs.ones16", &t.mac16_ones, b->mac16_ones);
    ck_add(&k, "cube_macs.qk4", &t.mac4_qk, b->mac4_qk);
    ck_add(&k, "cube_macs.pv4", &t.mac4_pv, b->mac4_pv);
    ck_add(&k, "cube_macs.ones4", &t.mac4_ones, b->mac4_ones);
    for (int v = 0; v < COST_V_COUNT; v++) ck_add(&k, vop_names[v], &t.vop[v], b->vop[v]);
    ck_add(&k, "bytes.elems16", &t.elems16, b->elems16);
    ck_add(&k, "bytes.elems4", &t.elems4, b->elems4);
    ck_add(&k, "bytes.bytes16", &t.bytes16, b->bytes16);
    if (k.bad)
        return err_set(e, ERR_RANGE, "cost counts: the total of '%s' exceeds 2^63 - 1", k.bad);
    t.bytes4 = a->bytes4 + b->bytes4;
    *a = t;
    return 0;
}

int cost_count_call(struct cost_counts *acc, unsigned mode_flags, const struct cost_shape *sh, struct err *e) {
    const int T = sh->T, H = sh->H, Hkv = sh->Hkv, d = sh->d, window = sh->window, Br = sh->Br, Bc = sh->Bc;
    if (T <= 0 || H <= 0 || Hkv <= 0 || d <= 0 || Br <= 0 || Bc <= 0) return 0;
    const int quant = (mode_flags & ATTN_F_QUANT) != 0;
    const int preorder = (mode_flags & ATTN_F_PREORDER) != 0;
    const int qmean = (mode_flags & ATTN_F_QMEAN) != 0;
    const int qmean_ch = qmean && (mode_flags & ATTN_F_QMEAN_CH) != 0;
    const int sqk = (mode_flags & ATTN_F_SQK) != 0;
    struct ck k = {0};
    const int64_t tiles = ck_mul(&k, "tiles", cost_visited_tiles(T, window, Br, Bc), H);
    const int64_t el = ck_mul(&k, "score elements", ck_mul(&k, "score elements", tiles, Br), Bc);
    const int64_t rows = ck_mul(&k, "tile rows", tiles, Br);
    const int64_t t = T, q_el = ck_mul(&k, "Q elements", ck_mul(&k, "Q elements", t, H), d);
    const int64_t kv_el = ck_mul(&k, "K/V elements", ck_mul(&k, "K/V elements", t, Hkv), d);
    const int64_t mac = ck_mul(&k, quant ? "cube_macs.qk4" : "cube_macs.qk16", el, d), ones = preorder ? el : 0;

    struct cost_counts c = {0};
    c.calls = 1;
    c.tokens = T;
    c.tiles = tiles;
    if (quant) { c.mac4_qk = c.mac4_pv = mac; c.mac4_ones = ones; }
    else { c.mac16_qk = c.mac16_pv = mac; c.mac16_ones = ones; }
    int64_t *v = c.vop;
    v[COST_V_MAX] = v[COST_V_SUB] = v[COST_V_EXP] = el;
    if (!preorder) v[COST_V_SUM] = el;
    if (quant) v[COST_V_QDQ] = el;
    else v[COST_V_CAST] = el;
    if (qmean) v[COST_V_ADD] = el;
    // channel form: delta of the tile's keys, per (row block, key tile)
    if (qmean_ch) v[COST_V_QMEAN_GEMV] = ck_mul(&k, "qmean_gemv", ck_mul(&k, "qmean_gemv", tiles, Bc), d);
    v[COST_V_ROW_MR] = ck_mul(&k, "row_mr", 2, rows);
    v[COST_V_ROW_MR_EXP] = rows;
    v[COST_V_ROW_L] = ck_mul(&k, "row_l", 2, rows);
    v[COST_V_ROW_O] = ck_mul(&k, "row_o", rows, d);
    int64_t qkv = q_el, qk = q_el;
    ck_add(&k, "qkv_qdq", &qkv, ck_mul(&k, "qkv_qdq", 2, kv_el));
    ck_add(&k, "smooth", &qk, kv_el);
    if (quant) v[COST_V_QKV_QDQ] = qkv;
    if (sqk) v[COST_V_SMOOTH] = qk;
    // token: row means and kappa; channel: a column mean per query tile (padded like the tiles)
    if (qmean)
        v[COST_V_QMEAN] = qmean_ch ? ck_mul(&k, "qmean", ck_mul(&k, "qmean", (t + Br - 1) / Br * Br, H), d) : qk;
    v[COST_V_FINAL] = q_el;
    // Q, K, V read once, O written once; O is always 16-bit (out = bf16(...)).
    if (quant) { c.elems4 = qkv; c.elems16 = q_el; }
    else { c.elems16 = ck_mul(&k, "bytes.elems16", 2, q_el); ck_add(&k, "bytes.elems16", &c.elems16, ck_mul(&k, "bytes.elems16", 2, kv_el)); }
    c.bytes16 = ck_mul(&k, "bytes.bytes16", 2, c.elems16);
    c.bytes4 = (double)c.elems4 * 4.5 / 8.0;
    if (k.bad)
        return err_set(e, ERR_RANGE, "cost counts: '%s' of one call exceeds 2^63 - 1 (T %d, heads %d/%d, head_dim %d, "
                       "window %d, tiles %dx%d)", k.bad, T, H, Hkv, d, window, Br, Bc);
    int rc = add_checked(acc, &c, e);
    if (rc) return err_prefix(e, "T %d, heads %d/%d, head_dim %d", T, H, Hkv, d);
    return 0;
}

int cost_add(struct cost_counts *a, const struct cost_counts *b, struct err *e) { return add_checked(a, b, e); }

static int add_num(cJSON *o, const char *key, double v) {
    return cJSON_AddNumberToObject(o, key, v) ? 0 : -1;
}

cJSON *cost_counts_json(const struct cost_counts *c) {
    cJSON *o = cJSON_CreateObject(), *cube = NULL, *vec = NULL, *bytes = NULL;
    if (!o) return NULL;
    int bad = add_num(o, "calls", (double)c->calls) | add_num(o, "tokens", (double)c->tokens) |
              add_num(o, "tiles", (double)c->tiles);
    cube = cJSON_AddObjectToObject(o, "cube_macs");
    vec = cJSON_AddObjectToObject(o, "vector_ops");
    bytes = cJSON_AddObjectToObject(o, "bytes");
    if (bad || !cube || !vec || !bytes) goto fail;
    bad = add_num(cube, "qk16", (double)c->mac16_qk) | add_num(cube, "pv16", (double)c->mac16_pv) |
          add_num(cube, "ones16", (double)c->mac16_ones) | add_num(cube, "qk4", (double)c->mac4_qk) |
          add_num(cube, "pv4", (double)c->mac4_pv) | add_num(cube, "ones4", (double)c->mac4_ones);
    for (int k = 0; k < COST_V_COUNT; k++) bad |= add_num(vec, vop_names[k], (double)c->vop[k]);
    bad |= add_num(bytes, "elems16", (double)c->elems16) | add_num(bytes, "elems4", (double)c->elems4) |
           add_num(bytes, "bytes16", (double)c->bytes16) | add_num(bytes, "bytes4", c->bytes4);
    if (bad) goto fail;
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

static int get_count(const cJSON *o, const char *key, int64_t *out, const char *ctx, struct err *e) {
    int rc = json_need_i64(o, key, out, ctx, e);
    if (rc) return rc;
    if (*out < 0) return err_set(e, ERR_RANGE, "%s: field '%s': must be >= 0, got %lld", ctx, key, (long long)*out);
    return 0;
}

int cost_counts_from_json(struct cost_counts *c, const cJSON *obj, const char *ctx, struct err *e) {
    memset(c, 0, sizeof *c);
    char sub[512];
    const cJSON *cube, *vec, *bytes;
    int rc;
    if ((rc = get_count(obj, "calls", &c->calls, ctx, e)) || (rc = get_count(obj, "tokens", &c->tokens, ctx, e)) ||
        (rc = get_count(obj, "tiles", &c->tiles, ctx, e)) || (rc = json_need_obj(obj, "cube_macs", &cube, ctx, e)) ||
        (rc = json_need_obj(obj, "vector_ops", &vec, ctx, e)) || (rc = json_need_obj(obj, "bytes", &bytes, ctx, e)))
        return rc;
    snprintf(sub, sizeof sub, "%s: cube_macs", ctx);
    if ((rc = get_count(cube, "qk16", &c->mac16_qk, sub, e)) || (rc = get_count(cube, "pv16", &c->mac16_pv, sub, e)) ||
        (rc = get_count(cube, "ones16", &c->mac16_ones, sub, e)) || (rc = get_count(cube, "qk4", &c->mac4_qk, sub, e)) ||
        (rc = get_count(cube, "pv4", &c->mac4_pv, sub, e)) || (rc = get_count(cube, "ones4", &c->mac4_ones, sub, e)))
        return rc;
    snprintf(sub, sizeof sub, "%s: vector_ops", ctx);
    for (int k = 0; k < COST_V_COUNT; k++) {
        if (k == COST_V_QMEAN_GEMV && !cJSON_GetObjectItemCaseSensitive(vec, vop_names[k])) continue; // older files
        if ((rc = get_count(vec, vop_names[k], &c->vop[k], sub, e))) return rc;
    }
    snprintf(sub, sizeof sub, "%s: bytes", ctx);
    if ((rc = get_count(bytes, "elems16", &c->elems16, sub, e)) || (rc = get_count(bytes, "elems4", &c->elems4, sub, e)) ||
        (rc = get_count(bytes, "bytes16", &c->bytes16, sub, e)) || (rc = json_need_num(bytes, "bytes4", &c->bytes4, sub, e)))
        return rc;
    if (c->bytes16 != 2 * c->elems16 || c->bytes4 * 16 != (double)c->elems4 * 9)
        return err_set(e, ERR_FORMAT, "%s: bytes: bytes16/bytes4 do not match elems16/elems4", ctx);
    return 0;
}

// ---- parameters ----
// The lower bound of a parameter's value: value > min (ABOVE) or value >= min (AT_LEAST).
enum bound_kind { BOUND_ABOVE, BOUND_AT_LEAST };
struct param_bound {
    double min;
    enum bound_kind kind;
};

static int get_param(const cJSON *parent, const char *key, const char *where, double *out,
                     struct param_bound b, const char *path, struct err *e) {
    char ctx[512];
    if (where[0]) snprintf(ctx, sizeof ctx, "%s: %s", path, where);
    else snprintf(ctx, sizeof ctx, "%s", path);
    const cJSON *o;
    int rc = json_need_obj(parent, key, &o, ctx, e);
    if (rc) return rc;
    snprintf(ctx, sizeof ctx, "%s: %s%s%s", path, where, where[0] ? "." : "", key);
    for (const cJSON *it = o->child; it; it = it->next)
        if (strcmp(it->string, "value") && strcmp(it->string, "basis") && strcmp(it->string, "doc"))
            return err_set(e, ERR_FORMAT, "%s: unknown field '%s' (expected value, basis, doc)", ctx, it->string);
    double v;
    const char *basis, *doc;
    if ((rc = json_need_num(o, "value", &v, ctx, e))) return rc;
    if ((rc = json_need_str(o, "basis", &basis, ctx, e))) return rc;
    if ((rc = json_need_str(o, "doc", &doc, ctx, e))) return rc;
    if (b.kind == BOUND_ABOVE ? !(v > b.min) : !(v >= b.min))
        return err_set(e, ERR_RANGE, "%s: field 'value': must be %s %g, got %g", ctx,
                       b.kind == BOUND_ABOVE ? ">" : ">=", b.min, v);
    if (strcmp(basis, "hardware") && strcmp(basis, "assumption") && strcmp(basis, "fitted"))
        return err_set(e, ERR_FORMAT, "%s: field 'basis': expected \"hardware\", \"assumption\" or \"fitted\", got \"%s\"",
                       ctx, basis);
    if (!doc[0]) return err_set(e, ERR_FORMAT, "%s: field 'doc': must say how the value was chosen", ctx);
    *out = v;
    return 0;
}

static const char *const top_keys[] = {"name", "description", "notes", "cube_macs_per_cycle_16",
                                       "cube_4bit_speedup", "n_vector_units", "vector_lanes",
                                       "vector_cost"};

int cost_params_load(struct cost_params *p, const char *path, struct err *e) {
    memset(p, 0, sizeof *p);
    if (!file_exists(path)) return err_set(e, ERR_NOTFOUND, "%s: cost parameter file not found", path);
    cJSON *j = NULL;
    int rc = json_parse_file(&j, path, e);
    if (rc) return rc;
    if (!cJSON_IsObject(j)) { rc = err_set(e, ERR_FORMAT, "%s: expected a JSON object", path); goto done; }
    for (const cJSON *it = j->child; it; it = it->next) {
        int known = 0;
        for (size_t k = 0; k < sizeof top_keys / sizeof top_keys[0]; k++) known |= !strcmp(it->string, top_keys[k]);
        if (!known) { rc = err_set(e, ERR_FORMAT, "%s: unknown field '%s'", path, it->string); goto done; }
    }
    const char *name;
    if ((rc = json_need_str(j, "name", &name, path, e))) goto done;
    snprintf(p->name, sizeof p->name, "%s", name);
    double nvu;
    const struct param_bound positive = {0, BOUND_ABOVE}, at_least_one = {1, BOUND_AT_LEAST};
    if ((rc = get_param(j, "cube_macs_per_cycle_16", "", &p->cube_macs_per_cycle_16, positive, path, e)) ||
        (rc = get_param(j, "cube_4bit_speedup", "", &p->cube_4bit_speedup, positive, path, e)) ||
        (rc = get_param(j, "n_vector_units", "", &nvu, at_least_one, path, e)) ||
        (rc = get_param(j, "vector_lanes", "", &p->vector_lanes, positive, path, e)))
        goto done;
    if (nvu != floor(nvu) || nvu > 64) {
        rc = err_set(e, ERR_RANGE, "%s: n_vector_units: field 'value': expected an integer in [1, 64], got %g", path, nvu);
        goto done;
    }
    p->n_vector_units = (int)nvu;
    const cJSON *vc;
    if ((rc = json_need_obj(j, "vector_cost", &vc, path, e))) goto done;
    for (const cJSON *it = vc->child; it; it = it->next) {
        int known = 0;
        for (int k = 0; k < COST_K_COUNT; k++) known |= !strcmp(it->string, kind_names[k]);
        if (!known) {
            rc = err_set(e, ERR_FORMAT, "%s: vector_cost: unknown field '%s' (known: max, sub, exp, sum, cast, qdq, add, row, smooth, qmean, final)",
                         path, it->string);
            goto done;
        }
    }
    for (int k = 0; k < COST_K_COUNT; k++)
        if ((rc = get_param(vc, kind_names[k], "vector_cost", &p->vector_cost[k],
                                  (struct param_bound){0, BOUND_AT_LEAST}, path, e))) goto done;
done:
    cJSON_Delete(j);
    return rc;
}

// ---- cycle model ----
void cost_cycles(struct cost_cycles *out, const struct cost_counts *c, const struct cost_params *p) {
    double r16 = p->cube_macs_per_cycle_16, r4 = r16 * p->cube_4bit_speedup;
    // sums in binary64: each count fits in 64 bits, their sum need not
    out->cube = ((double)c->mac16_qk + (double)c->mac16_pv + (double)c->mac16_ones) / r16 +
                ((double)c->mac4_qk + (double)c->mac4_pv + (double)c->mac4_ones) / r4;
    double soft = 0, other = 0;
    for (int k = 0; k < COST_V_COUNT; k++) {
        double w = (double)c->vop[k] * p->vector_cost[vop_kind[k]];
        if (k < COST_V_FIRST_OTHER) soft += w;
        else other += w;
    }
    out->softmax = soft / p->vector_lanes;
    out->other = other / p->vector_lanes;
    double vec = out->softmax / p->n_vector_units;
    out->vector_bound = vec > out->cube;
    out->critical = out->vector_bound ? vec : out->cube;
}

cJSON *cost_cycles_json(const struct cost_cycles *cy) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    int bad = add_num(o, "cube", cy->cube) | add_num(o, "softmax", cy->softmax) |
              add_num(o, "other", cy->other) | add_num(o, "critical", cy->critical);
    if (bad || !cJSON_AddStringToObject(o, "bottleneck", cy->vector_bound ? "Vector" : "Cube")) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
