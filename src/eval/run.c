// run.c: a run's life cycle (see run.h): planning, the model, scoring batches under every
// mode into the samples files, resume and finish. run.json's content is run_record.c's.
#include "eval/run.h"

#include <stdio.h>
#include <stdlib.h>

#include "attention/scales.h"
#include "base/json_util.h"
#include "base/sha256.h"
#include "eval/prefix.h"
#include "eval/run_internal.h"
#include "results/report.h"

// logits rows per batch: keep each of the two logits buffers near 256 MiB
#define LOGITS_BYTES (256u << 20)

// ---- options ----
void run_opts_default(struct run_opts *o) {
    memset(o, 0, sizeof *o);
    model_opts_default(&o->model);
    attn_opts_default(&o->attn);
    o->bos_policy = EVAL_BOS_AUTO;
    o->bos_arg = "auto";
    o->ppl_ctx = 2048;
    o->shard_n = 1;
    o->n_threads = 1;
    o->prefix_cache = 1;
}

// every registered mode but the slow binary64 `exact`; bf16 (else f32) is the reference
static void all_modes(struct run_opts *o) {
    const char *ref = attn_mode_find("bf16") ? "bf16" : "f32";
    o->modes[o->n_modes++] = ref;
    for (int i = 0; i < attn_mode_count() && o->n_modes < RUN_MAX_MODES; i++) {
        const struct attn_mode *m = attn_mode_at(i);
        if (!strcmp(m->name, "exact") || !strcmp(m->name, ref)) continue;
        if ((m->flags & ATTN_F_SQK) && !o->scales) {
            log_warn("run: --attn all: skipping '%s': it needs a Smooth-QK scales file (--scales)", m->name);
            continue;
        }
        o->modes[o->n_modes++] = m->name;
    }
}

static void default_modes(struct run_opts *o) {
    static const char *const defaults[] = {"bf16", "direct", "hifa4"};
    for (int i = 0; i < 3; i++) {
        const struct attn_mode *m = attn_mode_find(defaults[i]);
        if (!m) continue;
        if ((m->flags & ATTN_F_SQK) && !o->scales) {
            log_warn("run: skipping default mode '%s': it needs a Smooth-QK scales file (--scales)", defaults[i]);
            continue;
        }
        o->modes[o->n_modes++] = defaults[i];
    }
    if (!o->n_modes) o->modes[o->n_modes++] = "f32";
    const int n = o->n_modes;
    log_info("run: modes %s%s%s%s%s (reference %s)", o->modes[0], n > 1 ? "," : "", n > 1 ? o->modes[1] : "",
             n > 2 ? "," : "", n > 2 ? o->modes[2] : "", o->modes[0]);
}

int run_select_modes(struct run_opts *o, const char *const *names, int n, struct err *e) {
    o->n_modes = 0;
    if (n == 1 && !strcmp(names[0], "all")) { all_modes(o); return 0; }
    if (n == 0) { default_modes(o); return 0; }
    if (n > RUN_MAX_MODES) return err_set(e, ERR_USAGE, "--attn: more than %d modes", RUN_MAX_MODES);
    for (int i = 0; i < n; i++) o->modes[i] = names[i];
    o->n_modes = n;
    for (int i = 0; i < o->n_modes; i++) {
        if (!attn_mode_find(o->modes[i]))
            return err_set(e, ERR_USAGE, "--attn: unknown mode '%s' (known: %s)", o->modes[i], attn_mode_names());
        for (int j = 0; j < i; j++)
            if (!strcmp(o->modes[i], o->modes[j])) return err_set(e, ERR_USAGE, "--attn: mode '%s' given twice", o->modes[i]);
    }
    return 0;
}

