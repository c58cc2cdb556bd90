// run.c: a run's life cycle (see run.h) after it is open (run_open.c): scoring batches under
// every mode into the samples files, resume, the checks of what leaves the model, finish and
// publish. run.json's content is run_record.c's.
#include "eval/run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/json_util.h"
#include "eval/run_internal.h"
#include "results/noise.h"
#include "results/report.h"
#include "results/stamp.h"

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
        if (m->flags & ATTN_F_SAGE3) continue; // its own recipe with fixed options: named explicitly
        if ((m->flags & ATTN_F_SQK) && !o->scales && !o->scales_later) {
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
        if ((m->flags & ATTN_F_SQK) && !o->scales && !o->scales_later) {
            log_warn("run: skipping default mode '%s': it needs a Smooth-QK scales file (--scales)", defaults[i]);
            continue;
        }
        o->modes[o->n_modes++] = defaults[i];
    }
    if (!o->n_modes) o->modes[o->n_modes++] = "f32";
    const int n = o->n_modes;
    log_info("run: modes %s%s%s%s%s (reference %s)", o->modes[0], n > 1 ? "," : "", n > 1 ? o->modes[1] : "",
             n > 2 ? "," : "", n > 2 ? o->modes[2] : "", o->modes[RUN_REF_MODE]);
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

void run_set_progress(struct run *r, run_progress_fn fn, void *user) {
    r->progress = fn;
    r->progress_user = user;
}
const char *run_dir(const struct run *r) { return r->out_dir; }
int run_n_tasks(const struct run *r) { return r->o.n_tasks; }
const char *run_task_name(const struct run *r, int t) { return r->sets[t].name; }
int run_task_items(const struct run *r, int t) { return r->plans[t].n_items; }

// m: the mode computing the current batch (-1: between batches), frac (0..1) of its work done:
// the batch counts as (m + frac) / modes of its items.
static void progress_at(struct run *r, int t, int m, double frac, int final) {
    if (!r->progress) return;
    const double part = m < 0 ? 0 : (m + frac) / r->o.n_modes * (r->batch.item1 - r->batch.item0);
    const struct run_progress p = {.task = r->sets[t].name, .mode = m < 0 ? NULL : r->o.modes[m], .done = (double)r->done + part,
                                   .task_done = (double)r->next + part, .total = r->total, .task_total = r->plans[t].n_items,
                                   .resumed = r->resumed, .replica = r->rep, .replicas = r->o.replicas, .final = final};
    r->progress(r->progress_user, &p);
}
static void progress(struct run *r, int t, int m, int final) { progress_at(r, t, m, 0, final); }

// ---- replicas ----
int run_n_replicas(const struct run *r) { return r->o.replicas; }

int run_samples_file(char *out, size_t n, struct results_stamp *st, const struct run *r, int t, int m, struct err *e) {
    char name[512];
    int rc = noise_replica_name(name, sizeof name, r->o.modes[m], r->rep, e);
    if (!rc) rc = results_samples_path(out, n, r->out_dir, r->sets[t].name, name, e);
    if (!rc && st) results_stamp_expect(st, r->json, r->out_dir, r->sets[t].name, name);
    return rc;
}

int run_set_replica(struct run *r, int k, struct err *e) {
    if (k < 0 || k > r->o.replicas) return err_set(e, ERR_USAGE, "run: replica %d of %d", k, r->o.replicas);
    if (k == r->rep) return 0;
    // undo the current replica's perturbation (an involution), then apply k's
    int rc = model_perturb(r->model, r->o.replica_seed, r->rep, e);
    if (!rc) rc = model_perturb(r->model, r->o.replica_seed, k, e);
    if (rc) return rc;
    if (!r->acc0_saved) { memcpy(r->acc0, r->acc, sizeof r->acc); r->acc0_saved = 1; }
    r->rep = k;
    log_info("run: replica %d of %d (%s)", k, r->o.replicas, k ? "weights moved one ulp, seed-dependent" : "unperturbed");
    return 0;
}

// ---- scoring ----
// Items every mode's samples file holds in whole frames (a killed run's last frame may be short).
static int resume_point(struct run *r, int t, int *keep, struct err *e) {
    const int n = r->plans[t].n_items;
    *keep = n;
    for (int m = 0; m < r->o.n_modes; m++) {
        char sp[4096];
        int cnt, rc;
        struct results_stamp want; // a samples file of another run, task or mode is named, never continued
        if ((rc = run_samples_file(sp, sizeof sp, &want, r, t, m, e)) || (rc = results_stamp_check_file(sp, &want, e)) || (rc = results_samples_count(sp, &cnt, e)))
            return rc;
        if (cnt > n)
            return err_set(e, ERR_MISMATCH, "%s: %d items, the task has %d: not this run's file; remove it and run the "
                           "same command again (--resume re-scores the task)", sp, cnt, n);
        if (cnt < n) cnt -= cnt % RESULTS_FRAME_ITEMS;
        if (cnt < *keep) *keep = cnt;
    }
    return 0;
}

