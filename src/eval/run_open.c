// run_open.c: opening a run (see run.h) in the order that puts every check a user can fail
// before the expensive work: the run directory (created, locked, run.json vs
// --resume), config.json and the checkpoint's fingerprint, the tokenizer, every attention mode
// and the scales file, then every task's data - taken from run_precheck when it loaded it, else
// loaded here; checked non-empty and tokenized - and
// run.json's configuration key; only then the weights are converted. run_free releases it all,
// the lock last.
#include "eval/run.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "attention/scales.h"
#include "base/json_util.h"
#include "base/sha256.h"
#include "eval/prefix.h"
#include "eval/run_internal.h"
#include "model/perturb.h"
#include "io/fingerprint.h"
#include "io/safetensors.h"
#include "results/lock.h"

// logits rows per batch: keep each of the two logits buffers near 256 MiB
#define LOGITS_BYTES (256u << 20)

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

// ---- the run directory: created, locked, checked against --resume ----
// A directory without run.json that holds a run's files (its run.json deleted or lost): their
// origin cannot be proved, and a new run would overwrite or mix with them.
static int check_orphans(const char *dir, struct err *e) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *de;
    char first[256] = "";
    int n = 0;
    while ((de = readdir(d)))
        if ((!strncmp(de->d_name, "samples-", 8) && strstr(de->d_name, ".jsonl.zst")) || !strcmp(de->d_name, "summary.json"))
            if (n++ == 0) snprintf(first, sizeof first, "%s", de->d_name);
    closedir(d);
    if (!n) return 0;
    return err_set(e, ERR_MISMATCH, "%s holds %d file%s of a run (%s%s) but no run.json: nothing proves what they were made "
                   "from, so they are neither resumed nor overwritten; move them away (or remove them), or use another --out",
                   dir, n, n > 1 ? "s" : "", first, n > 1 ? ", ..." : "");
}

static int open_dir(struct run *r, struct err *e) {
    int rc;
    if (r->o.out_dir) snprintf(r->out_dir, sizeof r->out_dir, "%s", r->o.out_dir);
    else if ((rc = results_default_dir(r->out_dir, sizeof r->out_dir, r->o.model_name, e))) return rc;
    r->made_dir = !dir_exists(r->out_dir);
    if ((rc = mkdir_p(r->out_dir, e)) || (rc = path_join(r->json_path, sizeof r->json_path, r->out_dir, "run.json", e)))
        return rc;
    // one process per directory: two --resume runs on one --out corrupted its samples files
    if ((rc = results_lock(r->out_dir, &r->lock_fd, e))) return rc;
    if (file_exists(r->json_path)) {
        if (!r->o.resume)
            return err_set(e, ERR_USAGE, "%s exists: pass --resume to continue that run, or another --out", r->json_path);
        if ((rc = json_parse_file(&r->old, r->json_path, e))) return rc;
        r->continued = 1;
    } else if ((rc = check_orphans(r->out_dir, e))) {
        return rc;
    } else if (r->o.resume) {
        log_warn("run: --resume: no run.json in %s, starting a new run", r->out_dir);
    }
    return 0;
}

// ---- config, fingerprint, tokenizer, scales, modes: no weights read ----
static int file_sha256(const char *path, char hex[65], struct err *e) {
    char *buf;
    size_t n;
    int rc = file_read_all(path, &buf, &n, e);
    if (rc) return rc;
    sha256_hex(buf, n, hex);
    free(buf);
    return 0;
}