int run_select_tasks(struct run_opts *o, const char *const *names, int n, struct err *e) {
    if (n > RUN_MAX_TASKS) return err_set(e, ERR_USAGE, "--task: more than %d tasks", RUN_MAX_TASKS);
    for (int i = 0; i < n; i++) o->tasks[i] = names[i];
    o->n_tasks = n;
    for (int i = 0; i < o->n_tasks; i++) {
        // an unknown name is a usage error (exit 2, like an unknown --attn mode), found before the model loads
        if (!task_find(o->tasks[i])) {
            char known[512] = "";
            size_t k = 0;
            for (int j = 0; j < task_count() && k < sizeof known; j++)
                k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", j ? ", " : "", task_at(j)->name);
            return err_set(e, ERR_USAGE, "--task: unknown task '%s' (known: %s)", o->tasks[i], known);
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(o->tasks[i], o->tasks[j])) return err_set(e, ERR_USAGE, "--task: '%s' given twice", o->tasks[i]);
    }
    return 0;
}

// ---- tokenizer callbacks ----
static int encode_cb(void *user, const char *text, size_t len, int32_t **ids, int *n, struct err *e) {
    return tok_encode(((struct run *)user)->tok, text, len, 0, ids, n, e);
}

// task_count_tokens_fn for niah: tokens of s without BOS
static int count_cb(void *user, const char *s, size_t n) {
    int32_t *ids = NULL;
    int k = 0;
    struct err e = {0};
    int rc = tok_encode(((struct run *)user)->tok, s, n, 0, &ids, &k, &e);
    free(ids);
    return rc ? rc : k;
}

// ---- open: model, tokenizer, scales ----
static int file_sha256(const char *path, char hex[65], struct err *e) {
    char *buf;
    size_t n;
    int rc = file_read_all(path, &buf, &n, e);
    if (rc) return rc;
    sha256_hex(buf, n, hex);
    free(buf);
    return 0;
}

static int open_model(struct run *r, struct err *e) {
    const struct run_opts *o = &r->o;
    int rc;
    double t0 = time_now();
    r->mo = o->model;
    if ((rc = model_open(&r->model, o->model_dir, &r->mo, e))) return rc;
    const struct model_config *cfg = model_cfg(r->model);
    if ((rc = tok_load(&r->tok, o->tokenizer_dir ? o->tokenizer_dir : o->model_dir, e))) return rc;
    r->t_load = time_now() - t0;
    tok_hash(r->tok, r->tok_hex);
    r->vocab = cfg->vocab_size;
    if (tok_vocab_size(r->tok) > r->vocab)
        return err_set(e, ERR_MISMATCH, "tokenizer has %d tokens but the model's vocabulary is %d", tok_vocab_size(r->tok),
                       r->vocab);
    r->add_bos = o->bos_policy == EVAL_BOS_AUTO ? tok_adds_bos(r->tok) : o->bos_policy == EVAL_BOS_ON;
    if (r->add_bos && tok_bos_id(r->tok) < 0) return err_set(e, ERR_UNSUPPORTED, "--bos on: the tokenizer has no BOS token");
    if (o->scales) {
        if ((rc = attn_scales_load(&r->scales, o->scales, cfg->n_layers, cfg->n_kv_heads, cfg->head_dim,
                                   model_hash(r->model), e)) ||
            (rc = file_sha256(o->scales, r->scales_hex, e)))
            return rc;
    }
    // validate every mode before any work (unknown mode, missing scales, bad tile)
    for (int m = o->n_modes - 1; m >= 0; m--)
        if ((rc = model_set_attn(r->model, o->modes[m], &o->attn, r->scales, e))) return rc;
    return 0;
}

