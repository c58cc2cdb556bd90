// report.c: report.md / CSV / SVG rendering of a run directory (see
// report.h). Every table is built once as a grid of cells and written both as Markdown and
// as CSV, so the two never disagree.
#include "results/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/json_util.h"
#include "results/degenerate.h"
#include "results/grid.h"
#include "results/metrics.h"
#include "results/plot.h"
#include "results/report_noise.h"
#include "results/results.h"
#include "results/run_rec.h"
#include "results/stamp.h"

// ---- JSON access with defaults (summary.json is our own output, validated on read) ----
static const cJSON *jget(const cJSON *o, const char *k) { return o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL; }
static double jnum(const cJSON *o, const char *k) {
    const cJSON *x = jget(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}
static const char *jstr(const cJSON *o, const char *k, const char *def) {
    const cJSON *x = jget(o, k);
    return cJSON_IsString(x) ? x->valuestring : def;
}

static void fmt_pct(char *b, size_t n, double v) {
    if (isfinite(v)) snprintf(b, n, "%.2f", 100 * v);
    else snprintf(b, n, "-");
}

static int has_metric(const cJSON *task, const char *m) {
    const cJSON *x, *a = jget(task, "metrics");
    cJSON_ArrayForEach(x, a) if (cJSON_IsString(x) && !strcmp(x->valuestring, m)) return 1;
    return 0;
}

// ---- per-run tables ----
// Each table builder adds its grids at g[*n_g] on and returns 0, or nonzero when a grid
// call ran out of memory (the OR of their codes); run_tables turns that into the error.
// Modes are named as run.json's display names ("hifa4 (channel)", "direct [qdq-skip p]"; the
// mode name for run.json files written before them), so rows B-E say their Q-Mean form.

// Column/row name of mode k of summary.json's "modes".
static const char *mode_col(const struct run_rec *run, const cJSON *modes, int k) {
    return run_rec_display(run, cJSON_GetArrayItem(modes, k)->valuestring);
}

// Accuracy per task and mode; perplexity tasks are only counted, in *n_ppl.
static int acc_table(struct grid *g, int *n_g, const struct run_rec *run, const cJSON *modes, const cJSON *tasks, int *n_ppl) {
    const cJSON *t, *m;
    int nm = cJSON_GetArraySize(modes), rc = 0;
    char a[64], b[64], c[64];
    struct grid *acc = &g[(*n_g)++];
    grid_init(acc, "accuracy", "Accuracy (%, +- stderr; acc_norm where the task reports it)", 1 + nm);
    rc |= grid_row(acc);
    rc |= grid_set(acc, 0, "task (n)");
    for (int k = 0; k < nm; k++) rc |= grid_set(acc, 1 + k, "%s", mode_col(run, modes, k));
    *n_ppl = 0;
    cJSON_ArrayForEach(t, tasks) {
        if (has_metric(t, "ppl")) { (*n_ppl)++; continue; }
        rc |= grid_row(acc);
        rc |= grid_set(acc, 0, "%s (%d)", t->string, (int)jnum(t, "n"));
        int k = 0;
        cJSON_ArrayForEach(m, modes) {
            const cJSON *s = jget(jget(t, "modes"), m->valuestring);
            fmt_pct(a, sizeof a, jnum(s, "acc"));
            fmt_pct(b, sizeof b, jnum(s, "acc_stderr"));
            if (has_metric(t, "acc_norm")) {
                fmt_pct(c, sizeof c, jnum(s, "acc_norm"));
                rc |= grid_set(acc, 1 + k, "%s +- %s (norm %s)", a, b, c);
            } else {
                rc |= grid_set(acc, 1 + k, "%s +- %s", a, b);
            }
            k++;
        }
    }
    return rc;
}

static int ppl_table(struct grid *g, int *n_g, const struct run_rec *run, const cJSON *modes, const cJSON *tasks) {
    const cJSON *t, *m;
    int nm = cJSON_GetArraySize(modes), rc = 0;
    struct grid *pp = &g[(*n_g)++];
    grid_init(pp, "perplexity", "Perplexity (token) and bits per byte", 1 + nm);
    rc |= grid_row(pp);
    rc |= grid_set(pp, 0, "task (windows)");
    for (int k = 0; k < nm; k++) rc |= grid_set(pp, 1 + k, "%s", mode_col(run, modes, k));
    cJSON_ArrayForEach(t, tasks) {
        if (!has_metric(t, "ppl")) continue;
        rc |= grid_row(pp);
        rc |= grid_set(pp, 0, "%s (%d)", t->string, (int)jnum(t, "n"));
        int k = 0;
        cJSON_ArrayForEach(m, modes) {
            const cJSON *s = jget(jget(t, "modes"), m->valuestring);
            rc |= grid_set(pp, 1 + k++, "%.4f (%.4f bpb)", jnum(s, "ppl"), jnum(s, "bits_per_byte"));
        }
    }
    return rc;
}

// Task t's rows of the flips, hurts/helps and token tables (perplexity tasks: token only)
// and of the margins table (not for perplexity tasks).
static int vs_ref_rows(struct grid *fl, struct grid *hh, struct grid *tk, struct grid *mg, const cJSON *t,
                       const cJSON *modes) {
    int nm = cJSON_GetArraySize(modes), rc = 0;
    char a[64], b[64], c[64];
    struct grid *gs[3] = {fl, hh, tk};
    int ppl = has_metric(t, "ppl");
    for (int q = 0; q < 3; q++) {
        if (ppl && q < 2) continue;
        rc |= grid_row(gs[q]);
        rc |= grid_set(gs[q], 0, "%s", t->string);
    }
    for (int k = 1; k < nm; k++) {
        const char *mn = cJSON_GetArrayItem(modes, k)->valuestring;
        const cJSON *v = jget(jget(t, "vs_reference"), mn), *tok = jget(v, "token");
        if (ppl) {
            fmt_pct(a, sizeof a, jnum(tok, "same_top1"));
            rc |= grid_set(tk, k, "%.3g / %.3g (%s)", jnum(tok, "kl_mean"), jnum(tok, "kl_p99"), a);
            continue;
        }
        fmt_pct(a, sizeof a, jnum(v, "pfr"));
        fmt_pct(b, sizeof b, jnum(v, "pfr_lo"));
        fmt_pct(c, sizeof c, jnum(v, "pfr_hi"));
        rc |= grid_set(fl, k, "%s [%s, %s] (%d/%d)", a, b, c, (int)jnum(v, "flips"), (int)jnum(v, "n"));
        fmt_pct(a, sizeof a, jnum(v, "d_acc"));
        rc |= grid_set(hh, k, "%d / %d (%s, p=%.3g)", (int)jnum(v, "hurts"), (int)jnum(v, "helps"), a, jnum(v, "mcnemar_p"));
        fmt_pct(a, sizeof a, jnum(tok, "same_top1"));
        rc |= grid_set(tk, k, "%.3g / %.3g (%s)", jnum(tok, "kl_mean"), jnum(tok, "kl_p99"), a);
    }
    if (ppl) return rc;
    const cJSON *mj = jget(t, "margins_all_correct");
    rc |= grid_row(mg);
    rc |= grid_set(mg, 0, "%s", t->string);
    rc |= grid_set(mg, 1, "%d", (int)jnum(mj, "n"));
    for (int k = 0; k < nm; k++) {
        const cJSON *x = jget(mj, cJSON_GetArrayItem(modes, k)->valuestring);
        if (jnum(mj, "n") < REPORT_MARGIN_MIN_ITEMS) rc |= grid_set(mg, 2 + k, "-");
        else rc |= grid_set(mg, 2 + k, "%.3f [%.3f, %.3f]", jnum(x, "p50"), jnum(x, "p10"), jnum(x, "p90"));
    }
    return rc;
}

// flips (paper Table 3), hurts/helps (Table 6), token level, margins
static int vs_ref_tables(struct grid *g, int *n_g, const struct run_rec *run, const cJSON *modes, const cJSON *tasks, const char *ref) {
    const cJSON *t;
    int nm = cJSON_GetArraySize(modes), rc = 0;
    struct grid *fl = &g[(*n_g)++], *hh = &g[(*n_g)++], *tk = &g[(*n_g)++], *mg = &g[(*n_g)++];
    char title[512];
    snprintf(title, sizeof title, "Flip rate vs %s (PFR %%, Wilson 95%% interval; flips/N)", ref);
    grid_init(fl, "flips", title, nm);
    snprintf(title, sizeof title, "Quant Hurts / Helps vs %s (dAcc %%, McNemar exact p)", ref);
    grid_init(hh, "hurts_helps", title, nm);
    snprintf(title, sizeof title, "Token level vs %s: KL(ref||mode) mean / p99 and same-top-1 rate (%%), over every scored "
             "position (each position whose next token belongs to an option, for every option of every item; every "
             "scored token of a perplexity task)", ref);
    grid_init(tk, "token_kl", title, nm);
    snprintf(title, sizeof title, "Decision margin (top-1 minus top-2 option loglik, nats) on the n items every mode answers "
             "correctly: median [p10, p90]; left out below n = %d", REPORT_MARGIN_MIN_ITEMS);
    grid_init(mg, "margins", title, 2 + nm);
    struct grid *gs[3] = {fl, hh, tk};
    for (int q = 0; q < 3; q++) {
        rc |= grid_row(gs[q]);
        rc |= grid_set(gs[q], 0, "task");
        for (int k = 1; k < nm; k++) rc |= grid_set(gs[q], k, "%s", mode_col(run, modes, k));
    }
    rc |= grid_row(mg);
    rc |= grid_set(mg, 0, "task");
    rc |= grid_set(mg, 1, "n");
    for (int k = 0; k < nm; k++) rc |= grid_set(mg, 2 + k, "%s", mode_col(run, modes, k));
    cJSON_ArrayForEach(t, tasks) rc |= vs_ref_rows(fl, hh, tk, mg, t, modes);
    return rc;
}

// per-subject accuracy (MMLU subjects, niah (T, depth) cells = paper Table 4 retrieval);
// no grid when no task has 2..200 subjects
static int subject_table(struct grid *g, int *n_g, const struct run_rec *run, const cJSON *modes, const cJSON *tasks) {
    const cJSON *t;
    int nm = cJSON_GetArraySize(modes), rc = 0;
    char a[64];
    struct grid *sb = &g[(*n_g)++];
    grid_init(sb, "subjects", "Accuracy per subject / cell (%)", 1 + nm);
    rc |= grid_row(sb);
    rc |= grid_set(sb, 0, "task/subject (n)");
    for (int k = 0; k < nm; k++) rc |= grid_set(sb, 1 + k, "%s", mode_col(run, modes, k));
    cJSON_ArrayForEach(t, tasks) {
        const cJSON *subj = jget(jget(jget(t, "modes"), cJSON_GetArrayItem(modes, 0)->valuestring), "subjects"), *s;
        if (cJSON_GetArraySize(subj) < 2 || cJSON_GetArraySize(subj) > 200) continue;
        cJSON_ArrayForEach(s, subj) {
            rc |= grid_row(sb);
            rc |= grid_set(sb, 0, "%s/%s (%d)", t->string, s->string, (int)jnum(s, "n"));
            for (int k = 0; k < nm; k++) {
                const cJSON *x = jget(jget(jget(jget(t, "modes"), cJSON_GetArrayItem(modes, k)->valuestring), "subjects"), s->string);
                fmt_pct(a, sizeof a, jnum(x, "acc"));
                rc |= grid_set(sb, 1 + k, "%s", a);
            }
        }
    }
    if (sb->n_rows < 2) { grid_free(sb); (*n_g)--; }
    return rc;
}

// across tasks (paper Table 5)
static int across_table(struct grid *g, int *n_g, const struct run_rec *run, const cJSON *sum, const cJSON *modes, const char *ref) {
    int nm = cJSON_GetArraySize(modes), rc = 0;
    char a[64], title[256];
    struct grid *dw = &g[(*n_g)++];
    snprintf(title, sizeof title, "Accuracy gap (mode minus %s) across tasks, percentage points: D_avg plain mean, D_w weighted by items", ref);
    grid_init(dw, "d_avg_w", title, 5);
    rc |= grid_row(dw);
    rc |= grid_set(dw, 0, "mode"); rc |= grid_set(dw, 1, "D_avg"); rc |= grid_set(dw, 2, "D_w");
    rc |= grid_set(dw, 3, "D_avg (acc_norm)"); rc |= grid_set(dw, 4, "D_w (acc_norm)");
    for (int k = 1; k < nm; k++) {
        const char *mn = cJSON_GetArrayItem(modes, k)->valuestring;
        const cJSON *x = jget(jget(sum, "across_tasks"), mn);
        rc |= grid_row(dw);
        rc |= grid_set(dw, 0, "%s", run_rec_display(run, mn));
        fmt_pct(a, sizeof a, jnum(x, "D_avg")); rc |= grid_set(dw, 1, "%s", a);
        fmt_pct(a, sizeof a, jnum(x, "D_w")); rc |= grid_set(dw, 2, "%s", a);
        fmt_pct(a, sizeof a, jnum(x, "D_avg_norm")); rc |= grid_set(dw, 3, "%s", a);
        fmt_pct(a, sizeof a, jnum(x, "D_w_norm")); rc |= grid_set(dw, 4, "%s", a);
    }
    return rc;
}

// The tables of one run's summary.json, in report order: accuracy, perplexity (if any task
// has it), then with a second mode flips, hurts/helps, token level, margins, subjects (if
// any) and the across-task gaps.
static int run_tables(struct grid *g, int *n_g, const cJSON *sum, const struct run_rec *run, struct err *e) {
    const cJSON *modes = jget(sum, "modes"), *tasks = jget(sum, "tasks");
    const char *ref = jstr(sum, "reference", "?");
    int nm = cJSON_GetArraySize(modes), rc = 0, n_ppl;
    *n_g = 0;
    rc |= acc_table(g, n_g, run, modes, tasks, &n_ppl);
    if (n_ppl) rc |= ppl_table(g, n_g, run, modes, tasks);
    if (nm >= 2) {
        rc |= vs_ref_tables(g, n_g, run, modes, tasks, ref);
        rc |= subject_table(g, n_g, run, modes, tasks);
        rc |= across_table(g, n_g, run, sum, modes, ref);
    }
    if (rc) return err_set(e, ERR_NOMEM, "report: out of memory");
    return 0;
}

// Margin plot of one task: one empirical CDF per mode over the items all modes answer correctly.
static int margin_plot(const char *dir, const struct run_rec *run, const char *task, const cJSON *modes, struct err *e) {
    int nm = cJSON_GetArraySize(modes), rc = 0, n = 0;
    struct results_sample **s = calloc((size_t)nm, sizeof *s);
    double **v = calloc((size_t)nm, sizeof *v);
    struct plot_series *ps = calloc((size_t)nm, sizeof *ps);
    if (!s || !v || !ps) { rc = err_set(e, ERR_NOMEM, "report: out of memory"); goto done; }
    for (int m = 0; m < nm && !rc; m++) {
        char path[4096];
        int cnt;
        rc = results_samples_path(path, sizeof path, dir, task, cJSON_GetArrayItem(modes, m)->valuestring, e);
        if (!rc) rc = results_samples_read_run(dir, run, task, cJSON_GetArrayItem(modes, m)->valuestring, &s[m], &cnt, e);
        if (!rc && m == 0) n = cnt;
        if (!rc && cnt != n) {
            // freed here with its own count: the clean-up below frees n per mode
            for (int i = 0; i < cnt; i++) results_sample_free(&s[m][i]);
            free(s[m]);
            s[m] = NULL;
            rc = err_set(e, ERR_MISMATCH, "%s: %d items, the reference has %d", path, cnt, n);
        }
    }
    if (rc) goto done;
    for (int m = 0; m < nm; m++) {
        v[m] = malloc(sizeof **v * (size_t)(n ? n : 1));
        if (!v[m]) { rc = err_set(e, ERR_NOMEM, "report: out of memory"); goto done; }
        int q = 0;
        for (int i = 0; i < n; i++) {
            int ok = 1;
            for (int mm = 0; mm < nm && ok; mm++) ok = s[mm][i].pred == s[mm][i].gold && !s[mm][i].nonfinite;
            if (ok) v[m][q++] = s[m][i].margin;
        }
        ps[m] = (struct plot_series){run_rec_display(run, cJSON_GetArrayItem(modes, m)->valuestring), v[m], q};
    }
    if (ps[0].n < REPORT_MARGIN_MIN_ITEMS) goto done; // too few items: no plot (the report says so)
    // x range [0, 99th percentile of the pooled margins] so a few huge margins do not squash
    // the histogram (larger ones land in the last bin)
    double hi = 0;
    {
        int tot = 0;
        for (int m = 0; m < nm; m++) tot += ps[m].n;
        double *pool = malloc(sizeof *pool * (size_t)(tot ? tot : 1));
        if (!pool) { rc = err_set(e, ERR_NOMEM, "report: out of memory"); goto done; }
        int q = 0;
        for (int m = 0; m < nm; m++)
            for (int i = 0; i < ps[m].n; i++) if (isfinite(ps[m].v[i])) pool[q++] = ps[m].v[i];
        hi = q ? metrics_percentile(pool, q, 0.99) : 0;
        free(pool);
    }
    char *svg, title[256], path[4096], file[300];
    snprintf(title, sizeof title, "%s: decision margin on the %d items every mode answers correctly", task, ps[0].n);
    // one CDF per mode: seven modes' histograms hid each other; a CDF shows every mode's whole
    // distribution (median at 0.5) and where two modes differ
    rc = plot_ecdf_svg(&svg, title, "top-1 minus top-2 option log-likelihood (nats; axis ends at the pooled p99)", ps, nm,
                       (struct plot_range){0, hi > 0 ? hi : 0}, e);
    if (rc) goto done;
    snprintf(file, sizeof file, "plots/margins-%s.svg", task);
    rc = path_join(path, sizeof path, dir, file, e);
    if (!rc) rc = file_write_atomic(path, svg, strlen(svg), e);
    free(svg);
done:
    for (int m = 0; s && m < nm; m++) {
        for (int i = 0; s[m] && i < n; i++) results_sample_free(&s[m][i]);
        if (s) free(s[m]);
        if (v) free(v[m]);
    }
    free(s); free(v); free(ps);
    return rc;
}

// Items left out because a log-likelihood was not finite (run --nonfinite count): a table
// per task, only when there are any. Never silent: these items are in no other number.
static int nonfinite_md(struct results_buf *o, const cJSON *sum) {
    int rc = 0, any = 0;
    const cJSON *t, *m;
    cJSON_ArrayForEach(t, jget(sum, "tasks")) {
        const cJSON *nf = jget(t, "nonfinite");
        if (!nf) continue;
        if (!any++) {
            rc |= results_buf_printf(o, "### Non-finite items (left out of every statistic below)\n\nA log-likelihood "
                                     "was NaN or infinite (`--nonfinite count`); such an item is excluded in every mode.\n\n"
                                     "| task | excluded | non-finite per mode |\n|---|---:|---|\n");
        }
        rc |= results_buf_printf(o, "| %s | %d | ", t->string, (int)jnum(nf, "excluded"));
        int k = 0;
        cJSON_ArrayForEach(m, jget(nf, "modes")) rc |= results_buf_printf(o, "%s%s %d", k++ ? ", " : "", m->string, (int)m->valuedouble);
        rc |= results_buf_put(o, " |\n", 3);
    }
    if (any) rc |= results_buf_put(o, "\n", 1);
    return rc;
}


// Greedy decoding per mode (run.json prefix_cache.modes.*.decoding; niah's generation form):
// the contexts' prefill up to each first token, then the decoding speed of the tokens after it.
static int decoding_md(struct results_buf *o, const cJSON *pm) {
    int rc = 0, any = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, pm) {
        const cJSON *g = jget(x, "decoding");
        if (!g) continue;
        if (!any++)
            rc |= results_buf_printf(o, "\nGreedy decoding (the first token of each context is its prefill; decoding = the "
                                        "tokens after it, each step recomputing the rows after the last aligned cached "
                                        "position):\n\n| mode | contexts | prefill s | decoded tokens | decode s | "
                                        "decode tokens/s |\n|---|---:|---:|---:|---:|---:|\n");
        rc |= results_buf_printf(o, "| %s | %.0f | %.2f | %.0f | %.2f | %.2f |\n", x->string, jnum(g, "contexts"),
                                 jnum(g, "prefill_s"), jnum(g, "tokens_after_first"), jnum(g, "decode_s"),
                                 jnum(g, "decode_tokens_per_s"));
    }
    return rc;
}

