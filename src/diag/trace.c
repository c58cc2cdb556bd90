// trace.c: attention diagnostics over real inputs (see trace.h): input sets from a text or a
// task, the mode loop with attn_opts.diag, the Table 4-style summary, trace.json and SVGs.
#include "diag/trace.h"

#include <math.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "attention/scales.h"
#include "model/config.h"
#include "eval/eval.h"
#include "model/model.h"
#include "base/paths.h"
#include "base/progress.h"
#include "results/plot_xy.h"
#include "results/results.h"
#include "eval/tasks/task.h"
#include "tokenizer/tokenizer.h"

void trace_opts_default(struct trace_opts *o) {
    memset(o, 0, sizeof *o);
    struct attn_opts a; // the attention defaults are run's: one definition, attn_opts_default
    attn_opts_default(&a);
    o->tile = a.tile;
    o->v_group = a.v_group;
    o->qformat = a.qformat;
    o->qmean = a.qmean;
    o->qdq_skip = a.qdq_skip;
    o->act_bf16 = 1;
    o->batch_tokens = 8192;
}

void trace_sets_free(struct trace_set *sets, int n) {
    if (!sets) return;
    for (int i = 0; i < n; i++) {
        free(sets[i].seq_len);
        free(sets[i].ids);
    }
    free(sets);
}

// ---- input sets ----
// The tokenizer of tok_dir (NULL: the model's), refused when it has ids the model lacks.
static int load_tok(struct tokenizer **tok, const char *model_dir, const char *tok_dir, const struct model_config *cfg,
                    struct err *e) {
    int rc = tok_load(tok, tok_dir ? tok_dir : model_dir, e);
    if (rc) return rc;
    if (tok_vocab_size(*tok) > cfg->vocab_size) {
        rc = err_set(e, ERR_MISMATCH, "tokenizer of %s has %d tokens but the model's vocabulary is %d",
                     tok_dir ? tok_dir : model_dir, tok_vocab_size(*tok), cfg->vocab_size);
        tok_free(*tok);
        *tok = NULL;
    }
    return rc;
}

int trace_sets_text(struct trace_set **sets, const char *model_dir, const char *tok_dir, const char *text_path,
                    struct trace_windows win, struct err *e) {
    const int *ctx = win.ctx, n_ctx = win.n_ctx, limit = win.limit;
    *sets = NULL;
    if (n_ctx < 1) return err_set(e, ERR_USAGE, "trace: no context length");
    struct model_config cfg;
    int rc = cfg_load(&cfg, model_dir, e);
    if (rc) return rc;
    int max_ctx = 0;
    for (int i = 0; i < n_ctx; i++) {
        if (ctx[i] < 2) return err_set(e, ERR_USAGE, "--ctx %d: must be >= 2", ctx[i]);
        if (ctx[i] > cfg.max_seq)
            return err_set(e, ERR_USAGE, "--ctx %d exceeds the model's max_position_embeddings %d", ctx[i], cfg.max_seq);
        if (ctx[i] > max_ctx) max_ctx = ctx[i];
    }
    struct tokenizer *tok = NULL;
    char *text = NULL;
    size_t tl = 0;
    int32_t *ids = NULL;
    int n_ids = 0;
    struct trace_set *out = NULL;
    if ((rc = load_tok(&tok, model_dir, tok_dir, &cfg, e))) return rc;
    if ((rc = file_read_all(text_path, &text, &tl, e))) goto done;
    // only the prefix the windows need is tokenized (16 bytes per token is generous for every
    // tokenizer we support); the cut falls on a line end
    if (limit > 0) {
        size_t need = (size_t)limit * (size_t)max_ctx * 16;
        if (tl > need) {
            size_t cut = need;
            while (cut > 0 && text[cut] != '\n') cut--;
            if (cut > 0) tl = cut;
        }
    }
    if ((rc = tok_encode(tok, text, tl, 0, &ids, &n_ids, e))) { err_prefix(e, "%s", text_path); goto done; }
    int bos = tok_adds_bos(tok) ? tok_bos_id(tok) : -1;
    out = calloc((size_t)n_ctx, sizeof *out);
    if (!out) { rc = err_set(e, ERR_NOMEM, "trace: out of memory"); goto done; }
    for (int i = 0; i < n_ctx; i++) {
        struct trace_set *s = &out[i];
        const int per = ctx[i] - (bos >= 0); // text tokens per window
        int nw = n_ids / per;
        if (nw < 1) {
            rc = err_set(e, ERR_RANGE, "%s: %d tokens, fewer than one window of --ctx %d", text_path, n_ids, ctx[i]);
            goto done;
        }
        if (limit > 0 && nw > limit) nw = limit;
        snprintf(s->name, sizeof s->name, "ctx%d", ctx[i]);
        s->ctx = ctx[i];
        s->n_seq = nw;
        s->n_tokens = (int64_t)nw * ctx[i];
        s->seq_len = malloc((size_t)nw * sizeof *s->seq_len);
        s->ids = malloc((size_t)s->n_tokens * sizeof *s->ids);
        if (!s->seq_len || !s->ids) { rc = err_set(e, ERR_NOMEM, "trace: out of memory"); goto done; }
        for (int w = 0; w < nw; w++) {
            int32_t *dst = s->ids + (size_t)w * ctx[i];
            int k = 0;
            if (bos >= 0) dst[k++] = bos;
            memcpy(dst + k, ids + (size_t)w * per, (size_t)per * sizeof *ids);
            s->seq_len[w] = ctx[i];
        }
        log_info("trace: %s: %d windows of %d tokens (text: %d tokens)", s->name, nw, ctx[i], n_ids);
    }
done:
    if (rc) trace_sets_free(out, n_ctx);
    else *sets = out;
    free(ids);
    free(text);
    tok_free(tok);
    return rc;
}