int run_task_resume_point(struct run *r, int t, int *keep, struct err *e) {
    *keep = 0;
    return r->o.resume ? resume_point(r, t, keep, e) : 0;
}

int run_task_begin(struct run *r, int t, int *next, struct err *e) {
    const int n = r->plans[t].n_items;
    int keep = 0, rc;
    if (r->o.resume) {
        if ((rc = resume_point(r, t, &keep, e))) return rc;
        if (keep == n && n > 0) {
            log_info("run: %s%s: complete, skipped", r->sets[t].name, r->rep ? " (this replica)" : "");
            r->done += n;
            r->resumed += n;
            *next = r->next = n;
            return 0;
        }
        if (keep > 0) log_info("run: %s: resuming at item %d", r->sets[t].name, keep);
    }
    for (int m = 0; m < r->o.n_modes; m++) {
        char sp[4096];
        struct results_stamp st;
        if ((rc = run_samples_file(sp, sizeof sp, &st, r, t, m, e)) || (rc = results_writer_open(&r->writers[m], sp, keep, &st, e)))
            return rc;
    }
    r->done += keep;
    r->resumed += keep;
    *next = r->next = keep;
    return 0;
}

void run_count_calls(struct run *r, int m) {
    const struct model_config *cfg = model_cfg(r->model);
    struct run_mode_acc *acc = &r->acc[m];
    const struct attn_stats *st = attn_ctx_stats(r->attn[m]);
    acc->calls += st->calls;
    acc->tokens += st->tokens;
    for (int l = 0; l < cfg->n_layers && l < ATTN_MAX_LAYERS; l++) acc->calls_per_layer[l] += st->calls_per_layer[l];
    attn_ctx_reset_stats(r->attn[m]);
}

// cost counts are exact functions of the call shapes (spec/cost.md 1)
int run_count_cost(struct run *r, int m, struct err *e) {
    const struct model_config *cfg = model_cfg(r->model);
    struct run_mode_acc *acc = &r->acc[m];
    const unsigned fl = attn_mode_run_flags(attn_mode_find(r->o.modes[m]), r->o.attn.qmean); // the Q-Mean form's work
    for (int s = 0; s < r->batch.n_seq; s++)
        for (int l = 0; l < cfg->n_layers; l++) {
            const struct cost_shape sh = {.T = r->batch.seq_len[s], .H = cfg->n_heads, .Hkv = cfg->n_kv_heads,
                                          .d = cfg->head_dim, .window = cfg->window[l], .Br = COST_BR_DEFAULT,
                                          .Bc = COST_BC_DEFAULT};
            int rc = cost_count_call(&acc->cost, fl, &sh, e);
            if (rc) return err_prefix(e, "mode %s", r->o.modes[m]);
        }
    return 0;
}

// Numbers leave the model here: a log-likelihood that is not finite came from NaN
// or inf logits and says nothing about a decision; pred 0 and a "null" in the samples file
// counted it in accuracy, flips and hurts/helps. It stops the run naming task, item and mode,
// or with --nonfinite count marks the item (left out of every statistic, counted in the report).
static int check_finite(struct run *r, int t, int m, const char *id, const struct eval_score *s, int *nonfinite,
                        struct err *e) {
    *nonfinite = 0;
    for (int c = 0; c < s->n_choices; c++) {
        if (isfinite(s->ll[c])) continue;
        if (r->o.nonfinite == RUN_NONFINITE_COUNT) {
            *nonfinite = 1;
            r->acc[m].nonfinite++;
            return 0;
        }
        return err_set(e, ERR_RANGE, "task %s, item '%s', mode %s: the log-likelihood of choice %d is %g: the model's "
                       "logits are not finite (an overflowing weight, scale or activation); --nonfinite count records "
                       "such items and leaves them out of every statistic", r->sets[t].name, id, r->o.modes[m], c, s->ll[c]);
    }
    return 0;
}