// ---- open: tasks -> requests ----
// perplexity: the whole text as one token list, cut into windows (eval.h)
static int plan_ppl(struct run *r, int t, struct err *e) {
    const struct task_set *s = &r->sets[t];
    struct eval_plan *p = &r->plans[t];
    double ts = time_now();
    int32_t *ids = NULL;
    int nid = 0;
    int prefix = tok_bos_id(r->tok) >= 0 ? tok_bos_id(r->tok) : tok_eos_id(r->tok);
    int rc = tok_encode(r->tok, s->text, s->text_len, 0, &ids, &nid, e);
    if (!rc) rc = eval_plan_build_ppl(p, ids, nid, r->ppl_ctx, prefix, r->o.task.limit, e);
    // bytes per window (bits per byte): the decoded predicted tokens
    for (int k = 0; !rc && k < p->n_items; k++) {
        char *txt = NULL;
        size_t tl = 0;
        rc = tok_decode(r->tok, p->req[k].cont, p->req[k].n_cont, &txt, &tl, e);
        p->req[k].n_chars = (int)tl;
        free(txt);
    }
    free(ids);
    if (rc) return err_prefix(e, "task %s", r->o.tasks[t]);
    r->tok_s[t] = time_now() - ts;
    log_info("run: %s: %d tokens, %d windows of %d (%.2fs)", r->o.tasks[t], nid, p->n_items, r->ppl_ctx, r->tok_s[t]);
    return 0;
}

// shard K of N: items [K*n/N, (K+1)*n/N) (contiguous, so `merge` restores the order)
static int plan_mc(struct run *r, int t, const struct eval_plan_opts *po0, struct err *e) {
    const struct task_set *s = &r->sets[t];
    const int n_all = s->n_items, K = r->o.shard_k, N = r->o.shard_n;
    r->item_lo[t] = (int)((int64_t)K * n_all / N);
    const int n = (int)((int64_t)(K + 1) * n_all / N) - r->item_lo[t];
    struct eval_item *items = calloc((size_t)(n ? n : 1), sizeof *items);
    if (!items) return err_set(e, ERR_NOMEM, "run: out of memory");
    for (int i = 0; i < n; i++) {
        const struct task_item *it = &s->items[r->item_lo[t] + i];
        items[i] = (struct eval_item){it->id, it->context, it->n_choices, it->choices, it->gold};
    }
    struct eval_plan_opts po = *po0;
    po.delim = s->delim;
    double ts = time_now();
    int rc = eval_plan_build(&r->plans[t], items, n, &po, encode_cb, r, e);
    free(items);
    if (rc) return err_prefix(e, "task %s", r->o.tasks[t]);
    r->tok_s[t] = time_now() - ts;
    const struct eval_plan *p = &r->plans[t];
    log_info("run: %s: %d items, %d requests, %d sequences, %lld tokens, %d truncated (%.2fs)", r->o.tasks[t], n, p->n_req,
             p->n_seq, (long long)p->n_tokens, p->n_truncated, r->tok_s[t]);
    return 0;
}

static int plan_tasks(struct run *r, struct err *e) {
    const struct run_opts *o = &r->o;
    const struct model_config *cfg = model_cfg(r->model);
    const int nt = o->n_tasks;
    r->sets = calloc((size_t)nt, sizeof *r->sets);
    r->plans = calloc((size_t)nt, sizeof *r->plans);
    r->item_lo = calloc((size_t)nt, sizeof *r->item_lo);
    r->tok_s = calloc((size_t)nt, sizeof *r->tok_s);
    if (!r->sets || !r->plans || !r->item_lo || !r->tok_s) return err_set(e, ERR_NOMEM, "run: out of memory");
    struct task_opts to = o->task;
    to.count_tokens = count_cb;
    to.count_ctx = r;
    r->ppl_ctx = o->ppl_ctx < cfg->max_seq ? o->ppl_ctx : cfg->max_seq;
    struct eval_plan_opts po = {.add_bos = r->add_bos, .bos_id = tok_bos_id(r->tok), .eos_id = tok_eos_id(r->tok),
                                .window = cfg->max_seq, .n_threads = o->n_threads};
    for (int t = 0; t < nt; t++) {
        int rc = task_load(o->tasks[t], &r->sets[t], &to, e);
        if (rc) return rc;
        if (r->sets[t].is_ppl && o->shard_n > 1)
            return err_set(e, ERR_UNSUPPORTED, "--shard: not supported for the perplexity task '%s'", o->tasks[t]);
        if ((rc = r->sets[t].is_ppl ? plan_ppl(r, t, e) : plan_mc(r, t, &po, e))) return rc;
        if (r->plans[t].n_items > r->max_items) r->max_items = r->plans[t].n_items;
    }
    return 0;
}