struct tok_user { const struct tokenizer *t; };
static int encode_cb(void *user, const char *text, size_t len, int32_t **ids, int *n, struct err *e) {
    return tok_encode(((struct tok_user *)user)->t, text, len, 0, ids, n, e);
}

int trace_sets_task(struct trace_set **sets, const char *model_dir, const char *tok_dir, const char *task,
                    const char *data_dir, int limit, struct err *e) {
    *sets = NULL;
    struct model_config cfg;
    int rc = cfg_load(&cfg, model_dir, e);
    if (rc) return rc;
    struct tokenizer *tok = NULL;
    struct task_set ts = {0};
    struct eval_plan plan = {0};
    struct eval_item *items = NULL;
    struct trace_set *out = NULL;
    if ((rc = load_tok(&tok, model_dir, tok_dir, &cfg, e))) return rc;
    struct task_opts to = {.data_dir = data_dir, .seed = 1234, .limit = limit};
    if ((rc = task_load(task, &ts, &to, e))) goto done;
    if (ts.is_ppl) {
        rc = err_set(e, ERR_UNSUPPORTED, "task '%s' is a perplexity text: give it to trace as --text FILE", task);
        goto done;
    }
    items = calloc((size_t)(ts.n_items ? ts.n_items : 1), sizeof *items);
    if (!items) { rc = err_set(e, ERR_NOMEM, "trace: out of memory"); goto done; }
    for (int i = 0; i < ts.n_items; i++) {
        const struct task_item *it = &ts.items[i];
        items[i] = (struct eval_item){it->id, it->context, it->n_choices, it->choices, it->gold};
    }
    struct tok_user tu = {tok};
    struct eval_plan_opts po = {.delim = ts.delim, .add_bos = tok_adds_bos(tok), .bos_id = tok_bos_id(tok),
                                .eos_id = tok_eos_id(tok), .window = cfg.max_seq};
    if ((rc = eval_plan_build(&plan, items, ts.n_items, &po, encode_cb, &tu, e))) { err_prefix(e, "task %s", task); goto done; }
    if (plan.n_seq < 1) { rc = err_set(e, ERR_RANGE, "task %s: no items", task); goto done; }
    out = calloc(1, sizeof *out);
    if (!out) { rc = err_set(e, ERR_NOMEM, "trace: out of memory"); goto done; }
    snprintf(out->name, sizeof out->name, "task-%s", task);
    for (char *p = out->name; *p; p++)
        if (*p == '/' || *p == ' ') *p = '_';
    out->n_seq = plan.n_seq;
    out->n_tokens = plan.n_tokens;
    out->seq_len = malloc((size_t)plan.n_seq * sizeof *out->seq_len);
    out->ids = malloc((size_t)(plan.n_tokens ? plan.n_tokens : 1) * sizeof *out->ids);
    if (!out->seq_len || !out->ids) { rc = err_set(e, ERR_NOMEM, "trace: out of memory"); goto done; }
    size_t off = 0;
    for (int s = 0; s < plan.n_seq; s++) {
        out->seq_len[s] = plan.seq[s].n;
        memcpy(out->ids + off, plan.seq[s].tok, (size_t)plan.seq[s].n * sizeof *out->ids);
        off += (size_t)plan.seq[s].n;
    }
    log_info("trace: %s: %d items, %d sequences, %lld tokens", out->name, ts.n_items, out->n_seq,
             (long long)out->n_tokens);
done:
    if (rc) trace_sets_free(out, 1);
    else *sets = out;
    eval_plan_free(&plan);
    free(items);
    task_set_free(&ts);
    tok_free(tok);
    return rc;
}

