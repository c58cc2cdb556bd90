// diff.c: `hifa4-eval diff RUN_A[:MODE] RUN_B[:MODE]` - item-by-item comparison of any two
// runs or two modes of one run: per task flips / PFR (Wilson 95%), hurts, helps, dAcc,
// McNemar exact p, the mean absolute loglik change; then each side's flip and hurt
// probability against its own run's reference (over its replicas, run --replicas) and their
// paired difference B - A with a bootstrap 95% interval, a paired permutation p (exact McNemar
// on the indicators when neither run has replicas) and the items needed for a 20% difference;
// then the flipped items. Items are matched by id; tasks present in both runs are compared.
// Modes: two runs with no mode named are compared mode by mode, one section for each mode both
// hold (in A's order); with the same run twice and no modes given, its first two modes; a mode
// named on one side only pairs with the other run's reference.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "results/item_probs.h"
#include "results/metrics.h"
#include "results/report.h"
#include "results/results.h"
#include "results/run_identity.h"
#include "results/run_label.h"
#include "results/run_rec.h"
#include "results/stats.h"

struct side { char dir[4096]; char mode[128]; struct run_rec run; };

static int side_open(struct side *s, const char *arg, struct err *e) {
    memset(s, 0, sizeof *s);
    // RUN[:MODE]: a run directory whose own name holds ':' is a run, not RUN plus a mode
    const char *colon = dir_exists(arg) ? NULL : strrchr(arg, ':');
    size_t dl = colon ? (size_t)(colon - arg) : strlen(arg);
    if (dl >= sizeof s->dir) return err_set(e, ERR_USAGE, "'%s': path too long", arg);
    memcpy(s->dir, arg, dl);
    s->dir[dl] = 0;
    if (colon) snprintf(s->mode, sizeof s->mode, "%s", colon + 1);
    if (!dir_exists(s->dir))
        return err_set(e, ERR_NOTFOUND, "'%s': %s is no run directory%s", arg, s->dir,
                       colon ? " (read as RUN:MODE, split at the last ':'; a run path with ':' in it must exist as given)" : "");
    int rc = run_rec_load(&s->run, s->dir, e);
    if (rc) return rc;
    // a killed run's modes may hold different items: comparing the common ones said nothing
    // about the run being incomplete
    if ((rc = results_check_complete(s->dir, &s->run, e))) return rc;
    if (s->mode[0] && !run_rec_has_mode(&s->run, s->mode))
        return err_set(e, ERR_NOTFOUND, "%s: mode '%s' is not in this run (field 'modes')", s->run.path, s->mode);
    return 0;
}

// Warns when the two runs' linear layers may differ for a reason other than the attention
// mode: a run without a "gemm" record was made with OpenBLAS, whose bits depend on the CPU's
// kernel, the batch and the thread count; two different arithmetic strings differ by design;
// two different libm variants (host.h) may differ in the last bit of exp, log, tanh and erf.
static void warn_numerics(const struct side *a, const struct side *b) {
    const char *ga = a->run.gemm_arithmetic, *gb = b->run.gemm_arithmetic;
    const char *ca = a->run.host_cpu, *cb = b->run.host_cpu, *la = a->run.host_libm, *lb = b->run.host_libm;
    if (!ga || !gb) {
        log_warn("diff: %s was made with OpenBLAS (no 'gemm' record in run.json), whose bits depend on the CPU kernel, "
                 "batch and threads: flips between these runs may come from the machine, not the attention mode",
                 !ga ? a->dir : b->dir);
    } else if (strcmp(ga, gb)) {
        log_warn("diff: the runs were made with different GEMM arithmetic ('%s' vs '%s'): their bits differ by design", ga,
                 gb);
    } else if (la && lb && strcmp(la, lb)) {
        log_warn("diff: the runs used different libm variants ('%s' vs '%s'): exp, log, tanh and erf may differ in their "
                 "last bit, so the runs' bits may differ outside the GEMM (README \"Reproducibility\")", la, lb);
    } else if (ca && cb && strcmp(ca, cb)) {
        log_info("diff: made on different CPUs (%s / %s) with the same GEMM arithmetic: the same inputs give the same bits",
                 ca, cb);
    }
}

// The inputs other than the options above in which the runs' identities differ (run_identity.h):
// weights, config.json, tokenizer files, each task's items. Said on stdout and stderr: items
// matched by id across different task data or models are not the same measurement.
static void inputs_differ(const struct side *a, const struct side *b) {
    static const char *const options[] = {"--", "modes", "mode ", "replicas", "shard", "scales", NULL};
    char d[1600];
    if (run_json_diff(d, sizeof d, a->run.json, b->run.json, 0, options) <= 0) return;
    printf("A and B were made from different inputs (A vs B): %s\n\n", d);
    log_warn("diff: %s and %s were made from different inputs (A vs B): %s", a->dir, b->dir, d);
}