// The prefix cache, sized once for the longest sequence plus one batch of stored positions
// (prefix_store_rows). Off for a LongRoPE model whose sequences cross rope_orig_max (its RoPE
// factors depend on the total length, so a prefix would need recomputing: model.h).
static int open_cache(struct run *r, struct err *e) {
    const struct model_config *cfg = model_cfg(r->model);
    int rows = 0, longest = 0;
    for (int t = 0; t < r->o.n_tasks; t++) {
        const int n = prefix_store_rows(&r->plans[t], model_get_opts(r->model)->max_tokens);
        rows = n > rows ? n : rows;
        longest = r->plans[t].max_seq_len > longest ? r->plans[t].max_seq_len : longest;
    }
    if (cfg->rope_type == ROPE_LONGROPE && longest > cfg->rope_orig_max) {
        log_warn("run: prefix cache off: sequences of %d tokens cross this LongRoPE model's factor switch at %d", longest,
                 cfg->rope_orig_max);
        return 0;
    }
    int rc = model_kv_open(&r->kv, r->model, rows, e);
    if (rc) return err_prefix(e, "prefix cache (--no-prefix-cache runs without it)");
    log_info("run: prefix cache: %d positions x %.1f KB = %.3f GB, allocated once", rows,
             model_kv_row_bytes(r->model) / 1024.0, model_kv_bytes(r->kv) * 1e-9);
    return 0;
}

// Without the cache one item must fit in one batch: reopen the model with room for the largest
// (the window caps sequences); with it, only a continuation must (prefix.h). Then size the
// logits buffers and the cache.
static int fit_batches(struct run *r, struct err *e) {
    int longest = 0, max_item = 0, rc;
    for (int t = 0; t < r->o.n_tasks; t++) {
        if (r->plans[t].max_seq_len > longest) longest = r->plans[t].max_seq_len;
        if (r->plans[t].max_item_tokens > max_item) max_item = r->plans[t].max_item_tokens;
    }
    const int window = model_get_opts(r->model)->max_seq;
    if (r->o.prefix_cache) { // a leaf: up to one tile of recomputed context and its continuation
        int cont = 0;
        for (int t = 0; t < r->o.n_tasks; t++)
            for (int q = 0; q < r->plans[t].n_req; q++) cont = r->plans[t].req[q].n_cont > cont ? r->plans[t].req[q].n_cont : cont;
        max_item = cont + (r->o.attn.tile > 64 ? r->o.attn.tile : 64);
        longest = 0;
    }
    if (longest > window || max_item > model_get_opts(r->model)->max_tokens) {
        int need = max_item > r->o.model.max_tokens ? max_item : r->o.model.max_tokens;
        log_info("run: an item needs %d tokens (batch capacity %d): reopening the model with max_tokens %d", max_item,
                 model_get_opts(r->model)->max_tokens, need);
        model_free(r->model);
        r->model = NULL;
        r->mo.max_tokens = need;
        if ((rc = model_open(&r->model, r->o.model_dir, &r->mo, e))) return rc;
    }
    r->max_tokens = model_get_opts(r->model)->max_tokens;
    r->max_out = (int)(LOGITS_BYTES / ((size_t)r->vocab * sizeof(float)));
    if (r->max_out < 1) r->max_out = 1;
    r->out_cap = r->max_out; // a batch always holds one whole item
    for (int t = 0; t < r->o.n_tasks; t++)
        if (r->plans[t].max_item_rows > r->out_cap) r->out_cap = r->plans[t].max_item_rows;
    return r->o.prefix_cache ? open_cache(r, e) : 0;
}