// ---- running ----
void trace_result_free(struct trace_result *r) {
    if (!r) return;
    if (r->cells)
        for (int i = 0; i < r->n_modes * r->n_sets; i++) free(r->cells[i].layer);
    free(r->cells);
    memset(r, 0, sizeof *r);
}

const struct trace_cell *trace_cell(const struct trace_result *r, int mode, int set) {
    return &r->cells[(size_t)mode * r->n_sets + set];
}

// Greedy packing in sequence order: sequences while the batch stays within batch_tokens (at
// least one). Returns the number of sequences from s0 and their tokens in *tok.
static int next_batch(const struct trace_set *s, int s0, int batch_tokens, int64_t *tok) {
    int nb = 0;
    int64_t cur = 0;
    while (s0 + nb < s->n_seq && (nb == 0 || cur + s->seq_len[s0 + nb] <= batch_tokens)) cur += s->seq_len[s0 + nb++];
    *tok = cur;
    return nb;
}

// The entries of one mode: once, or per Q-Mean form (token first) for a mode with Q-Mean.
static int add_entries(struct trace_result *r, const struct attn_mode *md, const struct trace_opts *o, struct err *e) {
    for (int q = ATTN_QMEAN_TOKEN; q <= ATTN_QMEAN_CHANNEL; q++) {
        const int has = (md->flags & ATTN_F_QMEAN) != 0;
        if (has ? !(o->qmean == TRACE_QMEAN_BOTH || o->qmean == q) : q != ATTN_QMEAN_TOKEN) continue;
        if (r->n_modes == TRACE_MAX_MODES)
            return err_set(e, ERR_USAGE, "trace: more than %d (mode, Q-Mean form) entries", TRACE_MAX_MODES);
        const int k = r->n_modes++;
        snprintf(r->modes[k], sizeof r->modes[k], "%s", md->name);
        r->mode_flags[k] = attn_mode_run_flags(md, q);
        r->qmean[k] = has ? q : -1;
        attn_mode_display(r->display[k], sizeof r->display[k], md, o->qformat, q, o->qdq_skip);
    }
    return 0;
}

// The live line of forward_set: sequences done before this set, and what it computes.
struct set_line { struct progress *pg; int64_t seq_done; const char *detail; };

// Every sequence of set s through the model in batches of at most batch_tokens.
static int forward_set(struct model *m, struct attn_ctx *ctx, const struct trace_set *s, int batch_tokens,
                       struct set_line l, struct err *e) {
    size_t off = 0;
    for (int s0 = 0; s0 < s->n_seq;) {
        int64_t tok;
        int nb = next_batch(s, s0, batch_tokens, &tok);
        progress_set(l.pg, (double)(l.seq_done + s0), l.detail);
        const struct model_batch b = {.tokens = s->ids + off, .n_seq = nb, .seq_len = s->seq_len + s0};
        if (model_forward(m, ctx, NULL, &b, NULL, e)) return err_prefix(e, "trace: mode %s", l.detail);
        s0 += nb;
        off += (size_t)tok;
    }
    return 0;
}

