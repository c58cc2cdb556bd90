// test_results.c: sample-line round trip (exact doubles, escapes, null for non-finite), the
// zstd-frame writer (files readable by the reader and by plain zstd framing), resume after a
// torn write gives a byte-identical file, error messages name file and line.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "results/plot.h"
#include "results/paper_tables.h"
#include "results/report.h"
#include "results/results.h"
#include "test.h"

static const char *tmpdir(void) {
    const char *t = getenv("HIFA4_TMP");
    return t ? t : "build/tmp";
}

static void make_sample(struct results_sample *s, int i) {
    memset(s, 0, sizeof *s);
    s->idx = i;
    char id[64];
    snprintf(id, sizeof id, "item \"%d\"\t\\%s", i, i % 3 ? "" : "ü");
    s->id = strdup(id);
    s->subject = i % 2 ? strdup("algebra") : NULL;
    s->n_choices = 2 + i % 3;
    s->gold = i % s->n_choices;
    s->ll = malloc(sizeof(double) * 4);
    s->n_chars = malloc(sizeof(int) * 4);
    s->n_tok = malloc(sizeof(int) * 4);
    s->greedy = malloc(sizeof(int) * 4);
    for (int c = 0; c < s->n_choices; c++) {
        s->ll[c] = -1.0 / (i + c + 3) - c * 0.1 * (i % 7) - 1e-300 * c;
        s->n_chars[c] = c + 1;
        s->n_tok[c] = 1 + (i + c) % 2;
        s->greedy[c] = (i + c) % 2;
    }
    if (i == 5) s->ll[1] = -INFINITY;
    s->pred = (i * 7) % s->n_choices;
    s->pred_norm = (i * 3) % s->n_choices;
    s->margin = i % 11 == 0 ? NAN : 0.1 * i + 1e-17;
    if (i % 4) {
        s->n_kl = 1 + i % 3;
        s->kl = malloc(sizeof(double) * (size_t)s->n_kl);
        for (int k = 0; k < s->n_kl; k++) s->kl[k] = 1e-7 * (k + 1) * (i + 1) / 3.0;
        s->top1_same = s->n_kl - (i % 2);
    }
}

static int same_sample(const struct results_sample *a, const struct results_sample *b) {
    if (a->idx != b->idx || strcmp(a->id, b->id) || (!a->subject) != (!b->subject) ||
        (a->subject && strcmp(a->subject, b->subject)) || a->gold != b->gold || a->n_choices != b->n_choices ||
        a->pred != b->pred || a->pred_norm != b->pred_norm || a->n_kl != b->n_kl || a->top1_same != b->top1_same)
        return 0;
    if (!(a->margin == b->margin || (isnan(a->margin) && isnan(b->margin)))) return 0;
    for (int c = 0; c < a->n_choices; c++) {
        int ll_ok = a->ll[c] == b->ll[c] || (!isfinite(a->ll[c]) && isnan(b->ll[c]));
        if (!ll_ok || a->n_chars[c] != b->n_chars[c] || a->n_tok[c] != b->n_tok[c] || a->greedy[c] != b->greedy[c]) return 0;
    }
    for (int k = 0; k < a->n_kl; k++) if (a->kl[k] != b->kl[k]) return 0;
    return 1;
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    b[*n] = 0;
    fclose(f);
    return b;
}