// "- storage per value: ..." from run.json storage (bits per stored Q/K/V/P value of each mode)
static int storage_line(struct results_buf *o, const struct run_rec *run) {
    int rc = 0;
    if (!run->storage) return 0;
    rc |= results_buf_printf(o, "\n- storage per value: ");
    for (int j = 0; j < run->n_storage; j++) {
        const struct run_rec_storage *m = &run->storage[j];
        rc |= results_buf_printf(o, "%s`%s` %s %.4g bits%s", j ? ", " : "", run_rec_display(run, m->mode),
                                 m->format ? m->format : "?", m->bits_per_value,
                                 m->per_tensor_scale ? " + one binary32 scale per head and operand" : "");
    }
    return rc;
}

// Tasks with items whose options are empty or repeated: scored as lm-eval does, but named.
static int odd_choices_md(struct results_buf *o, const struct run_rec *run) {
    int rc = 0;
    for (int k = 0; k < run->n_tasks; k++) {
        const struct run_rec_task *t = &run->tasks[k];
        if (t->n_odd_choices > 0)
            rc |= results_buf_printf(o, "Warning: task %s has %d item%s with an empty or repeated option (first: %s); they "
                                     "are scored as lm-eval scores them (every option; equal scores go to the first).\n\n",
                                     t->name, t->n_odd_choices, t->n_odd_choices == 1 ? "" : "s",
                                     t->odd_choices_first ? t->odd_choices_first : "?");
    }
    return rc;
}