static int probe_model(struct run *r, struct err *e) {
    const struct run_opts *o = &r->o;
    struct safetensors st;
    int rc;
    double t0 = time_now();
    if ((rc = cfg_load(&r->cfg, o->model_dir, e))) return err_prefix(e, "%s", o->model_dir);
    // two fingerprints before the weights load: version 1 (headers and a few KiB per tensor)
    // keys the scales files; version 2 (every byte, cached per file) is the run's identity
    if ((rc = st_open(&st, o->model_dir, e))) return err_prefix(e, "%s", o->model_dir);
    rc = st_fingerprint(&st, r->model_hex, e);
    struct st_fingerprint_stats fs;
    if (!rc && !(rc = st_fingerprint_all(&st, r->weights_hex, &fs, e)) && fs.bytes_hashed > 0)
        log_info("run: fingerprinted every byte of %s: %.2f GB in %.1f s (cached for the next run)", o->model_dir,
                 fs.bytes_hashed / 1e9, fs.seconds);
    if (!rc && st.metadata && !(r->ckpt_meta = cJSON_Duplicate(st.metadata, 1))) rc = err_set(e, ERR_NOMEM, "run: out of memory");
    st_close(&st);
    if (rc) return rc;
    if ((rc = tok_load(&r->tok, o->tokenizer_dir ? o->tokenizer_dir : o->model_dir, e))) return rc;
    r->t_load = time_now() - t0;
    tok_hash(r->tok, r->tok_hex);
    r->vocab = r->cfg.vocab_size;
    if (tok_vocab_size(r->tok) > r->vocab)
        return err_set(e, ERR_MISMATCH, "tokenizer has %d tokens but the model's vocabulary is %d", tok_vocab_size(r->tok),
                       r->vocab);
    r->add_bos = o->bos_policy == EVAL_BOS_AUTO ? tok_adds_bos(r->tok) : o->bos_policy == EVAL_BOS_ON;
    if (r->add_bos && tok_bos_id(r->tok) < 0) return err_set(e, ERR_UNSUPPORTED, "--bos on: the tokenizer has no BOS token");
    if (o->scales &&
        ((rc = attn_scales_load(&r->scales, o->scales, r->cfg.n_layers, r->cfg.n_kv_heads, r->cfg.head_dim, r->model_hex, e)) ||
         (rc = file_sha256(o->scales, r->scales_hex, e))))
        return rc;
    // every mode with these options and scales (unknown mode, missing scales, bad tile), on a
    // context of one token: nothing sized by the model is allocated
    for (int m = 0; m < o->n_modes; m++) {
        struct attn_ctx *ctx = NULL;
        const struct attn_shape one = {.n_layers = r->cfg.n_layers, .H = r->cfg.n_heads, .Hkv = r->cfg.n_kv_heads,
                                       .d = r->cfg.head_dim, .max_T = 1};
        rc = attn_ctx_init(&ctx, o->modes[m], &o->attn, &one, r->scales, e);
        attn_ctx_free(ctx);
        if (rc) return rc;
    }
    return 0;
}

// ---- tasks -> requests ----
// perplexity: the whole text as one token list, cut into windows (eval.h)
static int plan_ppl(struct run *r, int t, struct err *e) {
    const struct task_set *s = &r->sets[t];
    struct eval_plan *p = &r->plans[t];
    double ts = time_now();
    int32_t *ids = NULL;
    int nid = 0;
    int prefix = tok_bos_id(r->tok) >= 0 ? tok_bos_id(r->tok) : tok_eos_id(r->tok);
    int rc = tok_encode(r->tok, s->text, s->text_len, 0, &ids, &nid, e);
    if (!rc && r->ppl_half) rc = eval_plan_build_ppl_half(p, ids, nid, r->ppl_ctx, r->add_bos ? tok_bos_id(r->tok) : -1, r->o.task.limit, e);
    else if (!rc) rc = eval_plan_build_ppl(p, ids, nid, r->ppl_ctx, prefix, r->o.task.limit, e);
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
    log_info("run: %s: %d tokens, %d windows of %d, %s scored (%.2fs)", r->o.tasks[t], nid, p->n_items, r->ppl_ctx,
             r->ppl_half ? "second half" : "every token", r->tok_s[t]);
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
    if (s->generate) // the options are only matched against the decoded text: no option sequence runs
        log_info("run: %s: %d items, generation form: greedy decoding of up to %d tokens after each context "
                 "(%d option texts matched, not scored) (%.2fs)", r->o.tasks[t], n, s->generate, p->n_req, r->tok_s[t]);
    else
        log_info("run: %s: %d items, %d requests, %d sequences, %lld tokens, %d truncated (%.2fs)", r->o.tasks[t], n,
                 p->n_req, p->n_seq, (long long)p->n_tokens, p->n_truncated, r->tok_s[t]);
    return 0;
}

// Every task loaded (task_load refuses an empty one, naming task and file) before any is planned.
// ---- the prefix cache (eval/cached.h) ----
// On unless --no-prefix-cache, or for a LongRoPE model whose sequences cross rope_orig_max (its
// RoPE factors depend on the total length, so a prefix would need recomputing: model.h).
static int longest_seq(const struct run *r) {
    int longest = 0;
    for (int t = 0; t < r->o.n_tasks; t++) longest = r->plans[t].max_seq_len > longest ? r->plans[t].max_seq_len : longest;
    return longest;
}