static void test_line_roundtrip(void) {
    int bad = 0;
    for (int i = 0; i < 50; i++) {
        struct results_sample s, t;
        make_sample(&s, i);
        struct results_buf b = {0};
        CHECK(results_sample_line(&b, &s) == 0, "line %d", i);
        CHECK(b.n > 0 && b.p[b.n - 1] == '\n' && memchr(b.p, '\n', b.n) == b.p + b.n - 1, "one line with its newline");
        struct err e = {0};
        int rc = results_sample_parse(&t, b.p, b.n - 1, "x", &e);
        CHECK(rc == 0, "parse: %s", e.msg);
        if (!rc && !same_sample(&s, &t)) bad++;
        results_sample_free(&s);
        results_sample_free(&t);
        free(b.p);
    }
    CHECK(bad == 0, "%d samples did not round-trip exactly", bad);
    struct results_sample t;
    struct err e = {0};
    const char *l = "{\"idx\":0,\"id\":\"a\",\"gold\":5,\"logliks\":[-1,-2],\"char_lens\":[1,1],\"tok_lens\":[1,1],"
                    "\"is_greedy\":[0,0],\"pred\":0,\"pred_norm\":0,\"margin\":1}";
    CHECK(results_sample_parse(&t, l, strlen(l), "f.jsonl:3", &e) == ERR_FORMAT, "gold out of range");
    CHECK(strstr(e.msg, "f.jsonl:3") != NULL, "message names the line: %s", e.msg);
    const char *l2 = "{\"idx\":0,\"id\":\"a\",\"gold\":0,\"logliks\":[-1,-2],\"char_lens\":[1],\"tok_lens\":[1,1],"
                     "\"is_greedy\":[0,0],\"pred\":0,\"pred_norm\":0,\"margin\":1}";
    CHECK(results_sample_parse(&t, l2, strlen(l2), "f", &e) == ERR_FORMAT && strstr(e.msg, "char_lens"), "length mismatch: %s", e.msg);
}

static int write_items(const char *path, int from, int to, int keep, int close) {
    struct results_writer w;
    struct err e = {0};
    if (results_writer_open(&w, path, keep, NULL, &e)) { fprintf(stderr, "%s\n", e.msg); return -1; }
    for (int i = from; i < to; i++) {
        struct results_sample s;
        make_sample(&s, i);
        int rc = results_writer_add(&w, &s, &e);
        results_sample_free(&s);
        if (rc) return -1;
    }
    if (close) return results_writer_close(&w, &e);
    results_writer_abort(&w); // a kill: pending lines are lost
    return 0;
}

static void test_writer_resume(void) {
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/res_full.jsonl.zst", tmpdir());
    snprintf(b, sizeof b, "%s/res_resumed.jsonl.zst", tmpdir());
    mkdir_p(tmpdir(), NULL);
    const int N = 200;
    CHECK(write_items(a, 0, N, 0, 1) == 0, "uninterrupted write");
    struct results_sample *v;
    int n;
    struct err e = {0};
    int rc = results_samples_read(a, &v, &n, &e);
    CHECK(rc == 0 && n == N, "read back %d items: %s", n, e.msg);
    int bad = 0;
    for (int i = 0; !rc && i < n; i++) {
        struct results_sample s;
        make_sample(&s, i);
        bad += !same_sample(&s, &v[i]);
        results_sample_free(&s);
        results_sample_free(&v[i]);
    }
    if (!rc) free(v);
    CHECK(bad == 0, "%d items differ after the file round trip", bad);
    int cnt;
    CHECK(results_samples_count(a, &cnt, &e) == 0 && cnt == N, "count %d", cnt);

    // killed at item 150: two complete frames (128 items) on disk, then a torn frame
    CHECK(write_items(b, 0, 150, 0, 0) == 0, "partial write");
    CHECK(results_samples_count(b, &cnt, &e) == 0 && cnt == 2 * RESULTS_FRAME_ITEMS, "complete items after a kill: %d", cnt);
    size_t nf;
    char *full = slurp(a, &nf);
    FILE *f = fopen(b, "ab");
    fwrite(full + 100, 1, 37, f); // torn bytes at the end
    fclose(f);
    CHECK(results_samples_count(b, &cnt, &e) == 0 && cnt == 2 * RESULTS_FRAME_ITEMS, "torn frame ignored: %d", cnt);
    CHECK(results_samples_read(b, &v, &n, &e) != 0, "reading a torn file is an error");
    CHECK(write_items(b, cnt, N, cnt, 1) == 0, "resume");
    size_t nr;
    char *res = slurp(b, &nr);
    CHECK(nf == nr && full && res && !memcmp(full, res, nf), "resumed file byte-identical (%zu vs %zu bytes)", nf, nr);
    // resuming at an item that is not a frame boundary is refused
    struct results_writer w;
    CHECK(results_writer_open(&w, b, 100, NULL, &e) == ERR_MISMATCH, "resume at item 100 refused: %s", e.msg);
    free(full); free(res);
}

