// run_record.c: run.json of a run (DESIGN.md section 4): everything needed to reproduce it -
// tool and git revision, command, host, model (path, fingerprint, config), tokenizer, modes and
// attention options, scales, shard, seed, limit, tasks with their data sources and request
// counts - then, at the end, timings, hook coverage and emulated cost counts.
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/host.h"
#include "base/sha256.h"
#include "base/json_util.h"
#include "io/fingerprint.h"
#include "io/safetensors.h"
#include "results/run_identity.h"
#include "eval/run_internal.h"
#include "model/perturb.h"
#include "model/gemm.h"

static cJSON *str_array(const char *const *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

static void add_host(cJSON *run, const struct run *r) {
    char rev[128], host[256] = "?", ts[64];
    host_git_revision(rev, sizeof rev);
    gethostname(host, sizeof host - 1);
    struct utsname un;
    uname(&un);
    cJSON_AddStringToObject(run, "tool", "hifa4-eval");
    cJSON_AddStringToObject(run, "version", HIFA4_VERSION);
    cJSON_AddStringToObject(run, "git_revision", rev);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON_AddStringToObject(run, "created", ts);
    cJSON *cmd = cJSON_AddArrayToObject(run, "command");
    for (int i = 0; i < r->o.argc; i++) cJSON_AddItemToArray(cmd, cJSON_CreateString(r->o.argv[i]));
    cJSON *hj = cJSON_AddObjectToObject(run, "host");
    cJSON_AddStringToObject(hj, "name", host);
    cJSON_AddStringToObject(hj, "system", un.sysname);
    cJSON_AddStringToObject(hj, "release", un.release);
    cJSON_AddStringToObject(hj, "machine", un.machine);
    cJSON_AddNumberToObject(hj, "cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
    cJSON_AddNumberToObject(hj, "threads", r->o.n_threads);
    char cpu[256];
    host_cpu_model(cpu, sizeof cpu);
    cJSON_AddStringToObject(hj, "cpu", cpu);
    cJSON_AddStringToObject(hj, "simd", host_simd_level());
    char libm[96];
    host_libm(libm, sizeof libm);
    cJSON_AddStringToObject(hj, "libm", libm);
    // what the bits of the linear layers depend on: the GEMM's arithmetic contract (the same
    // string means the same bits on any CPU) and, for the record, the path that ran it
    cJSON *gj = cJSON_AddObjectToObject(run, "gemm");
    const int wbf16 = r->o.model.weights == MODEL_WEIGHTS_BF16;
    cJSON_AddStringToObject(gj, "arithmetic", wbf16 && r->o.model.act_bf16 ? GEMM_ARITHMETIC_DP : GEMM_ARITHMETIC);
    // the --weights mode asked for (auto resolves to f32 or stream at load; bf16: resident bf16
    // panels, a binary32 or f16 checkpoint rounded to bf16 RNE)
    cJSON_AddStringToObject(gj, "weights", model_weights_name(r->o.model.weights));
    gemm_isa_init(NULL, 0); // the path the forward will use (selected at first use otherwise)
    cJSON_AddStringToObject(gj, "isa", gemm_isa_name());
}

// A per-layer gate (calibrate --gate layer) gives the layers other alphas than the file's
// model-level "alpha": then "layer_alphas" lists them ("0.5,0,0.5", from the file's smooth_qk
// statistics, per_layer[].alpha), so that `tables` does not call such a file "alpha 0.5".
static void add_layer_alphas(cJSON *cj, const char *stats) {
    cJSON *j = stats ? cJSON_Parse(stats) : NULL;
    const cJSON *l;
    char buf[4096];
    size_t u = 0;
    int n = 0, differ = 0;
    double first = 0;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(j, "per_layer")) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(l, "alpha");
        if (!cJSON_IsNumber(a) || u >= sizeof buf) { cJSON_Delete(j); return; }
        if (n++) differ |= a->valuedouble != first;
        else first = a->valuedouble;
        u += (size_t)snprintf(buf + u, sizeof buf - u, "%s%g", n > 1 ? "," : "", a->valuedouble);
    }
    if (differ && u < sizeof buf) cJSON_AddStringToObject(cj, "layer_alphas", buf);
    cJSON_Delete(j);
}