static int use_cache(const struct run *r) {
    if (!r->o.prefix_cache) return 0;
    return !(r->cfg.rope_type == ROPE_LONGROPE && longest_seq(r) > r->cfg.rope_orig_max);
}

int run_mode_reuses(const struct run *r, int m) {
    struct attn_opts ao = r->o.attn;
    return attn_prefix_align(attn_mode_find(r->o.modes[m]), &ao) != ATTN_ALIGN_NONE;
}
static int all_modes_reuse(const struct run *r) {
    for (int m = 0; m < r->o.n_modes; m++)
        if (!run_mode_reuses(r, m)) return 0;
    return 1;
}

static int max_continuation(const struct run *r) {
    int cont = 0;
    for (int t = 0; t < r->o.n_tasks; t++)
        for (int q = 0; q < r->plans[t].n_req; q++) cont = r->plans[t].req[q].n_cont > cont ? r->plans[t].req[q].n_cont : cont;
    return cont;
}

// The model's tables and attention buffers sized for the longest sequence of the run, not the
// config's window (Gemma 3: RoPE tables of 32,768 positions, 128 MB, for 512-token windows).
// Each RoPE entry depends on its position only, so no value changes; runs that decode keep the
// window (greedy decoding grows a sequence past its plan).
static void seq_capacity(struct run *r) {
    int gen = 0;
    for (int t = 0; t < r->o.n_tasks; t++) gen |= r->sets[t].generate > 0;
    const int longest = longest_seq(r);
    if (r->mo.max_seq == 0 && !gen && longest > 0) r->mo.max_seq = longest;
}

// The largest prefix alignment of the run's modes under its options (attention/attn.h).
static int align_of_modes(const struct run *r) {
    int align_max = 1;
    for (int m = 0; m < r->o.n_modes; m++) {
        const int a = attn_prefix_align(attn_mode_find(r->o.modes[m]), &r->o.attn);
        align_max = a > align_max ? a : align_max;
    }
    return align_max;
}

// The cache, allocated once: the longest sequence plus one batch of stored positions
// (prefix_store_rows, for the largest alignment of the run's modes); for greedy decoding the
// longest context plus its decoded tokens.
static int open_cache(struct run *r, struct err *e) {
    if (!r->o.prefix_cache) return 0;
    if (!use_cache(r)) {
        log_warn("run: prefix cache off: sequences cross this LongRoPE model's factor switch at %d tokens",
                 r->cfg.rope_orig_max);
        return 0;
    }
    int rows = 0;
    const int align_max = align_of_modes(r);
    for (int t = 0; t < r->o.n_tasks; t++) {
        const struct eval_plan *p = &r->plans[t];
        int n = 0;
        if (r->sets[t].generate) { // greedy decoding stores one context and its decoded tokens
            for (int i = 0; i < p->n_items; i++) n = p->seq[p->item_seq[i]].pos[0] + 1 > n ? p->seq[p->item_seq[i]].pos[0] + 1 : n;
            n += r->sets[t].generate;
        } else {
            n = prefix_store_rows(p, model_get_opts(r->model)->max_tokens, align_max);
        }
        rows = n > rows ? n : rows;
    }
    int rc = model_kv_open(&r->kv, r->model, rows, e);
    if (rc) return err_prefix(e, "prefix cache (--no-prefix-cache runs without it)");
    log_info("run: prefix cache: %d positions x %.1f KB = %.3f GB, allocated once", rows,
             model_kv_row_bytes(r->model) / 1024.0, model_kv_bytes(r->kv) * 1e-9);
    char names[1024] = "";
    for (int m = 0, k = 0; m < r->o.n_modes; m++)
        if (!run_mode_reuses(r, m) && k < (int)sizeof names)
            k += snprintf(names + k, sizeof names - (size_t)k, "%s%s", k ? ", " : "", r->o.modes[m]);
    if (names[0])
        log_info("run: prefix cache not used by %s: no exact cached prefix (NVFP4's per-tensor scales, sage3's K mean "
                 "see the whole sequence; spec/fp4.md 4.3, 5.5), every sequence scored whole", names);
    return 0;
}