static void test_paths(void) {
    char p[256];
    struct err e = {0};
    CHECK(results_samples_path(p, sizeof p, "r", "mmlu", "direct+qmean/x", &e) == 0, "path");
    CHECK(!strcmp(p, "r/samples-mmlu-direct+qmean_x.jsonl.zst"), "path %s", p);
    CHECK(results_default_dir(p, sizeof p, "/tmp/models/s260k/", &e) == 0 && !strncmp(p, "results/s260k-", 14), "dir %s", p);
}

// A synthetic two-task, two-mode run: preds chosen so the expected counts are known by hand.
static void write_run_task(const char *dir, const char *task, const char *mode, int n, int q) {
    char path[1024];
    struct err e = {0};
    results_samples_path(path, sizeof path, dir, task, mode, &e);
    struct results_writer w;
    results_writer_open(&w, path, 0, NULL, &e);
    for (int i = 0; i < n; i++) {
        struct results_sample s;
        make_sample(&s, i);
        s.gold = i % s.n_choices;
        // reference correct on i % 3 != 0; q flips: items i % 5 == 0 get pred (gold+1) (hurt if ref right)
        // and items i % 3 == 0 && i % 2 == 0 get gold (help)
        int ref_pred = i % 3 ? s.gold : (s.gold + 1) % s.n_choices;
        int p = ref_pred;
        if (q && i % 5 == 0) p = (s.gold + 1) % s.n_choices;
        if (q && i % 3 == 0 && i % 2 == 0 && i % 5 && i % 7) p = s.gold;
        s.pred = p;
        s.pred_norm = i % 4 ? s.gold : p;
        s.margin = 0.5 + i * 0.01 + q * 0.1;
        results_writer_add(&w, &s, &e);
        results_sample_free(&s);
    }
    results_writer_close(&w, &e);
}