int trace_run(struct trace_result *r, const char *model_dir, const struct trace_set *sets, int n_sets,
              struct trace_modes want, const struct trace_opts *o, struct err *e) {
    memset(r, 0, sizeof *r);
    if (n_sets < 1) return err_set(e, ERR_USAGE, "trace: no inputs");
    if (want.n < 1 || want.n > TRACE_MAX_MODES)
        return err_set(e, ERR_USAGE, "trace: %d modes (1..%d)", want.n, TRACE_MAX_MODES);
    for (int i = 0; i < want.n; i++) {
        if (!attn_mode_find(want.names[i]))
            return err_set(e, ERR_USAGE, "--attn: unknown mode '%s' (known: %s)", want.names[i], attn_mode_names());
        for (int j = 0; j < i; j++)
            if (!strcmp(want.names[i], want.names[j])) return err_set(e, ERR_USAGE, "--attn: mode '%s' given twice", want.names[i]);
    }
    int64_t max_batch = 0;
    int max_len = 0;
    for (int s = 0; s < n_sets; s++) {
        for (int i = 0; i < sets[s].n_seq; i++)
            if (sets[s].seq_len[i] > max_len) max_len = sets[s].seq_len[i];
        for (int s0 = 0; s0 < sets[s].n_seq;) {
            int64_t tok;
            s0 += next_batch(&sets[s], s0, o->batch_tokens, &tok);
            if (tok > max_batch) max_batch = tok;
        }
    }
    if (max_batch > INT32_MAX / 2) return err_set(e, ERR_RANGE, "trace: a batch of %lld tokens", (long long)max_batch);
    path_basename(r->model_id, sizeof r->model_id, model_dir);
    r->sets = sets;
    r->n_sets = n_sets;
    r->tile = o->tile;
    r->act_bf16 = o->act_bf16;
    struct model_opts mo;
    model_opts_default(&mo);
    mo.act_bf16 = o->act_bf16;
    mo.max_tokens = (int)max_batch;
    mo.max_seq = max_len;
    mo.n_threads = o->threads;
    struct model *m = NULL;
    struct attn_ctx *ctx = NULL;
    struct progress *pg = NULL;
    float *scales = NULL;
    int rc = model_open(&m, model_dir, &mo, e);
    if (rc) return rc;
    const struct model_config *c = model_cfg(m);
    snprintf(r->model_hash, sizeof r->model_hash, "%s", model_hash(m));
    r->n_layers = c->n_layers; r->H = c->n_heads; r->Hkv = c->n_kv_heads; r->d = c->head_dim;
    // ---- scales ----
    if (o->scales) snprintf(r->scales, sizeof r->scales, "%s", o->scales);
    else attn_scales_default(r->scales, sizeof r->scales, r->model_id, model_dir);
    if (r->scales[0]) {
        if ((rc = attn_scales_load(&scales, r->scales, c->n_layers, c->n_kv_heads, c->head_dim, model_hash(m), e)))
            goto fail;
        log_info("trace: Smooth-QK scales from %s", r->scales);
    }
    // ---- modes (x Q-Mean forms) ----
    for (int i = 0; i < want.n; i++) {
        const struct attn_mode *md = attn_mode_find(want.names[i]);
        if ((md->flags & ATTN_F_SQK) && !scales) {
            log_warn("trace: skipping '%s': it needs Smooth-QK scales (--scales, or `calibrate --model` for %s)",
                     want.names[i], r->model_id);
            size_t l = strlen(r->skipped);
            snprintf(r->skipped + l, sizeof r->skipped - l, "%s%s", l ? "," : "", want.names[i]);
            continue;
        }
        if ((rc = add_entries(r, md, o, e))) goto fail;
    }
    if (!r->n_modes) { rc = err_set(e, ERR_USAGE, "trace: every requested mode needs Smooth-QK scales (--scales)"); goto fail; }
    r->cells = calloc((size_t)r->n_modes * n_sets, sizeof *r->cells);
    if (!r->cells) { rc = err_set(e, ERR_NOMEM, "trace: out of memory"); goto fail; }
    for (int i = 0; i < r->n_modes * n_sets; i++) {
        r->cells[i].layer = calloc((size_t)c->n_layers, sizeof *r->cells[i].layer);
        if (!r->cells[i].layer) { rc = err_set(e, ERR_NOMEM, "trace: out of memory"); goto fail; }
    }
    struct attn_opts ao;
    attn_opts_default(&ao);
    ao.tile = o->tile;
    ao.v_group = o->v_group;
    ao.qformat = o->qformat;
    ao.qdq_skip = o->qdq_skip;
    ao.n_threads = o->threads;
    ao.diag = 1;
    r->qdq_skip = o->qdq_skip;
    int64_t seq_all = 0, seq_done = 0; // the live line counts sequences over every mode and set
    for (int si = 0; si < n_sets; si++) seq_all += (int64_t)sets[si].n_seq * r->n_modes;
    pg = progress_open("trace", PROGRESS_COUNT, "sequences", (double)seq_all, -1, NULL);
    for (int mi = 0; mi < r->n_modes; mi++) {
        ao.qmean = r->qmean[mi] == ATTN_QMEAN_CHANNEL ? ATTN_QMEAN_CHANNEL : ATTN_QMEAN_TOKEN;
        attn_ctx_free(ctx), ctx = NULL; // one context per mode, in turn
        if ((rc = model_attn_open(&ctx, m, r->modes[mi], &ao, scales, e))) goto fail;
        for (int si = 0; si < n_sets; si++) {
            const struct trace_set *s = &sets[si];
            struct trace_cell *cell = &r->cells[(size_t)mi * n_sets + si];
            attn_ctx_reset_stats(ctx);
            double t0 = time_now();
            char detail[160];
            snprintf(detail, sizeof detail, "%s, %s", r->display[mi], s->name);
            if ((rc = forward_set(m, ctx, s, o->batch_tokens, (struct set_line){pg, seq_done, detail}, e))) goto fail;
            seq_done += s->n_seq;
            cell->forward_s = time_now() - t0;
            const struct attn_diag *dg = attn_ctx_diag(ctx);
            if (!dg) { rc = err_set(e, ERR_INTERNAL, "trace: attention context without diagnostics"); goto fail; }
            memcpy(cell->layer, dg->layer, (size_t)c->n_layers * sizeof *cell->layer);
            for (int l = 0; l < c->n_layers; l++) attn_diag_acc_merge(&cell->total, &cell->layer[l].acc);
            log_info("trace: %-24s %-10s layer-0 rel-L2 %.4g (%.1f s)", r->display[mi], s->name, cell->layer[0].rel_l2,
                     cell->forward_s);
        }
    }
    progress_set(pg, (double)seq_done, NULL);
    progress_close(pg);
    attn_ctx_free(ctx);
    free(scales);
    model_free(m);
    return 0;
fail:
    progress_close(pg);
    attn_ctx_free(ctx);
    free(scales);
    model_free(m);
    trace_result_free(r);
    return rc;
}