// Appends the batch's items under mode m to its samples file.
int run_write_samples(struct run *r, int t, int m, struct err *e) {
    const struct eval_batch *b = &r->batch;
    const struct task_set *set = &r->sets[t];
    int rc = 0;
    for (int i = b->item0; i < b->item1 && !rc; i++) {
        char wid[32];
        snprintf(wid, sizeof wid, "window/%d", i);
        const struct task_item *it = set->is_ppl ? NULL : &set->items[r->item_lo[t] + i];
        const struct eval_score *s = &r->scores[i];
        int nonfinite;
        if ((rc = check_finite(r, t, m, it ? it->id : wid, s, &nonfinite, e))) break;
        struct results_sample rs = {.idx = r->item_lo[t] + i, .id = it ? it->id : wid, .subject = it ? it->subject : NULL,
                                    .gold = s->gold, .n_choices = s->n_choices, .ll = s->ll, .n_chars = s->n_chars,
                                    .n_tok = s->n_tok, .greedy = s->greedy, .pred = s->pred,
                                    .pred_norm = s->pred_norm, .margin = s->margin,
                                    .n_kl = m != RUN_REF_MODE ? s->n_kl : 0, .kl = s->kl, .top1_same = s->top1_same,
                                    .nonfinite = nonfinite, .generated = s->generated};
        if (r->sink) rc = results_sample_line(&r->sink[m], &rs) ? err_set(e, ERR_NOMEM, "run: out of memory") : 0;
        else rc = results_writer_add(&r->writers[m], &rs, e);
    }
    for (int i = b->item0; i < b->item1; i++) eval_score_free(&r->scores[i]);
    return rc;
}

// A batch built for the prefix cache (up to 64 x max_tokens) through a mode without reuse: whole
// sequences in consecutive chunks of at most max_tokens tokens (plan_tasks sized max_tokens for
// the longest sequence), their logits rows in the batch's order. The progress line moves with
// each chunk (a batch of 64 chunks can take minutes).
static int forward_whole(struct run *r, int t, int m, const struct eval_batch *b, float *lg, struct err *e) {
    int s0 = 0, tok0 = 0, out0 = 0, rc = 0;
    while (s0 < b->n_seq && !rc) {
        int s1 = s0, nt = 0, no = 0;
        while (s1 < b->n_seq && (s1 == s0 || nt + b->seq_len[s1] <= r->max_tokens)) nt += b->seq_len[s1++];
        while (out0 + no < b->n_out && b->out_pos[out0 + no] < tok0 + nt) no++;
        int *pos = malloc((size_t)(no ? no : 1) * sizeof *pos);
        if (!pos) return err_set(e, ERR_NOMEM, "run: out of memory");
        for (int i = 0; i < no; i++) pos[i] = b->out_pos[out0 + i] - tok0;
        const struct model_batch mb = {.tokens = b->tok + tok0, .n_seq = s1 - s0, .seq_len = b->seq_len + s0, .out_pos = pos,
                                       .n_out = no};
        rc = model_forward(r->model, r->attn[m], NULL, &mb, lg + (size_t)out0 * r->vocab, e);
        free(pos);
        s0 = s1, tok0 += nt, out0 += no;
        if (!rc && !r->sink && s0 < b->n_seq) progress_at(r, t, m, (double)tok0 / b->n_tok, 0);
    }
    return rc;
}

// cached_model's tick: mode m of task t is frac of the way through the current batch.
struct batch_tick { struct run *r; int t, m; };
static void on_tick(void *user, double frac) {
    const struct batch_tick *bt = user;
    progress_at(bt->r, bt->t, bt->m, frac, 0);
}