// How the scales were calibrated (their file's metadata: aggregator, gate, alpha, as `calibrate`
// writes them; layer_alphas when a per-layer gate made them differ), for `tables` (paper Tables
// 2 and 5, Table A). Outside the configuration key: the file's sha256 already fixes them.
// Nothing is added for a file without these keys (the goldens).
static void add_scales_calibration(cJSON *run, const char *path) {
    static const char *const keys[] = {"aggregator", "gate", "alpha", "samples", "source", "gate_rule"};
    struct safetensors st;
    struct err e = {0};
    if (st_open(&st, path, &e)) return; // it was loaded already: an error here is not this record's to report
    cJSON *cj = NULL;
    for (int i = 0; i < (int)(sizeof keys / sizeof keys[0]); i++) {
        const char *v = st_meta(&st, keys[i]);
        if (!v) continue;
        if (!cj) cj = cJSON_AddObjectToObject(run, "scales_calibration");
        cJSON_AddStringToObject(cj, keys[i], v);
    }
    if (cj) add_layer_alphas(cj, st_meta(&st, "smooth_qk"));
    st_close(&st);
}

// sha256 of each tokenizer file the identity holds (null: the directory has none)
static void add_tokenizer_files(cJSON *tj, const char *dir) {
    static const char *const names[] = {"tokenizer.json", "tokenizer_config.json"};
    cJSON *fj = cJSON_AddObjectToObject(tj, "files");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[4200], hex[65];
        char *buf = NULL;
        size_t n = 0;
        struct err e = {0};
        if (path_join(path, sizeof path, dir, names[i], &e) || !file_exists(path) || file_read_all(path, &buf, &n, &e)) {
            cJSON_AddNullToObject(fj, names[i]);
            continue;
        }
        sha256_hex(buf, n, hex);
        free(buf);
        cJSON_AddStringToObject(fj, names[i], hex);
    }
}

// config.json as the identity reads it (every field; run_identity.h compares them by value)
static int add_config_json(cJSON *mj, const char *dir, struct err *e) {
    char path[4200];
    cJSON *c = NULL;
    int rc = path_join(path, sizeof path, dir, "config.json", e);
    if (!rc) rc = json_parse_file(&c, path, e);
    if (!rc) cJSON_AddItemToObject(mj, "config_json", c);
    return rc;
}

static int add_model(cJSON *run, const struct run *r, struct err *e) {
    const struct model_config *cfg = &r->cfg; // run.json is written before the weights load
    cJSON *mj = cJSON_AddObjectToObject(run, "model");
    cJSON_AddStringToObject(mj, "name", r->o.model_name);
    cJSON_AddStringToObject(mj, "arg", r->o.model_arg);
    cJSON_AddStringToObject(mj, "path", r->o.model_dir);
    cJSON_AddStringToObject(mj, "hash", r->model_hex); // fingerprint version 1: what scales files name
    cJSON *fp = cJSON_AddObjectToObject(mj, "fingerprint");
    cJSON_AddNumberToObject(fp, "version", ST_FINGERPRINT_VERSION);
    cJSON_AddStringToObject(fp, "hash", r->weights_hex);
    // where the weights came from (e.g. import-gguf: GGUF sha256, "dequantized from Q4_1")
    if (r->ckpt_meta) cJSON_AddItemToObject(mj, "checkpoint_metadata", cJSON_Duplicate(r->ckpt_meta, 1));
    if (r->o.model_source) cJSON_AddItemToObject(mj, "source", cJSON_Duplicate(r->o.model_source, 1));
    cJSON *cj = cJSON_AddObjectToObject(mj, "config");
    cJSON_AddNumberToObject(cj, "dim", cfg->dim);
    cJSON_AddNumberToObject(cj, "n_layers", cfg->n_layers);
    cJSON_AddNumberToObject(cj, "n_heads", cfg->n_heads);
    cJSON_AddNumberToObject(cj, "n_kv_heads", cfg->n_kv_heads);
    cJSON_AddNumberToObject(cj, "head_dim", cfg->head_dim);
    cJSON_AddNumberToObject(cj, "vocab_size", cfg->vocab_size);
    cJSON_AddNumberToObject(cj, "max_seq", cfg->max_seq);
    int rc = add_config_json(mj, r->o.model_dir, e);
    if (rc) return rc;
    cJSON_AddStringToObject(mj, "act", r->o.model.act_bf16 ? "bf16" : "f32");
    cJSON *tj = cJSON_AddObjectToObject(run, "tokenizer");
    cJSON_AddStringToObject(tj, "path", r->o.tokenizer_dir ? r->o.tokenizer_dir : r->o.model_dir);
    cJSON_AddStringToObject(tj, "hash", r->tok_hex);
    cJSON_AddStringToObject(tj, "bos_policy", r->o.bos_arg);
    cJSON_AddBoolToObject(tj, "add_bos", r->add_bos);
    cJSON_AddNumberToObject(tj, "bos_id", tok_bos_id(r->tok));
    cJSON_AddNumberToObject(tj, "eos_id", tok_eos_id(r->tok));
    add_tokenizer_files(tj, r->o.tokenizer_dir ? r->o.tokenizer_dir : r->o.model_dir);
    return 0;
}