// ---- open: the run directory ----
static int open_dir(struct run *r, struct err *e) {
    int rc;
    if (r->o.out_dir) snprintf(r->out_dir, sizeof r->out_dir, "%s", r->o.out_dir);
    else if ((rc = results_default_dir(r->out_dir, sizeof r->out_dir, r->o.model_name, e))) return rc;
    if ((rc = mkdir_p(r->out_dir, e)) || (rc = path_join(r->json_path, sizeof r->json_path, r->out_dir, "run.json", e)))
        return rc;
    cJSON *old = NULL;
    if (file_exists(r->json_path)) {
        if (!r->o.resume)
            return err_set(e, ERR_USAGE, "%s exists: pass --resume to continue that run, or another --out", r->json_path);
        if ((rc = json_parse_file(&old, r->json_path, e))) return rc;
    } else if (r->o.resume) {
        log_warn("run: --resume: no run.json in %s, starting a new run", r->out_dir);
    }
    if ((rc = run_record_open(r, old, e))) return rc;
    return results_write_json(r->json_path, r->json, e);
}

int run_open(struct run **out, const struct run_opts *o, struct err *e) {
    *out = NULL;
    struct run *r = calloc(1, sizeof *r);
    if (!r) return err_set(e, ERR_NOMEM, "run: out of memory");
    r->o = *o;
    r->t_start = time_now();
    int rc;
    if ((rc = open_model(r, e)) || (rc = plan_tasks(r, e)) || (rc = fit_batches(r, e)) || (rc = open_dir(r, e))) goto fail;
    r->scores = calloc((size_t)(r->max_items ? r->max_items : 1), sizeof *r->scores);
    r->logits_ref = malloc(sizeof(float) * (size_t)r->out_cap * (size_t)r->vocab);
    r->logits_q = o->n_modes > 1 ? malloc(sizeof(float) * (size_t)r->out_cap * (size_t)r->vocab) : NULL;
    if (!r->scores || !r->logits_ref || (o->n_modes > 1 && !r->logits_q)) {
        rc = err_set(e, ERR_NOMEM, "run: out of memory for logits (%d rows x %d)", r->out_cap, r->vocab);
        goto fail;
    }
    for (int t = 0; t < o->n_tasks; t++) r->total += r->plans[t].n_items;
    *out = r;
    return 0;
fail:
    run_free(r);
    return rc;
}

void run_free(struct run *r) {
    if (!r) return;
    for (int m = 0; m < RUN_MAX_MODES; m++) results_writer_abort(&r->writers[m]);
    for (int i = 0; r->scores && i < r->max_items; i++) eval_score_free(&r->scores[i]);
    for (int t = 0; t < r->o.n_tasks; t++) {
        if (r->plans) eval_plan_free(&r->plans[t]);
        if (r->sets) task_set_free(&r->sets[t]);
    }
    eval_batch_free(&r->batch);
    model_kv_free(r->kv);
    free(r->item_lo);
    free(r->tok_s);
    free(r->scores);
    free(r->plans);
    free(r->sets);
    free(r->scales);
    free(r->logits_ref);
    free(r->logits_q);
    cJSON_Delete(r->json);
    cJSON_Delete(r->carry);
    tok_free(r->tok);
    model_free(r->model);
    free(r);
}

void run_set_progress(struct run *r, run_progress_fn fn, void *user) {
    r->progress = fn;
    r->progress_user = user;
}
const char *run_dir(const struct run *r) { return r->out_dir; }
int run_n_tasks(const struct run *r) { return r->o.n_tasks; }
const char *run_task_name(const struct run *r, int t) { return r->sets[t].name; }
int run_task_items(const struct run *r, int t) { return r->plans[t].n_items; }

static void progress(struct run *r, int t, int final) {
    if (r->progress) r->progress(r->progress_user, r->sets[t].name, r->done, r->total, r->resumed, final);
}

// ---- scoring ----
// Items every mode's samples file holds in whole frames (a killed run's last frame may be short).
static int resume_point(struct run *r, int t, int *keep, struct err *e) {
    const int n = r->plans[t].n_items;
    *keep = n;
    for (int m = 0; m < r->o.n_modes; m++) {
        char sp[4096];
        int cnt, rc;
        if ((rc = results_samples_path(sp, sizeof sp, r->out_dir, r->sets[t].name, r->o.modes[m], e)) ||
            (rc = results_samples_count(sp, &cnt, e)))
            return rc;
        if (cnt > n) return err_set(e, ERR_MISMATCH, "%s: %d items, the task has %d", sp, cnt, n);
        if (cnt < n) cnt -= cnt % RESULTS_FRAME_ITEMS;
        if (cnt < *keep) *keep = cnt;
    }
    return 0;
}