static int plan_tasks(struct run *r, struct err *e) {
    const struct run_opts *o = &r->o;
    const struct model_config *cfg = &r->cfg;
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
    r->ppl_half = o->ppl_half;
    struct eval_plan_opts po = {.add_bos = r->add_bos, .bos_id = tok_bos_id(r->tok), .eos_id = tok_eos_id(r->tok),
                                .window = cfg->max_seq, .n_threads = o->n_threads};
    for (int t = 0; t < nt; t++) {
        int rc = 0;
        if (o->loaded && o->loaded->sets[t]) { // loaded by run_precheck: taken, not read again
            r->sets[t] = *o->loaded->sets[t];
            free(o->loaded->sets[t]);
            o->loaded->sets[t] = NULL;
        } else {
            rc = task_load(o->tasks[t], &r->sets[t], &to, e);
        }
        if (rc) return rc;
        if (r->sets[t].is_ppl && o->shard_n > 1)
            return err_set(e, ERR_UNSUPPORTED, "--shard: not supported for the perplexity task '%s'", o->tasks[t]);
    }
    for (int t = 0; t < nt; t++) {
        int rc = r->sets[t].is_ppl ? plan_ppl(r, t, e) : plan_mc(r, t, &po, e);
        if (rc) return rc;
        if (r->plans[t].n_items > r->max_items) r->max_items = r->plans[t].n_items;
    }
    // Without the prefix cache one item must fit in one batch: the batch capacity grows to the
    // largest item (the window caps every sequence at max_position_embeddings). With it only a
    // leaf must (eval/prefix.h): up to one alignment of recomputed context and its continuation.
    int max_item = 0;
    for (int t = 0; t < nt; t++)
        if (r->plans[t].max_item_tokens > max_item) max_item = r->plans[t].max_item_tokens;
    if (use_cache(r)) {
        int leaf = max_continuation(r) + align_of_modes(r);
        // a mode without reuse computes whole sequences (run.c forward_whole): the longest must fit
        for (int t = 0; t < nt && !all_modes_reuse(r); t++) leaf = r->plans[t].max_seq_len > leaf ? r->plans[t].max_seq_len : leaf;
        max_item = leaf < max_item ? leaf : max_item;
    }
    for (int t = 0; t < nt; t++) { // greedy decoding: a context and its decoded tokens
        if (!r->sets[t].generate) continue;
        for (int m = 0; m < o->n_modes; m++)
            if (!run_mode_reuses(r, m))
                return err_set(e, ERR_USAGE, "task %s (generation form): mode %s has no exact cached prefix (spec/fp4.md "
                               "4.3, 5.5) and greedy decoding continues one; run it on likelihood tasks", o->tasks[t],
                               o->modes[m]);
        const int room = cfg->max_seq - r->sets[t].generate;
        int over = 0, longest = 0;
        for (int i = 0; i < r->plans[t].n_items; i++) { // the context of item i: its first sequence up to the first row
            const struct eval_seq *q = &r->plans[t].seq[r->plans[t].item_seq[i]];
            const int n_ctx = q->pos[0] + 1;
            over += n_ctx > room;
            longest = n_ctx > longest ? n_ctx : longest;
        }
        if (over || r->plans[t].n_truncated)
            return err_set(e, ERR_RANGE, "task %s (generation form): %d of its %d items have a context of up to %d tokens, "
                           "longer than %d (the model's window of %d minus %d decoded tokens): lower --niah-lengths",
                           o->tasks[t], over ? over : r->plans[t].n_items, r->plans[t].n_items, longest, room, cfg->max_seq,
                           r->sets[t].generate);
        const int need = r->plans[t].max_seq_len + r->sets[t].generate;
        if (!use_cache(r) && need > max_item) max_item = need;
    }
    for (int t = 0; t < nt; t++) // a truncated haystack loses its start and maybe the needle: scored, it read 0%
        if (!r->sets[t].generate && !strcmp(o->tasks[t], "niah") && r->plans[t].n_truncated)
            return err_set(e, ERR_RANGE, "task niah: %d of its %d items are longer than the model's window of %d tokens "
                           "and would be truncated (losing the haystack's start): lower --niah-lengths to fit the window, "
                           "as trace --ctx requires", r->plans[t].n_truncated, r->plans[t].n_items, cfg->max_seq);
    r->mo = o->model;
    seq_capacity(r);
    if (max_item > r->mo.max_tokens) {
        log_info("run: an item needs %d tokens (batch capacity %d): using max_tokens %d", max_item, r->mo.max_tokens, max_item);
        r->mo.max_tokens = max_item;
    }
    r->max_tokens = r->mo.max_tokens;
    return 0;
}