static void add_attention(cJSON *run, const struct run *r) {
    const struct run_opts *o = &r->o;
    cJSON_AddItemToObject(run, "modes", str_array(o->modes, o->n_modes));
    cJSON_AddStringToObject(run, "reference", o->modes[RUN_REF_MODE]);
    cJSON *aj = cJSON_AddObjectToObject(run, "attention");
    cJSON_AddNumberToObject(aj, "tile", o->attn.tile);
    cJSON_AddStringToObject(aj, "v_group", attn_vgroup_name(o->attn.v_group));
    cJSON_AddStringToObject(aj, "qformat", attn_qformat_name(o->attn.qformat));
    // one Q-Mean form and one qdq skip per run directory (part of the configuration key)
    cJSON_AddStringToObject(aj, "qmean", attn_qmean_name(o->attn.qmean));
    // the channel form's arithmetic revision (spec section 4): in the configuration key, so a run
    // of revision 1 is never resumed or merged with one of revision 2; absent for the token form
    if (o->attn.qmean == ATTN_QMEAN_CHANNEL) cJSON_AddNumberToObject(aj, "qmean_revision", ATTN_QMEAN_CHANNEL_REVISION);
    cJSON_AddStringToObject(aj, "qdq_skip", attn_qdq_skip_name(o->attn.qdq_skip));
    cJSON *lj = cJSON_AddObjectToObject(aj, "labels");
    for (int m = 0; m < o->n_modes; m++) cJSON_AddStringToObject(lj, o->modes[m], attn_mode_find(o->modes[m])->label);
    // what reports and `tables` call each mode: "hifa4 (channel)", "direct [qdq-skip p]"
    cJSON *dj = cJSON_AddObjectToObject(aj, "display");
    for (int m = 0; m < o->n_modes; m++) {
        char name[160];
        attn_mode_display(name, sizeof name, attn_mode_find(o->modes[m]), o->attn.qformat, o->attn.qmean, o->attn.qdq_skip);
        cJSON_AddStringToObject(dj, o->modes[m], name);
    }
    // storage of each mode's attention operands (not part of the configuration key: derived)
    cJSON *stj = cJSON_AddObjectToObject(run, "storage");
    for (int m = 0; m < o->n_modes; m++) {
        const struct attn_mode *am = attn_mode_find(o->modes[m]);
        cJSON *x = cJSON_AddObjectToObject(stj, o->modes[m]);
        const int q4 = (am->flags & ATTN_F_QUANT) != 0, s3 = (am->flags & ATTN_F_SAGE3) != 0;
        const int fmt = s3 ? ATTN_QFORMAT_NVFP4 : o->attn.qformat;
        cJSON_AddStringToObject(x, "format", s3 ? "nvfp4-sa3" : q4 ? attn_qformat_name(fmt) : "bf16");
        cJSON_AddNumberToObject(x, "bits_per_value", q4 ? attn_qformat_bits(fmt) : 16);
        cJSON_AddBoolToObject(x, "per_tensor_scale", q4 && !s3 && fmt == ATTN_QFORMAT_NVFP4);
    }
    if (o->scales) {
        cJSON *sj = cJSON_AddObjectToObject(run, "scales");
        cJSON_AddStringToObject(sj, "path", o->scales);
        cJSON_AddStringToObject(sj, "sha256", r->scales_hex);
        add_scales_calibration(run, o->scales);
    } else {
        cJSON_AddNullToObject(run, "scales");
    }
    if (o->calibration) cJSON_AddItemToObject(run, "calibration", cJSON_Duplicate(o->calibration, 1));
    if (o->shard_n > 1) {
        cJSON *sh = cJSON_AddObjectToObject(run, "shard");
        cJSON_AddNumberToObject(sh, "k", o->shard_k);
        cJSON_AddNumberToObject(sh, "n", o->shard_n);
    }
    cJSON_AddNumberToObject(run, "seed", (double)o->task.seed);
    cJSON_AddNumberToObject(run, "limit", o->task.limit);
    if (o->task.subjects) cJSON_AddStringToObject(run, "subjects", o->task.subjects);
    if (o->replicas > 0) { // only then: a plain run's run.json and configuration key are unchanged
        cJSON *rj = cJSON_AddObjectToObject(run, "replicas");
        cJSON_AddNumberToObject(rj, "k", o->replicas);
        cJSON_AddNumberToObject(rj, "seed", (double)o->replica_seed);
        cJSON_AddStringToObject(rj, "perturbation", PERTURB_NAME);
        cJSON_AddNumberToObject(rj, "revision", PERTURB_REVISION); // absent: revision 1 (zeros moved to subnormals)
        cJSON_AddStringToObject(rj, "scope", "every resident binary32 weight (q, k, v, o, gate, up, down, lm_head, norms, "
                                             "biases) one ulp up or down; not the input embedding rows");
    }
    cJSON_AddNumberToObject(run, "batch_tokens", r->max_tokens);
    cJSON_AddNumberToObject(run, "window", r->cfg.max_seq);
    if (o->nonfinite == RUN_NONFINITE_COUNT) cJSON_AddStringToObject(run, "nonfinite", "count");
}