int run_task_begin(struct run *r, int t, int *next, struct err *e) {
    const int n = r->plans[t].n_items;
    int keep = 0, rc;
    if (r->o.resume) {
        if ((rc = resume_point(r, t, &keep, e))) return rc;
        if (keep == n && n > 0) {
            log_info("run: %s: complete, skipped", r->sets[t].name);
            r->done += n;
            r->resumed += n;
            *next = r->next = n;
            return 0;
        }
        if (keep > 0) log_info("run: %s: resuming at item %d", r->sets[t].name, keep);
    }
    for (int m = 0; m < r->o.n_modes; m++) {
        char sp[4096];
        if ((rc = results_samples_path(sp, sizeof sp, r->out_dir, r->sets[t].name, r->o.modes[m], e)) ||
            (rc = results_writer_open(&r->writers[m], sp, keep, e)))
            return rc;
    }
    r->done += keep;
    r->resumed += keep;
    *next = r->next = keep;
    return 0;
}

// Attention hook coverage and the emulated cost of the batch just run under mode m.
static void count_mode(struct run *r, int m) {
    const struct model_config *cfg = model_cfg(r->model);
    struct run_mode_acc *acc = &r->acc[m];
    const struct attn_stats *st = attn_ctx_stats(model_attn(r->model));
    acc->calls += st->calls;
    acc->tokens += st->tokens;
    for (int l = 0; l < cfg->n_layers && l < ATTN_MAX_LAYERS; l++) acc->calls_per_layer[l] += st->calls_per_layer[l];
    attn_ctx_reset_stats(model_attn(r->model));
    // cost counts are exact functions of the call shapes (spec/cost.md 1)
    const unsigned fl = attn_mode_run_flags(attn_mode_find(r->o.modes[m]), r->o.attn.qmean); // the Q-Mean form's work
    for (int s = 0; s < r->batch.n_seq; s++)
        for (int l = 0; l < cfg->n_layers; l++)
            cost_count_call(&acc->cost, fl, r->batch.seq_len[s], cfg->n_heads, cfg->n_kv_heads, cfg->head_dim,
                            cfg->window[l], COST_BR_DEFAULT, COST_BC_DEFAULT);
}

// Appends the batch's items under mode m to its samples file.
static int write_samples(struct run *r, int t, int m, struct err *e) {
    const struct eval_batch *b = &r->batch;
    const struct task_set *set = &r->sets[t];
    int rc = 0;
    for (int i = b->item0; i < b->item1 && !rc; i++) {
        char wid[32];
        snprintf(wid, sizeof wid, "window/%d", i);
        const struct task_item *it = set->is_ppl ? NULL : &set->items[r->item_lo[t] + i];
        const struct eval_score *s = &r->scores[i];
        struct results_sample rs = {.idx = r->item_lo[t] + i, .id = it ? it->id : wid, .subject = it ? it->subject : NULL,
                                    .gold = s->gold, .n_choices = s->n_choices, .ll = s->ll, .n_chars = s->n_chars,
                                    .n_tok = s->n_tok, .greedy = s->greedy, .pred = s->pred,
                                    .pred_norm = s->pred_norm, .margin = s->margin,
                                    .n_kl = m > 0 ? s->n_kl : 0, .kl = s->kl, .top1_same = s->top1_same};
        rc = results_writer_add(&r->writers[m], &rs, e);
    }
    for (int i = b->item0; i < b->item1; i++) eval_score_free(&r->scores[i]);
    return rc;
}