static const char *mode_at(const struct side *s, int i) {
    return i < s->run.n_modes ? s->run.modes[i].name : NULL;
}

// One paired statistic of per-item a, b (K = 0 on both sides: McNemar on the indicators).
static void paired_cells(struct results_buf *o, const double *a, const double *b, int n, int single) {
    struct stats_opts so;
    stats_opts_default(&so);
    struct stats_paired s;
    if (stats_paired(&s, a, b, n, &so)) { results_buf_printf(o, " - | - | - | - | - |"); return; }
    double p = s.perm_p;
    if (single) {
        unsigned char *ia = malloc((size_t)n + 1), *ib = malloc((size_t)n + 1);
        for (int i = 0; ia && ib && i < n; i++) { ia[i] = a[i] != 0; ib[i] = b[i] != 0; }
        p = ia && ib ? stats_mcnemar_paired(ia, ib, n, NULL, NULL) : NAN;
        free(ia); free(ib);
    }
    results_buf_printf(o, " %.2f | %.2f | %+.2f [%+.2f, %+.2f] | %.3g | %.0f |", 100 * s.mean_a, 100 * s.mean_b, 100 * s.diff,
                       100 * s.lo, 100 * s.hi, p, s.items_needed);
}

// The paired flip / hurt probability row of one task into o (items matched by id).
static int paired_row(struct results_buf *o, const struct side *a, const struct side *b, const char *task, struct err *e) {
    struct item_probs pa, pb;
    int rc = item_probs_load(&pa, a->dir, &a->run, task, a->mode, e);
    if (!rc && (rc = item_probs_load(&pb, b->dir, &b->run, task, b->mode, e))) item_probs_free(&pa);
    if (rc) return rc;
    double *v = malloc(sizeof(double) * 4 * (size_t)(pa.n + 1));
    if (!v) { item_probs_free(&pa); item_probs_free(&pb); return err_set(e, ERR_NOMEM, "diff: out of memory"); }
    double *fa = v, *fb = v + pa.n + 1, *ha = v + 2 * (pa.n + 1), *hb = v + 3 * (pa.n + 1);
    int n = 0;
    for (int i = 0, j = 0; i < pa.n; i++) {
        int k = -1;
        if (j < pb.n && !strcmp(pa.ids[i], pb.ids[j])) k = j;
        else for (int q = 0; q < pb.n; q++) if (!strcmp(pa.ids[i], pb.ids[q])) { k = q; break; }
        if (k < 0) continue;
        j = k + 1;
        fa[n] = pa.flip[i]; fb[n] = pb.flip[k]; ha[n] = pa.hurt[i]; hb[n] = pb.hurt[k];
        n++;
    }
    const int single = pa.n_rep == 1 && pb.n_rep == 1;
    results_buf_printf(o, "| %s | %d | %d / %d |", task, n, pa.n_rep - 1, pb.n_rep - 1);
    paired_cells(o, fa, fb, n, single);
    paired_cells(o, ha, hb, n, single);
    results_buf_printf(o, "\n");
    free(v);
    item_probs_free(&pa);
    item_probs_free(&pb);
    return 0;
}

static void print_probs(const char *rows) {
    printf("\nflip and hurt probabilities, each against its own run's reference (%% per item over replicas 0..K, "
           "mean over items); B - A with a bootstrap 95%% interval, p (paired permutation; exact McNemar on the "
           "indicators when neither run has replicas) and the items needed to detect 20%% less than A's at p < 0.05 "
           "with 80%% power:\n\n| task | n | replicas A / B | flip A | flip B | B - A [95%%] | p | items needed | "
           "hurt A | hurt B | B - A [95%%] | p | items needed |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
           "---:|---:|---:|\n%s", rows);
}

static void free_pair(struct results_sample *sa, int na, struct results_sample *sb, int nb) {
    for (int i = 0; i < na; i++) results_sample_free(&sa[i]);
    for (int i = 0; i < nb; i++) results_sample_free(&sb[i]);
    free(sa);
    free(sb);
}