// The task's data by content (identity by content, not by spelling): every item's id,
// subject, prompt, choices and gold (each NUL-terminated, so fields cannot run into each other),
// or a perplexity task's text. The configuration key holds this, not the files' paths.
static void items_sha256(const struct task_set *s, char hex[65]) {
    struct sha256 h;
    sha256_init(&h);
    if (s->is_ppl) sha256_update(&h, s->text ? s->text : "", s->text_len);
    for (int i = 0; !s->is_ppl && i < s->n_items; i++) {
        const struct task_item *it = &s->items[i];
        char g[32];
        int k = snprintf(g, sizeof g, "%d/%d", it->gold, it->n_choices);
        sha256_update(&h, it->id, strlen(it->id) + 1);
        sha256_update(&h, it->subject ? it->subject : "", it->subject ? strlen(it->subject) + 1 : 1);
        sha256_update(&h, it->context, strlen(it->context) + 1);
        for (int c = 0; c < it->n_choices; c++) sha256_update(&h, it->choices[c], strlen(it->choices[c]) + 1);
        sha256_update(&h, g, (size_t)k + 1);
    }
    uint8_t d[32];
    sha256_final(&h, d);
    sha256_to_hex(d, hex);
}

static cJSON *task_json(const struct run *r, int t) {
    const struct task_set *s = &r->sets[t];
    const struct eval_plan *p = &r->plans[t];
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "name", s->name);
    cJSON_AddNumberToObject(x, "n_items", s->is_ppl ? p->n_items : s->n_items);
    if (r->o.shard_n > 1) {
        cJSON *ir = cJSON_AddArrayToObject(x, "item_range");
        cJSON_AddItemToArray(ir, cJSON_CreateNumber(r->item_lo[t]));
        cJSON_AddItemToArray(ir, cJSON_CreateNumber(r->item_lo[t] + p->n_items));
    }
    cJSON *ml = cJSON_AddArrayToObject(x, "metrics");
    if (s->is_ppl) {
        cJSON_AddItemToArray(ml, cJSON_CreateString("ppl"));
        cJSON_AddItemToArray(ml, cJSON_CreateString("bits_per_byte"));
        cJSON_AddNumberToObject(x, "ppl_ctx", r->ppl_ctx);
        cJSON_AddStringToObject(x, "ppl_score", r->ppl_half ? "second-half" : "all");
        cJSON_AddNumberToObject(x, "text_bytes", (double)s->text_len);
    }
    if (s->metrics & TASK_METRIC_ACC) cJSON_AddItemToArray(ml, cJSON_CreateString("acc"));
    if (s->metrics & TASK_METRIC_ACC_NORM) cJSON_AddItemToArray(ml, cJSON_CreateString("acc_norm"));
    cJSON_AddStringToObject(x, "template_version", s->template_version);
    cJSON_AddStringToObject(x, "source", s->source);
    char hex[65];
    items_sha256(s, hex);
    cJSON_AddStringToObject(x, "items_sha256", hex);
    cJSON_AddNumberToObject(x, "n_bad_rows", s->n_bad_rows);
    if (s->n_odd_choices) { // only then: run.json of every other run stays as it was
        cJSON_AddNumberToObject(x, "n_odd_choices", s->n_odd_choices);
        cJSON_AddStringToObject(x, "odd_choices_first", s->odd_first);
    }
    cJSON_AddNumberToObject(x, "seed", (double)s->seed);
    cJSON_AddNumberToObject(x, "n_requests", p->n_req);
    cJSON_AddNumberToObject(x, "n_sequences", p->n_seq);
    cJSON_AddNumberToObject(x, "n_tokens", (double)p->n_tokens);
    cJSON_AddNumberToObject(x, "n_truncated", p->n_truncated);
    cJSON_AddNumberToObject(x, "tokenize_s", r->tok_s[t]);
    return x;
}