// ---- the weights (the expensive part), batches and buffers ----
static int open_model(struct run *r, struct err *e) {
    const struct run_opts *o = &r->o;
    double t0 = time_now();
    int rc = model_open(&r->model, o->model_dir, &r->mo, e);
    if (rc) return rc;
    r->t_load += time_now() - t0;
    if (strcmp(model_hash(r->model), r->model_hex))
        return err_set(e, ERR_MISMATCH, "%s: the checkpoint changed while the run was opening", o->model_dir);
    // one attention context per mode, each made once (the run passes mode m's to every forward)
    for (int m = 0; m < o->n_modes; m++)
        if ((rc = model_attn_open(&r->attn[m], r->model, o->modes[m], &o->attn, r->scales, e))) return rc;
    r->max_tokens = model_get_opts(r->model)->max_tokens;
    r->max_out = (int)(LOGITS_BYTES / ((size_t)r->vocab * sizeof(float)));
    if (r->max_out < 1) r->max_out = 1;
    r->out_cap = r->max_out; // a batch always holds one whole item
    for (int t = 0; t < o->n_tasks; t++)
        if (r->plans[t].max_item_rows > r->out_cap) r->out_cap = r->plans[t].max_item_rows;
    r->scores = calloc((size_t)(r->max_items ? r->max_items : 1), sizeof *r->scores);
    r->logits_ref = malloc(sizeof(float) * (size_t)r->out_cap * (size_t)r->vocab);
    r->logits_q = o->n_modes > 1 ? malloc(sizeof(float) * (size_t)r->out_cap * (size_t)r->vocab) : NULL;
    r->lse_ref = malloc(sizeof(double) * (size_t)r->out_cap);
    r->lse_q = o->n_modes > 1 ? malloc(sizeof(double) * (size_t)r->out_cap) : NULL;
    if (!r->scores || !r->logits_ref || (o->n_modes > 1 && (!r->logits_q || !r->lse_q)) || !r->lse_ref)
        return err_set(e, ERR_NOMEM, "run: out of memory for logits (%d rows x %d)", r->out_cap, r->vocab);
    return 0;
}

// Blanks (to commas) the names of the comma list that are subjects of s.
static void strike_subjects(char *list, const struct task_set *s) {
    for (char *p = list; *p;) {
        size_t k = strcspn(p, ",");
        char c = p[k];
        p[k] = 0;
        if (*p && task_has_subject(s, p)) memset(p, ',', k);
        p[k] = c;
        p += k + (c != 0);
    }
}

void run_tasks_free(struct run_tasks *t) {
    for (int i = 0; t && i < RUN_MAX_TASKS; i++) {
        if (t->sets[i]) task_set_free(t->sets[i]);
        free(t->sets[i]);
        t->sets[i] = NULL;
    }
}

// Loads every task but niah into loaded (when given), blanking in unmatched the --subjects
// names some task has.
static int load_tasks(const struct run_opts *o, struct run_tasks *loaded, char *unmatched, struct err *e) {
    for (int t = 0; t < o->n_tasks; t++) {
        if (!strcmp(o->tasks[t], "niah")) continue; // sized in tokens: checked by run_open with the tokenizer
        struct task_set *s = calloc(1, sizeof *s);
        if (!s) return err_set(e, ERR_NOMEM, "run: out of memory");
        int rc = task_load(o->tasks[t], s, &o->task, e);
        if (!rc && o->task.subjects) strike_subjects(unmatched, s);
        if (rc || !loaded) {
            task_set_free(s);
            free(s);
        } else {
            loaded->sets[t] = s;
        }
        if (rc) return rc;
    }
    return 0;
}