// The per-task table, the paired probabilities and the flipped items of A's mode vs B's mode.
static int compare_modes(const struct side *a, const struct side *b, const char *only, int show, struct err *e) {
    int rc = 0;
    printf("| task | n | acc A | acc B | flips | PFR %% [95%%] | hurts | helps | dAcc %% | McNemar p | mean abs dLL |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    struct results_buf flips_txt = {0}, probs_txt = {0};
    int n_common = 0;
    for (int ti = 0; ti < a->run.n_tasks; ti++) {
        const struct run_rec_task *ta = &a->run.tasks[ti], *tb = run_rec_task(&b->run, ta->name);
        const char *name = ta->name;
        if (only && strcmp(only, name)) continue;
        if (ta->is_ppl) continue; // no decisions to compare (see summary.json for perplexity)
        if (!tb) continue;
        char pa[4096], pb[4096];
        struct results_sample *sa = NULL, *sb = NULL;
        int na = 0, nb = 0;
        if ((rc = results_samples_path(pa, sizeof pa, a->dir, name, a->mode, e)) || (rc = results_samples_path(pb, sizeof pb, b->dir, name, b->mode, e)) ||
            (rc = results_samples_read_run(a->dir, &a->run, name, a->mode, &sa, &na, e)) ||
            (rc = results_samples_read_run(b->dir, &b->run, name, b->mode, &sb, &nb, e))) {
            for (int i = 0; i < na; i++) results_sample_free(&sa[i]);
            free(sa);
            goto out;
        }
        // each samples file must hold the items run.json promises (a file cut short by a kill, or
        // swapped in, would otherwise be compared on its common items without a word)
        const int want_a = ta->items, want_b = tb->items;
        if ((want_a >= 0 && na != want_a) || (want_b >= 0 && nb != want_b)) {
            int bad_a = want_a >= 0 && na != want_a;
            rc = err_set(e, ERR_MISMATCH, "%s: %d items, but its run.json says task %s has %d: the run is incomplete or its "
                         "files were changed", bad_a ? pa : pb, bad_a ? na : nb, name, bad_a ? want_a : want_b);
            free_pair(sa, na, sb, nb);
            goto out;
        }
        // match items by id (B may hold more or fewer items; the common ones are compared)
        int *pr = malloc(sizeof(int) * (size_t)(na + 1)), *pq = malloc(sizeof(int) * (size_t)(na + 1)), *gold = malloc(sizeof(int) * (size_t)(na + 1));
        int *jb = malloc(sizeof(int) * (size_t)(na + 1));
        int n = 0, listed = 0;
        double dll = 0;
        if (!pr || !pq || !gold || !jb) rc = err_set(e, ERR_NOMEM, "diff: out of memory");
        for (int i = 0, j = 0; !rc && i < na; i++) {
            int k = -1;
            if (j < nb && !strcmp(sa[i].id, sb[j].id)) k = j;
            else for (int q = 0; q < nb; q++) if (!strcmp(sa[i].id, sb[q].id)) { k = q; break; }
            if (k < 0) continue;
            j = k + 1;
            if (sa[i].gold != sb[k].gold || sa[i].n_choices != sb[k].n_choices) {
                rc = err_set(e, ERR_MISMATCH, "task %s item '%s': gold or number of choices differ between %s and %s", name, sa[i].id, pa, pb);
                break;
            }
            pr[n] = sa[i].pred; pq[n] = sb[k].pred; gold[n] = sa[i].gold; jb[n] = i;
            for (int c = 0; c < sa[i].n_choices; c++) dll += fabs(sb[k].ll[c] - sa[i].ll[c]) / sa[i].n_choices;
            if (sa[i].pred != sb[k].pred && listed++ < show) {
                results_buf_printf(&flips_txt, "| %s | %s | %d | %d | %d | %.4f | %.4f |\n", name, sa[i].id, sa[i].gold, sa[i].pred,
                                   sb[k].pred, sa[i].margin, sb[k].margin);
            }
            n++;
        }
        if (!rc) {
            struct metrics_compare c;
            metrics_compare(&c, pr, pq, gold, n);
            printf("| %s | %d | %.2f | %.2f | %d | %.2f [%.2f, %.2f] | %d | %d | %.2f | %.3g | %.4g |\n", name, n, 100 * c.acc_ref,
                   100 * c.acc_q, c.flips, 100 * c.pfr, 100 * c.pfr_lo, 100 * c.pfr_hi, c.hurts, c.helps, 100 * c.d_acc, c.mcnemar_p,
                   n ? dll / n : 0.0);
            n_common++;
            rc = paired_row(&probs_txt, a, b, name, e);
        }
        free(pr); free(pq); free(gold); free(jb);
        free_pair(sa, na, sb, nb);
        if (rc) goto out;
    }
    if (!n_common) { rc = err_set(e, ERR_NOTFOUND, "no task in common between %s and %s%s%s", a->dir, b->dir, only ? " named " : "", only ? only : ""); goto out; }
    if (probs_txt.n) print_probs(probs_txt.p);
    if (flips_txt.n) {
        printf("\nflipped items (pred A != pred B):\n\n| task | id | gold | pred A | pred B | margin A | margin B |\n|---|---|---:|---:|---:|---:|---:|\n%s", flips_txt.p);
    }
out:
    free(flips_txt.p);
    free(probs_txt.p);
    return rc;
}

int cmd_diff(int argc, char **argv, struct err *e) {
    int help = 0, show = 20;
    const char *only = NULL;
    struct cli_opt opts[] = {
        {"task", CLI_STR, &only, "T: compare this task only"},
        {"items", CLI_INT, &show, "N: list at most N flipped items per task (default 20)"},
        {"help", CLI_FLAG, &help, "show this help"},
    };
    const char *pos[2];
    struct cli_pos pa = {pos, 2, 0};
    int rc = cli_parse_pos(argc, argv, opts, 3, &pa, e);
    const int n_pos = pa.n;
    if (rc) return rc;
    if (help) { cli_usage("diff", "RUN_A[:MODE] RUN_B[:MODE]", opts, 3); return 0; }
    if (n_pos != 2) return err_set(e, ERR_USAGE, "expected two runs (RUN_A[:MODE] RUN_B[:MODE])");
    struct side a, b;
    if ((rc = side_open(&a, pos[0], e))) { run_rec_free(&a.run); return rc; }
    if ((rc = side_open(&b, pos[1], e))) { run_rec_free(&a.run); run_rec_free(&b.run); return rc; }
    int same_run = !strcmp(a.dir, b.dir), all_modes = !same_run && !a.mode[0] && !b.mode[0];
    if (!same_run) warn_numerics(&a, &b);
    if (!a.mode[0]) snprintf(a.mode, sizeof a.mode, "%s", mode_at(&a, 0) ? mode_at(&a, 0) : "");
    if (!b.mode[0]) {
        const char *m = same_run ? mode_at(&b, !strcmp(mode_at(&b, 0), a.mode) ? 1 : 0) : mode_at(&b, 0);
        if (!m) { rc = err_set(e, ERR_USAGE, "%s has one mode only: name the modes to compare (RUN:MODE)", b.dir); goto done; }
        snprintf(b.mode, sizeof b.mode, "%s", m);
    }
    // with the Q-Mean form and qdq skip of each side, e.g. "hifa4 (channel)" vs "hifa4 (token)"
    char differ[1024];
    run_label_differences(differ, sizeof differ, &a.run, &b.run);
    if (!same_run) inputs_differ(&a, &b); // weights, config, tokenizer or task items
    if (!all_modes) {
        printf("diff %s:%s (A: %s) vs %s:%s (B: %s)\n\n", a.dir, a.mode, run_rec_display(&a.run, a.mode), b.dir, b.mode,
               run_rec_display(&b.run, b.mode));
        if (differ[0]) printf("A and B differ in: %s\n\n", differ); // what else than the mode sets them apart
        rc = compare_modes(&a, &b, only, show, e);
        goto done;
    }
    // two runs, no mode named: every mode they share, one section each, in A's order
    printf("diff %s (A) vs %s (B): every mode the two runs share\n\n", a.dir, b.dir);
    if (differ[0]) printf("A and B differ in: %s\n\n", differ);
    int shared = 0;
    for (int i = 0; mode_at(&a, i) && !rc; i++) {
        int inb = 0;
        for (int j = 0; mode_at(&b, j); j++) inb |= !strcmp(mode_at(&a, i), mode_at(&b, j));
        if (!inb) continue;
        snprintf(a.mode, sizeof a.mode, "%s", mode_at(&a, i));
        snprintf(b.mode, sizeof b.mode, "%s", mode_at(&a, i));
        printf("%s## mode %s (A: %s, B: %s)\n\n", shared++ ? "\n" : "", a.mode, run_rec_display(&a.run, a.mode),
               run_rec_display(&b.run, b.mode));
        rc = compare_modes(&a, &b, only, show, e);
    }
    if (!rc && !shared) rc = err_set(e, ERR_NOTFOUND, "%s and %s share no mode: name the modes to compare (RUN:MODE)", a.dir, b.dir);
done:
    run_rec_free(&a.run);
    run_rec_free(&b.run);
    return rc;
}