// The channel form's arithmetic revision a run.json records (1 when a channel-form run predates
// the field; 0 for the token form)
static int qmean_revision(const cJSON *run) {
    if (strcmp(results_run_qmean(run), "channel")) return 0;
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "attention"), "qmean_revision");
    return cJSON_IsNumber(v) ? (int)v->valuedouble : 1;
}

// Why a run.json of another identity cannot be resumed: the Q-Mean form and revision first (the
// differences a user is most likely to make on purpose), else every input that differs.
static int resume_refusal(const struct run *r, const cJSON *old, struct err *e) {
    const char *was = results_run_qmean(old), *now = results_run_qmean(r->json);
    const int old_rev = qmean_revision(old), new_rev = qmean_revision(r->json);
    if (!strcmp(was, now) && old_rev != new_rev)
        return err_set(e, ERR_MISMATCH, "--resume: %s was made with revision %d of the channel form of Q-Mean, this binary "
                       "computes revision %d (spec/attention.md section 4); results of the two are not mixed: re-run "
                       "into another --out", r->json_path, old_rev, new_rev);
    if (strcmp(was, now))
        return err_set(e, ERR_MISMATCH, "--resume: %s was made with --qmean %s, this run asks for --qmean %s; a run "
                       "directory holds one Q-Mean form: use another --out", r->json_path, was, now);
    int schema = 1;
    struct err ig = {0};
    run_schema(old, &schema, r->json_path, &ig);
    char d[1600];
    if (run_json_diff(d, sizeof d, old, r->json, 1, NULL) < 0) return err_set(e, ERR_NOMEM, "--resume: out of memory");
    if (schema < RUN_SCHEMA)
        return err_set(e, ERR_MISMATCH, "--resume: %s has run.json schema %d (written by an older binary, whose model "
                       "fingerprint, version 1, read only a few KiB per tensor and so cannot prove the weights are the "
                       "same); this binary writes schema %d: finish that run with the binary that started it, or re-run "
                       "into another --out (that run vs this one: %s)", r->json_path, schema, RUN_SCHEMA, d);
    return err_set(e, ERR_MISMATCH, "--resume: %s was made from other inputs than this run asks for (that run vs this "
                   "one): %s; use another --out", r->json_path, d);
}