// ---- summary ----
void trace_print(FILE *f, const struct trace_result *r) {
    fprintf(f, "trace: %s (model hash %.12s), tile %d, activations %s, qdq skipped %s, scales %s%s%s\n", r->model_id,
            r->model_hash, r->tile, r->act_bf16 ? "bf16" : "f32", attn_qdq_skip_name(r->qdq_skip), r->scales[0] ? r->scales : "none",
            r->skipped[0] ? "; skipped (no scales): " : "", r->skipped);
    const int L = r->n_layers;
    int w[TRACE_MAX_MODES]; // column widths: the mode name or 13
    for (int mi = 0; mi < r->n_modes; mi++) {
        w[mi] = (int)strlen(r->display[mi]);
        if (w[mi] < 13) w[mi] = 13;
    }
    for (int si = 0; si < r->n_sets; si++) {
        const struct trace_set *s = &r->sets[si];
        fprintf(f, "\n== %s: %d sequences, %lld tokens (attention output vs f32 on the same inputs) ==\n", s->name,
                s->n_seq, (long long)s->n_tokens);
        fprintf(f, "%-26s", "");
        for (int mi = 0; mi < r->n_modes; mi++) fprintf(f, " %*s", w[mi], r->display[mi]);
        fputc('\n', f);
        char b[64];
        double v[TRACE_MAX_MODES];
        int at[TRACE_MAX_MODES];
        // one row: label, then per mode the text the statement leaves in b
#define ROW(label, stmt)                                                      \
    do {                                                                      \
        fprintf(f, "%-26s", label);                                           \
        for (int mi = 0; mi < r->n_modes; mi++) {                             \
            const struct trace_cell *c = trace_cell(r, mi, si);               \
            (void)c;                                                          \
            stmt;                                                             \
            fprintf(f, " %*s", w[mi], b);                                     \
        }                                                                     \
        fputc('\n', f);                                                       \
    } while (0)
        for (int mi = 0; mi < r->n_modes; mi++) {
            const struct trace_cell *c = trace_cell(r, mi, si);
            at[mi] = 0;
            v[mi] = 1;
            for (int l = 1; l < L; l++)
                if (c->layer[l].rel_l2 > c->layer[at[mi]].rel_l2) at[mi] = l;
        }
        ROW("rel-L2 layer 0", snprintf(b, sizeof b, "%.4e", c->layer[0].rel_l2));
        ROW("rel-L2 mean over layers", {
            double sum = 0;
            for (int l = 0; l < L; l++) sum += c->layer[l].rel_l2;
            snprintf(b, sizeof b, "%.4e", sum / L);
        });
        ROW("rel-L2 worst (layer)", snprintf(b, sizeof b, "%.3e(%d)", c->layer[at[mi]].rel_l2, at[mi]));
        ROW("cosine layer 0", snprintf(b, sizeof b, "%.6f", c->layer[0].cosine));
        for (int mi = 0; mi < r->n_modes; mi++)
            for (int l = 0; l < L; l++) v[mi] = fmin(v[mi], trace_cell(r, mi, si)->layer[l].cosine);
        ROW("cosine worst layer", snprintf(b, sizeof b, "%.6f", v[mi]));
        ROW("K max-abs layer 0", snprintf(b, sizeof b, "%.4g", (double)c->layer[0].acc.k_maxabs));
        ROW("K max-abs all layers", snprintf(b, sizeof b, "%.4g", (double)c->total.k_maxabs));
        ROW("eps_bar (row,tile) pairs", {
            if (c->total.eps_tiles) snprintf(b, sizeof b, "%lld", (long long)c->total.eps_tiles);
            else snprintf(b, sizeof b, "-");
        });
        ROW("eps_bar < 0 share", {
            if (c->total.eps_tiles) snprintf(b, sizeof b, "%.2f%%", 100.0 * c->total.eps_below_zero / c->total.eps_tiles);
            else snprintf(b, sizeof b, "-");
        });
        ROW("eps_bar min / max", {
            if (c->total.eps_tiles) snprintf(b, sizeof b, "%.3f/%.3f", c->total.eps_min, c->total.eps_max);
            else snprintf(b, sizeof b, "-");
        });
        ROW("forward time (s)", snprintf(b, sizeof b, "%.2f", c->forward_s));
#undef ROW
    }
}