static void test_summary_report(void) {
    char dir[512], path[1024];
    snprintf(dir, sizeof dir, "%s/res_run", tmpdir());
    struct err e = {0};
    mkdir_p(dir, &e);
    snprintf(path, sizeof path, "%s/run.json", dir);
    const char *rj = "{\"model\":{\"name\":\"toy\",\"path\":\"/x\",\"hash\":\"00\"},\"modes\":[\"ref\",\"q\"],"
                     "\"tasks\":[{\"name\":\"t1\",\"metrics\":[\"acc\",\"acc_norm\"]},{\"name\":\"t2\",\"metrics\":[\"acc\"]}],"
                     "\"complete\":true}";
    file_write_atomic(path, rj, strlen(rj), &e);
    const int n1 = 90, n2 = 31;
    write_run_task(dir, "t1", "ref", n1, 0);
    write_run_task(dir, "t1", "q", n1, 1);
    write_run_task(dir, "t2", "ref", n2, 0);
    write_run_task(dir, "t2", "q", n2, 1);
    cJSON *sum = NULL;
    int rc = results_summarize(dir, &sum, &e);
    CHECK(rc == 0, "summarize: %s", e.msg);
    if (rc) return;
    // expected by hand
    int ns[2] = {n1, n2};
    double gap[2];
    for (int t = 0; t < 2; t++) {
        int flips = 0, hurts = 0, helps = 0, cref = 0, cq = 0;
        for (int i = 0; i < ns[t]; i++) {
            int rr = i % 3 != 0;
            int qq = rr;
            if (i % 5 == 0) qq = 0;
            if (i % 3 == 0 && i % 2 == 0 && i % 5 && i % 7) qq = 1;
            flips += rr != qq; hurts += rr && !qq; helps += !rr && qq; cref += rr; cq += qq;
        }
        gap[t] = (double)cq / ns[t] - (double)cref / ns[t];
        const cJSON *tj = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "tasks"), t ? "t2" : "t1");
        const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(tj, "vs_reference"), "q");
        CHECK(cJSON_GetObjectItem(v, "flips")->valueint == flips, "t%d flips %d want %d", t + 1, cJSON_GetObjectItem(v, "flips")->valueint, flips);
        CHECK(cJSON_GetObjectItem(v, "hurts")->valueint == hurts, "t%d hurts want %d", t + 1, hurts);
        CHECK(cJSON_GetObjectItem(v, "helps")->valueint == helps, "t%d helps want %d", t + 1, helps);
        double acc = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(tj, "modes"), "ref"), "acc")->valuedouble;
        CHECK_CLOSE(acc, (double)cref / ns[t], 1e-15, 0);
        double se = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(tj, "modes"), "ref"), "acc_stderr")->valuedouble;
        double p = (double)cref / ns[t];
        CHECK_CLOSE(se, sqrt(p * (1 - p) / (ns[t] - 1)), 1e-15, 1e-12);
        CHECK((cJSON_GetObjectItem(v, "acc_norm") != NULL) == (t == 0), "acc_norm comparison only where reported");
    }
    const cJSON *at = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "across_tasks"), "q");
    CHECK_CLOSE(cJSON_GetObjectItem(at, "D_avg")->valuedouble, (gap[0] + gap[1]) / 2, 1e-15, 1e-12);
    CHECK_CLOSE(cJSON_GetObjectItem(at, "D_w")->valuedouble, (gap[0] * n1 + gap[1] * n2) / (n1 + n2), 1e-15, 1e-12);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    CHECK(results_write_json(path, sum, &e) == 0, "write summary: %s", e.msg);
    cJSON_Delete(sum);
    char *head = NULL;
    rc = report_render(dir, &head, &e);
    CHECK(rc == 0, "report: %s", e.msg);
    CHECK(head && strstr(head, "| t1 (90) |"), "headline has the accuracy table: %s", head ? head : "(null)");
    free(head);
    const char *files[] = {"report.md", "tables/accuracy.csv", "tables/flips.csv", "tables/hurts_helps.csv",
                           "tables/token_kl.csv", "tables/margins.csv", "tables/d_avg_w.csv", "plots/margins-t1.svg"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        CHECK(file_exists(path), "%s written", path);
    }
    // both modes answer item i correctly unless 3 or 5 divides it: t1 48 of 90, t2 16 of 31 (fewer than REPORT_MARGIN_MIN_ITEMS,
    // so no margin plot or margin statistics, and the report says why)
    snprintf(path, sizeof path, "%s/plots/margins-t2.svg", dir);
    CHECK(!file_exists(path), "%s: no plot below %d items", path, REPORT_MARGIN_MIN_ITEMS);
    size_t n;
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = slurp(path, &n);
    CHECK(md && strstr(md, "- t2: 16 items, too few for a margin distribution") && strstr(md, "| t2 | 16 | - | - |") &&
              strstr(md, "- t1 (48 items):"), "margin section names its items and leaves t2 out:\n%s", md ? md : "");
    free(md);
    snprintf(path, sizeof path, "%s/plots/margins-t1.svg", dir);
    char *svg = slurp(path, &n);
    int lines = 0;
    for (char *p = svg; p && (p = strstr(p, "<polyline")); p++) lines++;
    CHECK(svg && !strncmp(svg, "<svg", 4) && lines == 2, "svg with one curve per mode (%d)", lines);
    free(svg);
    // `tables` (the paper's layouts, tests/test_tables.sh) compares with bf16 only: a run whose
    // reference is another mode is listed as left out, with the reason, and fills no table
    const char *runs[2] = {dir, dir};
    struct pt_opts po;
    pt_opts_default(&po);
    struct pt_result res;
    CHECK(pt_render(runs, 2, &po, NULL, NULL, &res, &e) == 0, "tables: %s", e.msg);
    CHECK(res.md && res.n_tables == 0 && strstr(res.md, "its reference mode is ref; the paper's tables compare with bf16") &&
              strstr(res.md, "| Table 3 | no run with modes bf16 (reference), direct and hifa4 |"),
          "tables: run left out, tables listed as missing:\n%s", res.md ? res.md : "");
    free(res.md);
}