// --resume: the old run must have the same identity (run_identity.h); if it is complete and
// nothing is left to score, the measurements of the run that did the work stay (r->carry).
static int check_resume(struct run *r, cJSON *old, const char *key, struct err *e) {
    int schema, rc = run_schema(old, &schema, r->json_path, e);
    if (rc) { cJSON_Delete(old); return rc; }
    // recomputed from the old run.json, not its stored resume_key (an edited key proves nothing)
    char old_key[65];
    results_config_key(old_key, old, 1);
    if (strcmp(old_key, key) || schema != RUN_SCHEMA) {
        rc = resume_refusal(r, old, e);
        cJSON_Delete(old);
        return rc;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItem(old, "complete"))) {
        static const char *const keep_fields[] = {"created", "timings", "hook_coverage", "cost_counts", "prefix_cache", "note"};
        r->carry = cJSON_CreateObject();
        for (size_t k = 0; r->carry && k < sizeof keep_fields / sizeof keep_fields[0]; k++) {
            const cJSON *x = cJSON_GetObjectItem(old, keep_fields[k]);
            if (x) cJSON_AddItemToObject(r->carry, keep_fields[k], cJSON_Duplicate(x, 1));
        }
    }
    cJSON_Delete(old);
    return 0;
}

int run_record_open(struct run *r, cJSON *old, struct err *e) {
    cJSON *run = r->json = cJSON_CreateObject();
    cJSON_AddNumberToObject(run, "schema", RUN_SCHEMA);
    add_host(run, r);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(run, "numerics"), "version", RUN_NUMERICS_VERSION);
    int rc = add_model(run, r, e);
    if (rc) return rc;
    add_attention(run, r);
    cJSON *tasks = cJSON_AddArrayToObject(run, "tasks");
    for (int t = 0; t < r->o.n_tasks; t++) cJSON_AddItemToArray(tasks, task_json(r, t));
    char key[65];
    results_config_key(key, run, 1);
    cJSON_AddStringToObject(run, "resume_key", key);
    if (old) {
        int rc = check_resume(r, old, key, e);
        if (rc) return rc;
    }
    cJSON_AddBoolToObject(run, "complete", 0);
    return 0;
}

// What the prefix cache did per mode: positions of the scored sequences (an uncached run's
// work), positions computed and stored, forward calls, logits rows scored (eval/cached.h).
static void add_prefix_cache(cJSON *run, const struct run *r) {
    const struct run_opts *o = &r->o;
    cJSON *pc = cJSON_AddObjectToObject(run, "prefix_cache");
    cJSON_AddBoolToObject(pc, "enabled", r->kv != NULL);
    cJSON_AddNumberToObject(pc, "cache_positions", r->kv ? model_kv_rows(r->kv) : 0);
    cJSON_AddNumberToObject(pc, "cache_bytes", r->kv ? (double)model_kv_bytes(r->kv) : 0);
    cJSON *pm = cJSON_AddObjectToObject(pc, "modes");
    for (int m = 0; m < o->n_modes; m++) {
        const struct run_mode_acc *a = &r->acc[m];
        cJSON *x = cJSON_AddObjectToObject(pm, o->modes[m]);
        struct attn_opts ao = o->attn;
        cJSON_AddNumberToObject(x, "align", attn_prefix_align(attn_mode_find(o->modes[m]), &ao));
        cJSON_AddNumberToObject(x, "tokens_input", (double)a->tokens_input);
        const int reuse = r->kv && run_mode_reuses(r, m);
        cJSON_AddBoolToObject(x, "reuse", reuse);
        cJSON_AddNumberToObject(x, "tokens_computed", (double)(reuse ? a->cached.tokens : a->tokens_input));
        cJSON_AddNumberToObject(x, "tokens_stored", (double)a->cached.stored);
        cJSON_AddNumberToObject(x, "rows_scored", (double)a->rows_scored);
        cJSON_AddNumberToObject(x, "forward_calls", (double)a->cached.calls);
        if (a->gen_items) { // greedy decoding: the first token of each context is its prefill
            cJSON *g = cJSON_AddObjectToObject(x, "decoding");
            cJSON_AddNumberToObject(g, "contexts", (double)a->gen_items);
            cJSON_AddNumberToObject(g, "prefill_s", a->prefill_s);
            cJSON_AddNumberToObject(g, "tokens_after_first", (double)(a->gen_tokens - a->gen_items));
            cJSON_AddNumberToObject(g, "decode_s", a->decode_s);
            cJSON_AddNumberToObject(g, "decode_tokens_per_s", a->decode_s > 0 ? (a->gen_tokens - a->gen_items) / a->decode_s : 0);
        }
    }
}