// ---- trace.json ----
static cJSON *cell_json(const struct trace_result *r, const struct trace_cell *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON *ls = cJSON_AddArrayToObject(o, "layers");
    for (int l = 0; l < r->n_layers; l++) {
        const struct attn_diag_layer *d = &c->layer[l];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "layer", l);
        cJSON_AddNumberToObject(x, "rel_l2", d->rel_l2);
        cJSON_AddNumberToObject(x, "cosine", d->cosine);
        cJSON_AddNumberToObject(x, "k_maxabs", d->acc.k_maxabs);
        cJSON_AddNumberToObject(x, "calls", (double)d->calls);
        cJSON_AddNumberToObject(x, "elements", (double)d->n);
        cJSON_AddNumberToObject(x, "eps_tiles", (double)d->acc.eps_tiles);
        cJSON_AddNumberToObject(x, "eps_below_zero", (double)d->acc.eps_below_zero);
        cJSON_AddItemToArray(ls, x);
    }
    cJSON_AddNumberToObject(o, "k_maxabs", c->total.k_maxabs);
    cJSON *eh = cJSON_AddObjectToObject(o, "eps_bar");
    cJSON_AddNumberToObject(eh, "tiles", (double)c->total.eps_tiles);
    cJSON_AddNumberToObject(eh, "below_zero", (double)c->total.eps_below_zero);
    if (c->total.eps_tiles) {
        cJSON_AddNumberToObject(eh, "share_below_zero", (double)c->total.eps_below_zero / (double)c->total.eps_tiles);
        cJSON_AddNumberToObject(eh, "min", c->total.eps_min);
        cJSON_AddNumberToObject(eh, "max", c->total.eps_max);
    } else {
        cJSON_AddNullToObject(eh, "share_below_zero");
        cJSON_AddNullToObject(eh, "min");
        cJSON_AddNullToObject(eh, "max");
    }
    cJSON_AddNumberToObject(eh, "lo", ATTN_EPS_LO);
    cJSON_AddNumberToObject(eh, "hi", ATTN_EPS_HI);
    cJSON_AddNumberToObject(eh, "bins", ATTN_EPS_BINS);
    cJSON_AddNumberToObject(eh, "underflow", (double)c->total.eps_hist[0]);
    cJSON_AddNumberToObject(eh, "overflow", (double)c->total.eps_hist[ATTN_EPS_BINS + 1]);
    cJSON *cnt = cJSON_AddArrayToObject(eh, "counts"); // sparse [bin, count], bin 0-based in [lo, hi)
    for (int b = 1; b <= ATTN_EPS_BINS; b++)
        if (c->total.eps_hist[b]) {
            cJSON *p = cJSON_CreateArray();
            cJSON_AddItemToArray(p, cJSON_CreateNumber(b - 1));
            cJSON_AddItemToArray(p, cJSON_CreateNumber((double)c->total.eps_hist[b]));
            cJSON_AddItemToArray(cnt, p);
        }
    cJSON_AddNumberToObject(o, "forward_s", c->forward_s);
    return o;
}