// The current batch under every mode: forward, statistics, scores, samples.
static int score_batch(struct run *r, int t, struct err *e) {
    const struct eval_plan *p = &r->plans[t];
    const struct eval_batch *b = &r->batch;
    const int n_modes = r->o.n_modes;
    int rc = 0;
    for (int m = 0; m < n_modes && !rc; m++) {
        if (n_modes > 1 && (rc = model_set_attn(r->model, r->o.modes[m], &r->o.attn, r->scales, e))) break;
        float *lg = m == 0 ? r->logits_ref : r->logits_q;
        double tf = time_now();
        if (r->kv) rc = cached_forward(r->model, r->kv, p, b, lg, r->vocab, &r->acc[m].cached, e);
        else rc = model_forward(r->model, b->tok, b->seq_len, b->n_seq, b->out_pos, b->n_out, lg, e);
        r->acc[m].forward_s += time_now() - tf;
        r->acc[m].tokens_input += b->n_tok;
        r->acc[m].rows_scored += b->n_out;
        if (rc) {
            err_prefix(e, "task %s, mode %s, items %d..%d", r->sets[t].name, r->o.modes[m], b->item0, b->item1 - 1);
            break;
        }
        count_mode(r, m);
        struct eval_score *sc = r->scores + b->item0;
        if ((rc = eval_batch_score(sc, p, b, lg, r->vocab, r->o.n_threads, e))) break;
        if (m > 0 && (rc = eval_batch_compare(sc, p, b, r->logits_ref, r->logits_q, r->vocab, r->o.n_threads, e))) break;
        rc = write_samples(r, t, m, e);
    }
    return rc;
}

int run_task_score(struct run *r, int t, int item_end, struct err *e) {
    const struct eval_plan *p = &r->plans[t];
    if (item_end > p->n_items) item_end = p->n_items;
    int rc = 0;
    // with the cache a batch is bounded by its logits rows: many items share roots and calls
    const int budget = r->kv ? (r->max_tokens < (1 << 24) ? 64 * r->max_tokens : INT32_MAX / 2) : r->max_tokens;
    while (r->next < item_end && !rc) {
        if ((rc = eval_batch_next(&r->batch, p, r->next, item_end, budget, r->max_out, e))) break;
        if ((rc = score_batch(r, t, e))) break;
        const int k = r->batch.item1 - r->batch.item0;
        r->done += k;
        r->processed += k;
        r->next = r->batch.item1;
        progress(r, t, 0);
        if (r->o.stop_after_items > 0 && r->processed >= r->o.stop_after_items) {
            // test hook: leave the files as a SIGKILL would (pending lines lost)
            for (int m = 0; m < r->o.n_modes; m++) results_writer_abort(&r->writers[m]);
            return err_set(e, ERR_INTERNAL, "stopped after %d items (HIFA4_STOP_AFTER_ITEMS)", (int)r->processed);
        }
    }
    return rc;
}

int run_task_end(struct run *r, int t, struct err *e) {
    int rc = 0;
    for (int m = 0; m < r->o.n_modes && !rc; m++) rc = results_writer_close(&r->writers[m], e);
    if (!rc) progress(r, t, 1);
    return rc;
}

// ---- finish ----
int run_publish(const char *dir, cJSON *run, char **headline, struct err *e) {
    char path[4096];
    cJSON *summary = NULL;
    int rc;
    if (cJSON_GetObjectItemCaseSensitive(run, "complete")) cJSON_ReplaceItemInObjectCaseSensitive(run, "complete", cJSON_CreateBool(1));
    else cJSON_AddBoolToObject(run, "complete", 1);
    if ((rc = path_join(path, sizeof path, dir, "run.json", e)) || (rc = results_write_json(path, run, e))) return rc;
    if ((rc = results_summarize(dir, &summary, e))) return rc;
    if (!(rc = path_join(path, sizeof path, dir, "summary.json", e))) rc = results_write_json(path, summary, e);
    cJSON_Delete(summary);
    if (rc) return rc;
    return report_render(dir, headline, e);
}

int run_finish(struct run *r, char **headline, struct err *e) {
    run_record_finish(r);
    return run_publish(r->out_dir, r->json, headline, e);
}