void run_record_finish(struct run *r) {
    const struct run_opts *o = &r->o;
    const int n_layers = r->cfg.n_layers;
    cJSON *run = r->json;
    cJSON *tm = cJSON_AddObjectToObject(run, "timings");
    cJSON_AddNumberToObject(tm, "load_s", r->t_load);
    cJSON_AddNumberToObject(tm, "total_s", time_now() - r->t_start);
    if (r->acc0_saved) { // replicas ran: the figures below are replica 0's, the replicas' seconds beside them
        cJSON *rf = cJSON_AddObjectToObject(tm, "replicas_forward_s");
        for (int m = 0; m < o->n_modes; m++) cJSON_AddNumberToObject(rf, o->modes[m], r->acc[m].forward_s - r->acc0[m].forward_s);
        memcpy(r->acc, r->acc0, sizeof r->acc);
    }
    cJSON *fj = cJSON_AddObjectToObject(tm, "forward_s");
    for (int m = 0; m < o->n_modes; m++) cJSON_AddNumberToObject(fj, o->modes[m], r->acc[m].forward_s);
    cJSON *hc = cJSON_AddObjectToObject(run, "hook_coverage");
    for (int m = 0; m < o->n_modes; m++) {
        cJSON *x = cJSON_AddObjectToObject(hc, o->modes[m]);
        cJSON_AddNumberToObject(x, "calls", (double)r->acc[m].calls);
        cJSON_AddNumberToObject(x, "tokens", (double)r->acc[m].tokens);
        cJSON *pl = cJSON_AddArrayToObject(x, "calls_per_layer");
        for (int l = 0; l < n_layers && l < ATTN_MAX_LAYERS; l++)
            cJSON_AddItemToArray(pl, cJSON_CreateNumber((double)r->acc[m].calls_per_layer[l]));
    }
    cJSON *cc = cJSON_AddObjectToObject(run, "cost_counts");
    for (int m = 0; m < o->n_modes; m++) cJSON_AddItemToObject(cc, o->modes[m], cost_counts_json(&r->acc[m].cost));
    add_prefix_cache(run, r);
    if (r->carry && r->processed == 0) {
        // re-running --resume on a finished run scored nothing: keep what the finished run measured
        // (before, its timings, hook coverage and cost counts were replaced by zeros)
        const cJSON *x;
        cJSON_ArrayForEach(x, r->carry) {
            if (cJSON_GetObjectItem(run, x->string)) cJSON_ReplaceItemInObject(run, x->string, cJSON_Duplicate(x, 1));
            else cJSON_AddItemToObject(run, x->string, cJSON_Duplicate(x, 1));
        }
    } else if (r->continued) { // --resume that found no run.json started a new run: nothing to note
        cJSON_AddStringToObject(run, "note", "resumed: timings, hook coverage and cost counts cover the last invocation only");
    }
}