// The margins section: each task's plot, or why it has none (too few items).
static int margins_md(struct results_buf *o, const cJSON *sum) {
    const cJSON *t;
    int rc = results_buf_printf(o, "### Decision margins (paper Fig. 9 style)\n\nOver the items every mode answers "
                             "correctly; a task with fewer than %d such items has no plot.\n\n", REPORT_MARGIN_MIN_ITEMS);
    cJSON_ArrayForEach(t, jget(sum, "tasks")) {
        if (has_metric(t, "ppl")) continue;
        const int nm_items = (int)jnum(jget(t, "margins_all_correct"), "n");
        if (nm_items < REPORT_MARGIN_MIN_ITEMS)
            rc |= results_buf_printf(o, "- %s: %d items, too few for a margin distribution\n", t->string, nm_items);
        else
            rc |= results_buf_printf(o, "- %s (%d items):\n\n![%s](plots/margins-%s.svg)\n\n", t->string, nm_items, t->string,
                                     t->string);
    }
    return rc;
}

static const char *or_q(const char *s) { return s ? s : "?"; }

// The run's header lines: model, weights' origin, tokenizer, modes (summary.json's, display names), attention, storage.
static int header_md(struct results_buf *o, const struct run_rec *run, const cJSON *modes) {
    int rc = results_buf_printf(o, "# hifa4-eval run: %s\n\n", or_q(run->model.name));
    rc |= results_buf_printf(o, "- model: `%s` (sha256 %.16s...)\n", or_q(run->model.path), or_q(run->model.hash));
    if (run->model.gguf_file) // import-gguf's provenance
        rc |= results_buf_printf(o, "- weights dequantized from `%s` (%s: %s; sha256 %.16s...)\n", run->model.gguf_file,
                                 or_q(run->model.gguf_file_type), or_q(run->model.gguf_tensor_types), or_q(run->model.gguf_sha256));
    rc |= results_buf_printf(o, "- tokenizer sha256 %.16s..., BOS policy `%s`\n", or_q(run->tokenizer.hash),
                             or_q(run->tokenizer.bos_policy));
    rc |= results_buf_printf(o, "- modes: ");
    const cJSON *m;
    int k = 0;
    cJSON_ArrayForEach(m, modes) {
        rc |= results_buf_printf(o, "%s`%s`%s", k ? ", " : "", run_rec_display(run, m->valuestring), k == 0 ? " (reference)" : "");
        k++;
    }
    const char *qm = run->attention.qmean;
    if (qm) // one Q-Mean form and one qdq skip per run directory
        rc |= results_buf_printf(o, "\n- attention: tile %d, V groups %s, qformat %s, Q-Mean form **%s** (%s), "
                                 "qdq skipped: %s", run->attention.tile, or_q(run->attention.v_group), or_q(run->attention.qformat),
                                 qm, strcmp(qm, "channel") ? "per-row scalar mean, paper Alg. 1" :
                                 "per-channel mean over each query tile, SageAttention2", or_q(run->attention.qdq_skip));
    rc |= storage_line(o, run);
    rc |= results_buf_printf(o, "\n- created %s, git %s, limit %d, seed %.0f\n\n", or_q(run->created), or_q(run->git_revision),
                             run->limit, run->seed);
    return rc;
}