// Every tick label of a histogram is a multiple of one 1-2-5 step (times a power of ten), 3 to
// 6 of them per axis, inside the axis range - not bin edges. Data ranges like the margin
// histograms' (0.738 .. 3.69) and a y axis up to an odd fraction.
static void check_ticks(const char *svg, const char *anchor, double lo, double hi, const char *what) {
    char pat[64];
    snprintf(pat, sizeof pat, "text-anchor=\"%s\">", anchor);
    double v[32];
    int n = 0;
    for (const char *p = strstr(svg, pat); p && n < 32; p = strstr(p + 1, pat)) {
        if (p[strlen(pat)] == '<' || !strchr("-0123456789", p[strlen(pat)])) continue; // titles, labels
        v[n++] = atof(p + strlen(pat));
    }
    CHECK(n >= 3 && n <= 6, "%s: %d ticks", what, n);
    if (n < 2) return;
    double step = v[1] - v[0], p10 = pow(10, floor(log10(step) + 1e-9)), m = step / p10;
    CHECK(fabs(m - 1) < 1e-6 || fabs(m - 2) < 1e-6 || fabs(m - 5) < 1e-6, "%s: step %g is not 1, 2 or 5 x 10^k", what, step);
    for (int i = 0; i < n; i++) {
        double k = v[i] / step;
        CHECK(fabs(k - round(k)) < 1e-6, "%s: tick %g is not a multiple of %g", what, v[i], step);
        CHECK(v[i] >= lo - 1e-9 && v[i] <= hi + 1e-9, "%s: tick %g outside [%g, %g]", what, v[i], lo, hi);
        if (i) CHECK(fabs(v[i] - v[i - 1] - step) < 1e-6 * step, "%s: uneven ticks %g, %g", what, v[i - 1], v[i]);
    }
}

static void test_plot_ticks(void) {
    double a[] = {0.738, 1.2, 1.48, 2.21, 2.9, 3.69, 1.3, 1.31}, c[] = {-0.043, 0.0171, 0.002};
    const double *vals[] = {a, c};
    const int ns[] = {8, 3};
    const double los[] = {0.738, -0.043}, his[] = {3.69, 0.0171};
    for (int t = 0; t < 2; t++) {
        struct plot_series s = {"m", vals[t], ns[t]};
        char *svg = NULL;
        struct err e = {0};
        CHECK(plot_hist_svg(&svg, "t", "margin", &s, 1, (struct plot_bins){7, 0, 0}, &e) == 0, "plot");
        if (!svg) continue;
        check_ticks(svg, "middle", los[t], his[t], "x axis");
        check_ticks(svg, "end", 0, 1.05, "y axis"); // fractions: the y axis is [0, 1.05 x the largest]
        free(svg);
    }
}

static void test_plot(void) {
    double a[] = {0, 0.1, 0.2, 0.9, 1.0}, b[] = {0.5, 0.5, NAN};
    struct plot_series s[2] = {{"x<&>", a, 5}, {"y", b, 3}};
    char *svg;
    struct err e = {0};
    CHECK(plot_hist_svg(&svg, "t", "m", s, 2, (struct plot_bins){10, 0, 0}, &e) == 0, "plot");
    CHECK(strstr(svg, "x&lt;&amp;&gt;") != NULL, "legend escaped");
    CHECK(strstr(svg, "</svg>") != NULL, "closed");
    char *svg2;
    plot_hist_svg(&svg2, "t", "m", s, 2, (struct plot_bins){10, 0, 0}, &e);
    CHECK(!strcmp(svg, svg2), "deterministic");
    free(svg); free(svg2);
    CHECK(plot_hist_svg(&svg, "t", "m", s, 2, (struct plot_bins){0, 0, 0}, &e) == ERR_RANGE, "0 bins refused");
    test_plot_ticks();
    // ECDF over [0, 4] (plot area x 60..580, y 370 (0) .. 40 (1)): {1, 2, 2, 3} rises to 1/4 at
    // x = 1, 3/4 at x = 2 (one step for the tied values), 1 at x = 3; the legend sits right of
    // the plot area (x > 580) with the label whole; a NaN is left out of the fractions
    double v[] = {2, 1, NAN, 3, 2};
    struct plot_series es[2] = {{"direct+qmean (channel) [qdq-skip q,k,v]", v, 5}, {"bf16", v, 5}};
    CHECK(plot_ecdf_svg(&svg, "t", "m", es, 2, (struct plot_range){0, 4}, &e) == 0, "ecdf: %s", e.msg);
    CHECK(svg && strstr(svg, "points=\"60.0,370.0 190.0,370.0 190.0,287.5 320.0,287.5 320.0,122.5 450.0,122.5 450.0,40.0 "
                             "580.0,40.0\""), "ecdf steps: %s", svg ? svg : "");
    CHECK(svg && strstr(svg, "<text x=\"630.0\" y=\"52.0\">direct+qmean (channel) [qdq-skip q,k,v]</text>"),
          "legend outside the plot area, label whole");
    CHECK(svg && strstr(svg, "stroke-dasharray=\"6 3\""), "second curve dashed (curves on each other stay visible)");
    free(svg);
}

