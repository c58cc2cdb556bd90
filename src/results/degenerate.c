// degenerate.c: the degenerate-mode flag of degenerate.h.
#include "results/degenerate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/metrics.h"

void degenerate_check(struct degenerate *d, const struct results_sample *s, int n) {
    int cnt[DEGENERATE_MAX_POS] = {0}, correct = 0;
    double chance = 0;
    *d = (struct degenerate){0};
    for (int i = 0; i < n; i++) {
        if (s[i].nonfinite || s[i].n_choices < 1 || s[i].pred < 0) continue;
        cnt[s[i].pred < DEGENERATE_MAX_POS ? s[i].pred : DEGENERATE_MAX_POS - 1]++;
        correct += s[i].pred == s[i].gold;
        chance += 1.0 / s[i].n_choices;
        d->n++;
    }
    if (!d->n) return;
    for (int k = 1; k < DEGENERATE_MAX_POS; k++)
        if (cnt[k] > cnt[d->top_pos]) d->top_pos = k;
    d->top_share = (double)cnt[d->top_pos] / d->n;
    d->acc = (double)correct / d->n;
    d->chance = chance / d->n;
    metrics_wilson(correct, d->n, METRICS_Z95, &d->acc_lo, &d->acc_hi);
    d->same_position = d->top_share >= DEGENERATE_SHARE;
    d->at_chance = d->acc_lo <= d->chance && d->chance <= d->acc_hi;
}

static const cJSON *jget(const cJSON *o, const char *k) { return o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL; }

static int is_ppl(const cJSON *t) {
    const cJSON *m;
    cJSON_ArrayForEach(m, jget(t, "metrics")) if (cJSON_IsString(m) && !strcmp(m->valuestring, "ppl")) return 1;
    return 0;
}

int degenerate_md(struct results_buf *o, const char *dir, const struct run_rec *run, const cJSON *sum, struct err *e) {
    const cJSON *t, *m;
    int rc = 0, flagged = 0, checked = 0;
    struct results_buf lines = {0};
    cJSON_ArrayForEach(t, jget(sum, "tasks")) {
        if (is_ppl(t)) continue;
        cJSON_ArrayForEach(m, jget(sum, "modes")) {
            struct results_sample *s = NULL;
            int n = 0;
            if ((rc = results_samples_read_run(dir, run, t->string, m->valuestring, &s, &n, e))) goto done;
            struct degenerate d;
            degenerate_check(&d, s, n);
            for (int i = 0; i < n; i++) results_sample_free(&s[i]);
            free(s);
            checked++;
            if (!d.same_position && !d.at_chance) continue;
            char why[256];
            int w = 0;
            if (d.same_position)
                w += snprintf(why + w, sizeof why - (size_t)w, "picks option %c on %.0f%% of the items", 'A' + d.top_pos,
                              100 * d.top_share);
            if (d.at_chance)
                snprintf(why + w, sizeof why - (size_t)w, "%saccuracy %.1f%% [%.1f, %.1f] contains chance (%.1f%%)",
                         w ? "; " : "", 100 * d.acc, 100 * d.acc_lo, 100 * d.acc_hi, 100 * d.chance);
            rc |= results_buf_printf(&lines, "| %s | %s | %d | %s |\n", t->string, run_rec_display(run, m->valuestring), d.n, why);
            flagged++;
        }
    }
    if (!checked) goto done;
    if (flagged)
        rc |= results_buf_printf(o, "### Degenerate modes\n\n**%d (task, mode) pair%s answer%s no better than a fixed "
                                 "rule**: the same option position on >= %.0f%% of the items, or an accuracy whose Wilson 95%% "
                                 "interval contains chance. Their accuracy does not measure knowledge, and flips between "
                                 "two such modes mean little.\n\n| task | mode | n | why |\n|---|---|---:|---|\n%s\n",
                                 flagged, flagged > 1 ? "s" : "", flagged > 1 ? "" : "s", 100 * DEGENERATE_SHARE,
                                 lines.p ? lines.p : "");
    else
        rc |= results_buf_printf(o, "Degenerate modes: none (no mode picks one option position on >= %.0f%% of the items, "
                                 "every accuracy's Wilson 95%% interval lies above chance).\n\n", 100 * DEGENERATE_SHARE);
    if (rc) rc = err_set(e, ERR_NOMEM, "report: out of memory");
done:
    free(lines.p);
    return rc;
}