int run_precheck(const struct run_opts *o, struct run_tasks *loaded, struct err *e) {
    if (o->out_dir) {
        char jp[4200];
        snprintf(jp, sizeof jp, "%s/run.json", o->out_dir);
        if (file_exists(jp) && !o->resume)
            return err_set(e, ERR_USAGE, "%s exists: pass --resume to continue that run, or another --out", jp);
        if (file_exists(o->out_dir))
            return err_set(e, ERR_USAGE, "--out %s: a file, not a directory", o->out_dir);
    }
    int fd = -1;
    if (o->scales && file_open_regular(o->scales, &fd, e)) return err_prefix(e, "--scales");
    if (fd >= 0) close(fd);
    const char *subj = o->task.subjects;
    char unmatched[1024] = "";
    if (subj) snprintf(unmatched, sizeof unmatched, "%s", subj); // names no loaded task has, blanked as found
    int rc = load_tasks(o, loaded, unmatched, e);
    for (char *p = unmatched; !rc && subj && *p; p++)
        if (*p != ',') {
            size_t k = strcspn(p, ",");
            rc = err_set(e, ERR_NOTFOUND, "--subjects: '%.*s' is a subject of none of the tasks given", (int)k, p);
        }
    if (rc) run_tasks_free(loaded);
    return rc;
}

// --replicas: the weights must be resident to be moved; the plan line says what it costs.
static int replicas_check(struct run *r, struct err *e) {
    const int K = r->o.replicas;
    if (K == 0) return 0;
    long long items = 0;
    for (int t = 0; t < r->o.n_tasks; t++) items += r->plans[t].n_items;
    if (model_weights_mode(r->model) != MODEL_WEIGHTS_F32)
        return err_set(e, ERR_USAGE, "--replicas: the null perturbation moves resident binary32 weights, and this "
                       "model's are streamed (--weights stream, or auto on a small machine) or bf16 (--weights bf16): use "
                       "--weights f32");
    log_info("run: --replicas %d: every mode, the reference included, %d more times under the null perturbation %s "
             "(seed %llu): %d passes over %lld items x %d modes instead of 1", K, K, PERTURB_NAME,
             (unsigned long long)r->o.replica_seed, K + 1, items, r->o.n_modes);
    return 0;
}

int run_open(struct run **out, const struct run_opts *o, struct err *e) {
    *out = NULL;
    struct run *r = calloc(1, sizeof *r);
    if (!r) return err_set(e, ERR_NOMEM, "run: out of memory");
    r->o = *o;
    r->lock_fd = -1;
    r->t_start = time_now();
    int rc;
    if (o->role == RUN_ROLE_WORKER) {
        // a distributed run's worker: the same plans and model as rank 0, no run directory
        if ((rc = probe_model(r, e)) || (rc = plan_tasks(r, e)) || (rc = open_model(r, e)) || (rc = open_cache(r, e)))
            goto fail;
        *out = r;
        return 0;
    }
    if ((rc = open_dir(r, e)) || (rc = probe_model(r, e)) || (rc = plan_tasks(r, e))) goto fail;
    cJSON *old = r->old;
    r->old = NULL; // run_record_open takes it
    if ((rc = run_record_open(r, old, e)) || (rc = open_model(r, e)) || (rc = open_cache(r, e)) ||
        (rc = replicas_check(r, e)))
        goto fail;
    if ((rc = results_write_json(r->json_path, r->json, e))) goto fail;
    r->json_written = 1;
    for (int t = 0; t < o->n_tasks; t++) r->total += r->plans[t].n_items;
    r->total *= o->replicas + 1;
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
    for (int m = 0; m < RUN_MAX_MODES; m++) attn_ctx_free(r->attn[m]); // before the scales they borrow
    free(r->scales);
    free(r->logits_ref);
    free(r->logits_q);
    free(r->lse_ref); free(r->lse_q);
    cJSON_Delete(r->json);
    cJSON_Delete(r->carry);
    cJSON_Delete(r->old);
    cJSON_Delete(r->ckpt_meta);
    tok_free(r->tok);
    model_free(r->model);
    if (r->made_dir && r->lock_fd >= 0 && !r->json_written) {
        // nothing of this run reached the directory it created: leave no trace. Only the lock
        // holder may: a run refused as busy may also have seen the directory missing (both
        // checked before either made it) and would remove the holder's lock and directory
        char lock[4200];
        snprintf(lock, sizeof lock, "%s/%s", r->out_dir, RESULTS_LOCK_FILE);
        unlink(lock);
        rmdir(r->out_dir);
    }
    results_unlock(r->lock_fd);
    free(r);
}