// The current batch under every mode: forward, statistics, scores, samples.
static int score_batch(struct run *r, int t, struct err *e) {
    const struct eval_plan *p = &r->plans[t];
    const struct eval_batch *b = &r->batch;
    const int n_modes = r->o.n_modes;
    int rc = 0;
    for (int m = 0; m < n_modes && !rc; m++) {
        float *lg = m == RUN_REF_MODE ? r->logits_ref : r->logits_q;
        if (!r->sink) progress(r, t, m, 0);
        double tf = time_now();
        if (r->kv && run_mode_reuses(r, m)) {
            struct batch_tick bt = {r, t, m};
            const struct cached_model cm = {.m = r->model, .ctx = r->attn[m], .kv = r->kv, .tick = r->sink ? NULL : on_tick,
                                            .tick_user = &bt};
            rc = cached_forward(&cm, p, b, lg, &r->acc[m].cached, e);
        } else if (r->kv) {
            rc = forward_whole(r, t, m, b, lg, e);
        } else {
            const struct model_batch mb = {.tokens = b->tok, .n_seq = b->n_seq, .seq_len = b->seq_len,
                                           .out_pos = b->out_pos, .n_out = b->n_out};
            rc = model_forward(r->model, r->attn[m], NULL, &mb, lg, e);
        }
        r->acc[m].forward_s += time_now() - tf;
        r->acc[m].tokens_input += b->n_tok;
        r->acc[m].rows_scored += b->n_out;
        if (rc) {
            err_prefix(e, "task %s, mode %s, items %d..%d", r->sets[t].name, r->o.modes[m], b->item0, b->item1 - 1);
            break;
        }
        run_count_calls(r, m);
        if ((rc = run_count_cost(r, m, e))) break;
        struct eval_score *sc = r->scores + b->item0;
        double *lse = m == RUN_REF_MODE ? r->lse_ref : r->lse_q;
        if ((rc = eval_batch_score(sc, p, b, (struct eval_logits){lg, r->vocab, lse}, r->o.n_threads, e))) break;
        const struct eval_logit_pair pair = {r->logits_ref, r->logits_q, r->vocab, r->lse_ref, r->lse_q};
        if (m != RUN_REF_MODE && (rc = eval_batch_compare(sc, p, b, pair, r->o.n_threads, e))) break;
        rc = run_write_samples(r, t, m, e);
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
        if ((rc = r->sets[t].generate ? run_generate_batch(r, t, e) : score_batch(r, t, e))) break;
        const int k = r->batch.item1 - r->batch.item0;
        r->done += k;
        r->processed += k;
        r->next = r->batch.item1;
        if (!r->sink) progress(r, t, -1, 0);
        if (r->o.stop_after_items > 0 && r->processed >= r->o.stop_after_items) {
            // test hook: leave the files as a SIGKILL would (pending lines lost)
            if (r->o.at_stop) r->o.at_stop();
            for (int m = 0; m < r->o.n_modes && !r->sink; m++) results_writer_abort(&r->writers[m]);
            return err_set(e, ERR_INTERNAL, "stopped after %d items (HIFA4_STOP_AFTER_ITEMS)", (int)r->processed);
        }
    }
    return rc;
}

int run_task_score_lines(struct run *r, int t, int item0, int item1, struct results_buf *lines, struct err *e) {
    r->next = item0;
    r->sink = lines;
    int rc = run_task_score(r, t, item1, e);
    r->sink = NULL;
    return rc;
}

int run_acc_add(struct run_mode_acc *to, const struct run_mode_acc *a, struct err *e) {
    to->forward_s += a->forward_s;
    to->nonfinite += a->nonfinite;
    to->calls += a->calls;
    to->tokens += a->tokens;
    for (int l = 0; l < ATTN_MAX_LAYERS; l++) to->calls_per_layer[l] += a->calls_per_layer[l];
    to->tokens_input += a->tokens_input;
    to->rows_scored += a->rows_scored;
    to->cached.tokens += a->cached.tokens;
    to->cached.stored += a->cached.stored;
    to->cached.calls += a->cached.calls;
    to->gen_items += a->gen_items;
    to->gen_tokens += a->gen_tokens;
    to->prefill_s += a->prefill_s;
    to->decode_s += a->decode_s;
    return cost_add(&to->cost, &a->cost, e);
}

int run_task_end(struct run *r, int t, struct err *e) {
    int rc = 0;
    for (int m = 0; m < r->o.n_modes && !rc; m++) rc = results_writer_close(&r->writers[m], e);
    if (!rc) progress(r, t, -1, 1);
    return rc;
}

// ---- finish ----
static void set_complete(cJSON *run, int complete) {
    if (cJSON_GetObjectItemCaseSensitive(run, "complete"))
        cJSON_ReplaceItemInObjectCaseSensitive(run, "complete", cJSON_CreateBool(complete));
    else
        cJSON_AddBoolToObject(run, "complete", complete);
}

int run_publish(const char *dir, cJSON *run, char **headline, struct err *e) {
    char path[4096];
    cJSON *summary = NULL;
    int rc;
    // summary and report read run.json from disk: it goes first, still incomplete; complete:
    // true only once every output exists (a full disk left complete: true and no report.md)
    set_complete(run, 0);
    if ((rc = path_join(path, sizeof path, dir, "run.json", e)) || (rc = results_write_json(path, run, e))) return rc;
    if ((rc = results_summarize(dir, &summary, e))) return rc;
    if (!(rc = path_join(path, sizeof path, dir, "summary.json", e))) rc = results_write_json(path, summary, e);
    cJSON_Delete(summary);
    if (rc || (rc = report_render(dir, headline, e))) return rc;
    set_complete(run, 1);
    if ((rc = path_join(path, sizeof path, dir, "run.json", e)) || (rc = results_write_json(path, run, e))) {
        if (headline) { free(*headline); *headline = NULL; }
        return rc;
    }
    return 0;
}

int run_finish(struct run *r, char **headline, struct err *e) {
    run_record_finish(r);
    return run_publish(r->out_dir, r->json, headline, e);
}