// ---- hostile run directories ----
// A run whose modes hold different item counts (a killed run; more than 256 items made the
// summary free past the shorter array), one whose files hold fewer items than run.json says,
// an incomplete run (tables refuses it), and items marked nonfinite (left out of every
// statistic in every mode, counted per mode, shown in report.md).
static void write_rj(const char *dir, int n_items, int complete) {
    char path[1024], rj[1024];
    snprintf(path, sizeof path, "%s/run.json", dir);
    snprintf(rj, sizeof rj, "{\"model\":{\"name\":\"toy\"},\"modes\":[\"ref\",\"q\"],\"tasks\":[{\"name\":\"t1\","
             "\"metrics\":[\"acc\"],\"n_items\":%d}],\"command\":[\"run\",\"--model\",\"toy\"],\"complete\":%s}",
             n_items, complete ? "true" : "false");
    file_write_atomic(path, rj, strlen(rj), NULL);
}

static void test_hostile_runs(void) {
    char dir[512], path[1024];
    snprintf(dir, sizeof dir, "%s/res_hostile", tmpdir());
    struct err e = {0};
    mkdir_p(dir, &e);
    cJSON *sum = NULL;
    write_rj(dir, 300, 1);
    write_run_task(dir, "t1", "ref", 300, 0);
    write_run_task(dir, "t1", "q", 130, 1);
    int rc = results_summarize(dir, &sum, &e);
    CHECK(rc == ERR_MISMATCH && strstr(e.msg, "samples-t1-q.jsonl.zst: 130 items") && strstr(e.msg, "'ref' has 300") && !sum,
          "one mode short: rc %d: %s", rc, e.msg);
    write_run_task(dir, "t1", "q", 300, 1);
    write_rj(dir, 320, 1);
    rc = results_summarize(dir, &sum, &e);
    CHECK(rc == ERR_MISMATCH && strstr(e.msg, "300 items, but run.json says the task has 320"), "all modes short: %s", e.msg);
    write_rj(dir, 300, 0);
    const char *runs[1] = {dir};
    struct pt_opts po;
    pt_opts_default(&po);
    struct pt_result res;
    rc = pt_render(runs, 1, &po, NULL, NULL, &res, &e);
    CHECK(rc == ERR_MISMATCH && !res.md && strstr(e.msg, "not a complete run") && strstr(e.msg, "`hifa4-eval run --model toy --resume`"),
          "tables on an incomplete run: %s", e.msg);
    // items 3 and 7 not finite in q, item 7 and 11 in ref: 3 items out of every statistic
    for (int m = 0; m < 2; m++) {
        snprintf(path, sizeof path, "%s/samples-t1-%s.jsonl.zst", dir, m ? "q" : "ref");
        struct results_writer w;
        results_writer_open(&w, path, 0, NULL, &e);
        for (int i = 0; i < 20; i++) {
            struct results_sample s;
            make_sample(&s, i);
            s.pred = s.gold; // every finite item is right: accuracy must come out 1
            s.nonfinite = m ? (i == 3 || i == 7) : (i == 7 || i == 11);
            if (s.nonfinite) { s.ll[0] = NAN; s.pred = (s.gold + 1) % s.n_choices; }
            results_writer_add(&w, &s, &e);
            results_sample_free(&s);
        }
        results_writer_close(&w, &e);
    }
    write_rj(dir, 20, 1);
    rc = results_summarize(dir, &sum, &e);
    const cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "tasks"), "t1");
    const cJSON *nf = cJSON_GetObjectItem(t, "nonfinite"), *nm = cJSON_GetObjectItem(nf, "modes");
    CHECK(rc == 0 && cJSON_GetObjectItem(t, "n")->valueint == 17 && cJSON_GetObjectItem(nf, "excluded")->valueint == 3 &&
              cJSON_GetObjectItem(nm, "ref")->valueint == 2 && cJSON_GetObjectItem(nm, "q")->valueint == 2,
          "nonfinite items excluded and counted: %s", rc ? e.msg : "");
    const cJSON *acc = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "modes"), "q"), "acc");
    CHECK(acc && acc->valuedouble == 1.0, "accuracy over the finite items only");
    snprintf(path, sizeof path, "%s/summary.json", dir);
    results_write_json(path, sum, &e);
    cJSON_Delete(sum);
    char *head = NULL;
    rc = report_render(dir, &head, &e);
    free(head);
    snprintf(path, sizeof path, "%s/report.md", dir);
    size_t n;
    char *rep = slurp(path, &n);
    CHECK(rc == 0 && rep && strstr(rep, "### Non-finite items") && strstr(rep, "| t1 | 3 | ref 2, q 2 |"), "report: %s",
          rc ? e.msg : "");
    free(rep);
    // the nonfinite mark survives a write and a re-read, and only 1 is accepted
    struct results_sample a, b;
    make_sample(&a, 2);
    a.nonfinite = 1;
    struct results_buf buf = {0};
    results_sample_line(&buf, &a);
    CHECK(strstr(buf.p, ",\"nonfinite\":1") && results_sample_parse(&b, buf.p, buf.n - 1, "x", &e) == 0 && b.nonfinite == 1,
          "nonfinite round trip: %s", buf.p);
    results_sample_free(&b);
    const char *bad2 = "{\"idx\":0,\"id\":\"a\",\"gold\":0,\"logliks\":[1],\"char_lens\":[1],\"tok_lens\":[1],"
                       "\"is_greedy\":[0],\"pred\":0,\"pred_norm\":0,\"nonfinite\":2}";
    CHECK(results_sample_parse(&b, bad2, strlen(bad2), "x", &e) == ERR_FORMAT, "nonfinite 2 refused: %s", e.msg);
    const char *big = "{\"idx\":0,\"id\":\"a\",\"gold\":0,\"logliks\":[1],\"char_lens\":[1e300],\"tok_lens\":[1],"
                      "\"is_greedy\":[0],\"pred\":0,\"pred_norm\":0}";
    CHECK(results_sample_parse(&b, big, strlen(big), "x", &e) == ERR_FORMAT && strstr(e.msg, "char_lens"),
          "an integer beyond int refused (fuzz_samples): %s", e.msg);
    // niah's generation form: the decoded text survives a write and a re-read, escapes included
    a.generated = strdup(" is \"1234567\"\n\t\\ done");
    buf.n = 0;
    results_sample_line(&buf, &a);
    CHECK(results_sample_parse(&b, buf.p, buf.n - 1, "x", &e) == 0 && b.generated && !strcmp(b.generated, a.generated),
          "generated round trip: %s", buf.p);
    results_sample_free(&b);
    free(buf.p);
    results_sample_free(&a);
}

int main(void) {
    test_plot();
    test_summary_report();
    test_hostile_runs();
    test_line_roundtrip();
    test_writer_resume();
    test_paths();
    return test_summary("test_results");
}