// Data provenance per task (run.json): source, template, rows skipped, truncation.
static int tasks_md(struct results_buf *o, const struct run_rec *run) {
    int rc = results_buf_printf(o, "### Tasks\n\n| task | items | template | rows skipped | truncated requests | source |\n"
                                   "|---|---:|---|---:|---:|---|\n");
    for (int k = 0; k < run->n_tasks; k++) {
        const struct run_rec_task *t = &run->tasks[k];
        rc |= results_buf_printf(o, "| %s | %d | %s | %d | %d | %s |\n", t->name, t->n_items, or_q(t->template_version),
                                 t->n_bad_rows, t->n_truncated, or_q(t->source));
    }
    return rc | results_buf_put(o, "\n", 1);
}

int report_render(const char *dir, char **headline, struct err *e) {
    if (headline) *headline = NULL;
    char path[4096], sub[4096];
    struct run_rec rec, *run = &rec;
    cJSON *sum = NULL;
    struct grid g[10];
    int n_g = 0;
    struct results_buf o = {0};
    int rc = run_rec_load(run, dir, e);
    if (!rc) rc = path_join(path, sizeof path, dir, "summary.json", e);
    if (!rc) rc = json_parse_file(&sum, path, e);
    if (!rc) rc = results_summary_check(dir, run, sum, e);
    if (!rc && (!cJSON_IsArray(jget(sum, "modes")) || !cJSON_IsObject(jget(sum, "tasks"))))
        rc = err_set(e, ERR_FORMAT, "%s: expected fields 'modes' (array) and 'tasks' (object)", path);
    if (!rc) rc = run_tables(g, &n_g, sum, run, e);
    if (!rc) rc = path_join(sub, sizeof sub, dir, "tables", e);
    if (!rc) rc = mkdir_p(sub, e);
    for (int i = 0; i < n_g && !rc; i++) rc = grid_csv(&g[i], sub, e);
    if (!rc) rc = path_join(sub, sizeof sub, dir, "plots", e);
    if (!rc) rc = mkdir_p(sub, e);
    const cJSON *t;
    if (!rc) cJSON_ArrayForEach(t, jget(sum, "tasks")) {
        if (has_metric(t, "ppl")) continue;
        if ((rc = margin_plot(dir, run, t->string, jget(sum, "modes"), e))) break;
    }
    if (rc) goto done;
    rc |= header_md(&o, run, jget(sum, "modes"));
    rc |= tasks_md(&o, run);
    rc |= odd_choices_md(&o, run);
    rc |= nonfinite_md(&o, sum);
    struct results_buf dg = {0};
    if ((rc = degenerate_md(&dg, dir, run, sum, e))) { free(dg.p); goto done; }
    if (dg.n) rc |= results_buf_put(&o, dg.p, dg.n);
    for (int i = 0; i < n_g; i++) {
        rc |= grid_md(&o, &g[i]);
        if (i == 0 && headline) {
            struct results_buf h = {0};
            rc |= grid_md(&h, &g[0]);
            if (n_g > 1) rc |= grid_md(&h, &g[1]);
            if (dg.n) rc |= results_buf_put(&h, dg.p, dg.n);
            *headline = h.p;
        }
    }
    free(dg.p);
    // speed per mode (run.json timings; the forward passes of this invocation)
    const cJSON *fw = jget(run->timings, "forward_s");
    if (cJSON_IsObject(fw)) {
        double tokens = 0;
        for (int k = 0; k < run->n_tasks; k++) if (!isnan(run->tasks[k].n_tokens)) tokens += run->tasks[k].n_tokens;
        // with the prefix cache (run.json prefix_cache): the positions each mode computed
        const cJSON *pc = run->prefix_cache, *pm = jget(pc, "modes");
        const int cached = cJSON_IsTrue(jget(pc, "enabled"));
        rc |= results_buf_printf(&o, "### Forward time per mode\n\n%s| mode | seconds | tokens/s |%s\n|---|---:|---:|%s\n",
                                 cached ? "Prefix cache on (exact: the same logits bit for bit): tokens/s counts the input "
                                          "tokens of the scored sequences; computed = positions actually run.\n\n" : "",
                                 cached ? " align | input tokens | computed | computed/input | scored rows |" : "",
                                 cached ? "---:|---:|---:|---:|---:|" : "");
        const cJSON *x;
        cJSON_ArrayForEach(x, fw) {
            rc |= results_buf_printf(&o, "| %s | %.2f | %.0f |", x->string, x->valuedouble,
                                     x->valuedouble > 0 ? tokens / x->valuedouble : 0.0);
            const cJSON *pmx = jget(pm, x->string);
            if (cached) {
                const double in = jnum(pmx, "tokens_input"), co = jnum(pmx, "tokens_computed");
                rc |= results_buf_printf(&o, " %d | %.0f | %.0f | %.3f | %.0f |", (int)jnum(pmx, "align"), in, co,
                                         in > 0 ? co / in : 0.0, jnum(pmx, "rows_scored"));
            }
            rc |= results_buf_put(&o, "\n", 1);
        }
        rc |= decoding_md(&o, pm);
        const char *note = run->note;
        rc |= results_buf_printf(&o, "%s%s\n", note ? "\nNote: " : "", note ? note : "");
    }
    rc |= report_noise_md(&o, sum, run);
    rc |= margins_md(&o, sum);
    rc |= results_buf_printf(&o, "\nEvery table is also in `tables/*.csv`. Per-item data: `samples-<task>-<mode>.jsonl.zst`; "
                                 "provenance: `run.json`; statistics: `summary.json`.\n");
    if (rc) { rc = err_set(e, ERR_NOMEM, "report: out of memory"); goto done; }
    rc = path_join(path, sizeof path, dir, "report.md", e);
    if (!rc) rc = file_write_atomic(path, o.p, o.n, e);
done:
    if (rc && headline) { free(*headline); *headline = NULL; }
    for (int i = 0; i < n_g; i++) grid_free(&g[i]);
    free(o.p);
    run_rec_free(run);
    cJSON_Delete(sum);
    return rc;
}