static cJSON *result_json(const struct trace_result *r) {
    cJSON *j = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(j, "model");
    cJSON_AddStringToObject(m, "id", r->model_id);
    cJSON_AddStringToObject(m, "hash", r->model_hash);
    cJSON_AddNumberToObject(m, "n_layers", r->n_layers);
    cJSON_AddNumberToObject(m, "n_heads", r->H);
    cJSON_AddNumberToObject(m, "n_kv_heads", r->Hkv);
    cJSON_AddNumberToObject(m, "head_dim", r->d);
    cJSON_AddNumberToObject(j, "tile", r->tile);
    cJSON_AddStringToObject(j, "qdq_skip", attn_qdq_skip_name(r->qdq_skip));
    cJSON_AddStringToObject(j, "activations", r->act_bf16 ? "bf16" : "f32");
    if (r->scales[0]) cJSON_AddStringToObject(j, "scales", r->scales);
    else cJSON_AddNullToObject(j, "scales");
    cJSON *sk = cJSON_AddArrayToObject(j, "skipped_modes");
    if (r->skipped[0]) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", r->skipped);
        for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) cJSON_AddItemToArray(sk, cJSON_CreateString(t));
    }
    cJSON *in = cJSON_AddArrayToObject(j, "inputs");
    for (int si = 0; si < r->n_sets; si++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", r->sets[si].name);
        cJSON_AddNumberToObject(o, "ctx", r->sets[si].ctx);
        cJSON_AddNumberToObject(o, "sequences", r->sets[si].n_seq);
        cJSON_AddNumberToObject(o, "tokens", (double)r->sets[si].n_tokens);
        cJSON_AddItemToArray(in, o);
    }
    cJSON *ms = cJSON_AddArrayToObject(j, "modes");
    for (int mi = 0; mi < r->n_modes; mi++) {
        cJSON *o = cJSON_CreateObject();
        const struct attn_mode *md = attn_mode_find(r->modes[mi]);
        cJSON_AddStringToObject(o, "mode", r->modes[mi]);
        cJSON_AddStringToObject(o, "label", md ? md->label : "");
        if (r->qmean[mi] >= 0) cJSON_AddStringToObject(o, "qmean", attn_qmean_name(r->qmean[mi]));
        else cJSON_AddNullToObject(o, "qmean");
        cJSON_AddStringToObject(o, "display", r->display[mi]);
        cJSON *runs = cJSON_AddArrayToObject(o, "inputs");
        for (int si = 0; si < r->n_sets; si++) {
            cJSON *c = cell_json(r, trace_cell(r, mi, si));
            cJSON_AddStringToObject(c, "input", r->sets[si].name);
            cJSON_AddNumberToObject(c, "ctx", r->sets[si].ctx);
            cJSON_AddItemToArray(runs, c);
        }
        cJSON_AddItemToArray(ms, o);
    }
    return j;
}

int trace_json_text(const struct trace_result *r, char **out, struct err *e) {
    cJSON *j = result_json(r);
    *out = j ? cJSON_Print(j) : NULL;
    cJSON_Delete(j);
    return *out ? 0 : err_set(e, ERR_NOMEM, "trace: out of memory");
}

// ---- figures ----
static int eps_svg(const struct trace_result *r, int si, char **svg, struct err *e) {
    *svg = NULL;
    int first = ATTN_EPS_BINS, last = -1, nq = 0;
    for (int mi = 0; mi < r->n_modes; mi++) {
        const struct trace_cell *c = trace_cell(r, mi, si);
        if (!c->total.eps_tiles) continue;
        nq++;
        for (int b = 0; b < ATTN_EPS_BINS; b++)
            if (c->total.eps_hist[b + 1]) {
                if (b < first) first = b;
                if (b > last) last = b;
            }
    }
    if (!nq) return 0; // no quantized mode: no eps_bar
    if (last < first) { first = ATTN_EPS_BINS / 2; last = first; }
    first -= 5; last += 5;
    if (last - first < 20) { int mid = (first + last) / 2; first = mid - 10; last = mid + 10; }
    if (first < 0) first = 0;
    if (last > ATTN_EPS_BINS - 1) last = ATTN_EPS_BINS - 1;
    const int nb = last - first + 1;
    double *buf = malloc((size_t)nb * (size_t)(nq + 1) * sizeof *buf);
    if (!buf) return err_set(e, ERR_NOMEM, "trace: out of memory");
    struct plot_xy_series ser[TRACE_MAX_MODES];
    char labels[TRACE_MAX_MODES][160];
    const double w = (ATTN_EPS_HI - ATTN_EPS_LO) / ATTN_EPS_BINS;
    for (int b = 0; b < nb; b++) buf[b] = ATTN_EPS_LO + (first + b + 0.5) * w;
    int k = 0;
    for (int mi = 0; mi < r->n_modes; mi++) {
        const struct trace_cell *c = trace_cell(r, mi, si);
        if (!c->total.eps_tiles) continue;
        double *y = buf + (size_t)(k + 1) * nb;
        for (int b = 0; b < nb; b++) y[b] = (double)c->total.eps_hist[first + b + 1] / (double)c->total.eps_tiles;
        snprintf(labels[k], sizeof labels[k], "%s (%.1f%% < 0)", r->display[mi],
                 100.0 * c->total.eps_below_zero / c->total.eps_tiles);
        ser[k] = (struct plot_xy_series){labels[k], buf, y, nb, 0};
        k++;
    }
    char title[512];
    snprintf(title, sizeof title, "%s, %s: eps_bar = sum qdq(P) / sum P - 1 per (row, tile)", r->model_id,
             r->sets[si].name);
    struct plot_axis xa = {"eps_bar (bin centres)", 0, 0, 0}, ya = {"fraction of (row, tile) pairs", 0, 0, 0};
    int rc = plot_line_svg(svg, title, &xa, &ya, ser, k, e);
    free(buf);
    return rc;
}

static int rel_svg(const struct trace_result *r, int si, char **svg, struct err *e) {
    const int L = r->n_layers;
    double *buf = malloc((size_t)L * (size_t)(r->n_modes + 1) * sizeof *buf);
    if (!buf) return err_set(e, ERR_NOMEM, "trace: out of memory");
    struct plot_xy_series ser[TRACE_MAX_MODES];
    for (int l = 0; l < L; l++) buf[l] = l;
    for (int mi = 0; mi < r->n_modes; mi++) {
        double *y = buf + (size_t)(mi + 1) * L;
        for (int l = 0; l < L; l++) y[l] = trace_cell(r, mi, si)->layer[l].rel_l2;
        ser[mi] = (struct plot_xy_series){r->display[mi], buf, y, L, 1};
    }
    char title[512];
    snprintf(title, sizeof title, "%s, %s: attention-output rel-L2 vs f32 per layer", r->model_id, r->sets[si].name);
    struct plot_axis xa = {"layer", L > 1 ? 0 : -1, L > 1 ? L - 1 : 1, 0}, ya = {"rel-L2", 0, 0, 1};
    int rc = plot_line_svg(svg, title, &xa, &ya, ser, r->n_modes, e);
    free(buf);
    return rc;
}

int trace_write(const struct trace_result *r, const char *out_dir, struct err *e) {
    int rc = mkdir_p(out_dir, e);
    if (rc) return rc;
    char path[4096], name[256];
    for (int si = 0; si < r->n_sets && !rc; si++) {
        char *svg = NULL;
        if ((rc = eps_svg(r, si, &svg, e))) break;
        if (svg) {
            snprintf(name, sizeof name, "eps_bar-%s.svg", r->sets[si].name);
            if (!(rc = path_join(path, sizeof path, out_dir, name, e))) rc = file_write_atomic(path, svg, strlen(svg), e);
            free(svg);
            if (rc) break;
        }
        if ((rc = rel_svg(r, si, &svg, e))) break;
        snprintf(name, sizeof name, "rel_l2-%s.svg", r->sets[si].name);
        if (!(rc = path_join(path, sizeof path, out_dir, name, e))) rc = file_write_atomic(path, svg, strlen(svg), e);
        free(svg);
    }
    if (rc) return rc;
    cJSON *j = result_json(r);
    if (!j) return err_set(e, ERR_NOMEM, "trace: out of memory");
    if (!(rc = path_join(path, sizeof path, out_dir, "trace.json", e))) rc = results_write_json(path, j, e);
    cJSON_Delete(j);
    return rc;
}
