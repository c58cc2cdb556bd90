// test_paper_values.c: the paper's values in configs/paper/ (what `tables` puts beside ours)
// checked against the paper: every cell against the transcription ../shared/paper/tables.md
// (skipped without it), and what the paper derives recomputed from the cells it derives it
// from - Table 3's percentages from counts and N, Table 5's Delta_avg and Delta_w from its
// accuracy columns and the set sizes, Table 6's Delta Hu from Hu and its accuracy gaps from
// Hu, He and N - plus the tables that print the same numbers agreeing (Table 3 with Table 7's
// rows A and E, Table 5 with Tables 2 and 6). Also paper_number / paper_diff / latex_escape.
#include "test.h"

#include "results/grid.h"
#include "results/paper.h"

static struct paper_values pv;

static double num(int table, const char *row, const char *col) {
    const char *s = paper_get(&pv, table, row, col);
    double v;
    int u, d;
    CHECK(s && paper_number(s, &v, &u, &d), "table %d [%s][%s] = '%s': a number", table, row, col, s ? s : "(none)");
    return s && paper_number(s, &v, &u, &d) ? v : NAN;
}

static void test_load(void) {
    struct err e = {0};
    CHECK(paper_load(&pv, "configs/paper", &e) == 0, "load: %s", e.msg);
    static const int cells[11] = {0, 25, 40, 16, 15, 60, 90, 50, 15, 40, 15}; // rows x value columns of each table
    for (int t = 1; t <= 10; t++) {
        int n = 0;
        for (int i = 0; i < pv.n; i++) n += pv.cell[i].table == t;
        CHECK(n == cells[t], "table %d: %d cells, want %d", t, n, cells[t]);
    }
}

// Every cell of configs/paper/ is the transcription's, and every cell of the transcription is there.
static void test_against_transcription(void) {
    const char *md = TEST_NEED("paper/tables.md");
    if (!md) return;
    char *buf;
    size_t len;
    struct err e = {0};
    CHECK(file_read_all(md, &buf, &len, &e) == 0, "read %s", md);
    int table = 0, keycols = 1, n_hdr = 0, seen = 0, line_no = 0;
    char hdr[16][64], prev[3][128] = {"", "", ""};
    for (char *s = buf, *nl; s && *s; s = nl ? nl + 1 : NULL) {
        nl = strchr(s, '\n');
        if (nl) *nl = 0;
        if (!strncmp(s, "## Table ", 9)) { table = atoi(s + 9); keycols = table == 5 ? 2 : table == 6 ? 3 : 1; line_no = 0; continue; }
        if (!table || s[0] != '|') continue;
        char *f[16];
        int nf = 0;
        for (char *p = s + 1, *bar; (bar = strchr(p, '|')) && nf < 16; p = bar + 1) {
            *bar = 0;
            while (*p == ' ') p++;
            for (char *q = bar - 1; q >= p && *q == ' '; q--) *q = 0;
            f[nf++] = p;
        }
        if (line_no++ == 0) { n_hdr = nf; for (int k = 0; k < nf; k++) snprintf(hdr[k], sizeof hdr[k], "%s", f[k]); continue; }
        if (line_no == 2) continue; // |---|
        char row[400] = "";
        for (int k = 0; k < keycols; k++) {
            if (f[k][0]) snprintf(prev[k], sizeof prev[k], "%s", f[k]);
            snprintf(row + strlen(row), sizeof row - strlen(row), "%s%s", k ? " / " : "", prev[k]);
        }
        for (int k = keycols; k < nf && k < n_hdr; k++) {
            const char *v = paper_get(&pv, table, row, hdr[k]), *want = f[k];
            if (table == 2 && !strcmp(row, "Direct HIF4") && !strcmp(hdr[k], "delta_w")) want = "1.12"; // its dagger: README
            CHECK(v && !strcmp(v, want), "table %d [%s][%s]: configs/paper '%s', paper '%s'", table, row, hdr[k], v ? v : "(none)", want);
            seen++;
        }
    }
    CHECK(seen == pv.n, "the transcription has %d cells, configs/paper %d", seen, pv.n);
    free(buf);
}

// Table 3: "7.46%(22)" = 22 / 295; the counts are Table 7's rows A and E.
static void test_table3(void) {
    static const char *const rows[4] = {"ARC-C (295)", "TruthfulQA (817)", "MMLU (14k)", "HellaSwag (10k)"};
    static const char *const t7[4] = {"ARC", "TruthfulQA", "MMLU", "HellaSwag"};
    static const int n[4] = {295, 817, 14042, 10042};
    for (int r = 0; r < 4; r++)
        for (int m = 0; m < 2; m++) {
            const char *s = paper_get(&pv, 3, rows[r], m ? "Flip Rate HiFA4" : "Flip Rate Direct");
            const char *paren = s ? strchr(s, '(') : NULL;
            CHECK(paren, "table 3 %s: 'pct%%(count)'", rows[r]);
            if (!paren) continue;
            int count = atoi(paren + 1);
            char want[64], col[64];
            snprintf(want, sizeof want, "%.2f%%(%d)", 100.0 * count / n[r], count);
            CHECK(!strcmp(s, want), "table 3 %s: printed %s, %d / %d = %s", rows[r], s, count, n[r], want);
            const char *cfg = m ? "E. Both (HiFA4)" : "A. Direct HIF4";
            snprintf(col, sizeof col, "%s Flip", t7[r]);
            CHECK(num(7, cfg, col) == count, "table 3 %s flips %d = table 7 %s %s", rows[r], count, cfg, col);
            snprintf(col, sizeof col, "%s Hurt", t7[r]);
            CHECK(num(7, cfg, col) == num(3, rows[r], m ? "Quant Hurts HiFA4" : "Quant Hurts Direct"),
                  "table 3 %s hurts = table 7 %s %s", rows[r], cfg, col);
        }
}

// Table 5: Delta_avg = mean of the 4 gaps, Delta_w = gaps weighted by the set sizes; each
// printed to one decimal, so within 0.05 pp of the value recomputed from the printed accuracies.
static void test_table5(void) {
    static const char *const models[5] = {"Qwen3-8B (Strong)", "Gemma2-9B (Mild)", "LLaMA3.1-8B (Bypass)",
                                          "Mistral-7B (Bypass)", "Phi-4B (Bypass)"};
    static const char *const cols[4] = {"MMLU", "ARC", "TQA", "Hella"};
    static const double n[4] = {14042, 295, 817, 10042};
    for (int m = 0; m < 5; m++) {
        char b[96], h[96];
        snprintf(b, sizeof b, "%s / BF16", models[m]);
        snprintf(h, sizeof h, "%s / HiFA4", models[m]);
        double avg = 0, w = 0, nw = 0;
        for (int k = 0; k < 4; k++) {
            double gap = num(5, h, cols[k]) - num(5, b, cols[k]);
            avg += gap / 4;
            w += n[k] * gap;
            nw += n[k];
        }
        CHECK(fabs(100 * avg - num(5, h, "Delta_avg")) <= 0.05 + 1e-9, "table 5 %s: Delta_avg %.3f pp, printed %g", models[m],
              100 * avg, num(5, h, "Delta_avg"));
        CHECK(fabs(100 * w / nw - num(5, h, "Delta_w")) <= 0.05 + 1e-9, "table 5 %s: Delta_w %.3f pp, printed %g", models[m],
              100 * w / nw, num(5, h, "Delta_w"));
    }
    // Table 2's BF16 and RMS rows are Table 5's Qwen3-8B rows; its delta_w is Table 5's -Delta_w
    static const char *const t2[4] = {"MMLU", "ARC", "TQA", "Hella"};
    for (int k = 0; k < 4; k++) {
        CHECK(num(2, "BF16", t2[k]) == num(5, "Qwen3-8B (*) / BF16", cols[k]), "table 2 BF16 %s = table 5", t2[k]);
        CHECK(num(2, "RMS (used)", t2[k]) == num(5, "Qwen3-8B (*) / HiFA4", cols[k]), "table 2 RMS %s = table 5", t2[k]);
    }
    CHECK(fabs(num(2, "RMS (used)", "delta_w") + num(5, "Qwen3-8B (*) / HiFA4", "Delta_w")) <= 0.05, "table 2 delta_w vs table 5");
}

// Table 6: Delta Hu = (Hu_HiFA4 - Hu_Direct) / Hu_Direct; Acc - Acc_BF16 = (He - Hu) / N (4-decimal
// accuracies: within 1e-4 + rounding); its MMLU accuracies rounded are Table 5's.
static void test_table6(void) {
    static const char *const models[3] = {"LLaMA3.1-8B", "Mistral-7B", "Phi-4B"};
    static const char *const sets[2] = {"MMLU", "HellaSwag"};
    static const char *const t5col[2] = {"MMLU", "Hella"};
    static const double n[2] = {14042, 10042};
    for (int m = 0; m < 3; m++)
        for (int s = 0; s < 2; s++) {
            char row[3][128];
            static const char *const meth[3] = {"BF16", "Direct HIF4", "HiFA4"};
            for (int k = 0; k < 3; k++) snprintf(row[k], sizeof row[k], "%s / %s / %s", models[m], sets[s], meth[k]);
            double hd = num(6, row[1], "Hu"), hh = num(6, row[2], "Hu");
            char want[32];
            snprintf(want, sizeof want, "%.1f%%", 100 * (hh - hd) / hd);
            const char *got = paper_get(&pv, 6, row[2], "Delta Hu");
            CHECK(got && !strcmp(got, want), "table 6 %s: Delta Hu printed %s, (%g - %g) / %g = %s", row[2], got ? got : "-", hh, hd, hd, want);
            for (int k = 1; k < 3; k++) {
                double gap = num(6, row[k], "Acc") - num(6, row[0], "Acc"), hh2 = (num(6, row[k], "He") - num(6, row[k], "Hu")) / n[s];
                CHECK(fabs(gap - hh2) <= 1.5e-4, "table 6 %s: Acc gap %.4f, (He - Hu) / N %.4f", row[k], gap, hh2);
                CHECK(num(6, row[k], "Fl") >= num(6, row[k], "Hu") + num(6, row[k], "He"), "table 6 %s: Fl >= Hu + He", row[k]);
            }
            char r5[96];
            snprintf(r5, sizeof r5, "%s (*) / BF16", models[m]);
            CHECK(fabs(num(5, r5, t5col[s]) - num(6, row[0], "Acc")) <= 0.0005 + 1e-9, "table 5 %s %s = table 6 rounded", r5, t5col[s]);
        }
}

// Table 1: the gate condition and the action follow from rho_K and T_K/Q (rho_K >= 6; T_K/Q > 3
// Strong, 2..3 Mild; else Bypass).
static void test_table1(void) {
    static const char *const models[5] = {"Qwen3-8B", "Gemma2-9B", "LLaMA3.1-8B", "Mistral-7B", "Phi-4B"};
    for (int m = 0; m < 5; m++) {
        double rho = num(1, models[m], "rho_K"), t = num(1, models[m], "T_K/Q");
        const char *act = paper_get(&pv, 1, models[m], "Action");
        const char *want = rho >= 6 && t > 3 ? "Strong (alpha=0.5)" : rho >= 6 && t >= 2 ? "Mild (alpha=0.25)" : "Bypass (s=1)";
        CHECK(act && !strcmp(act, want), "table 1 %s: rho %g T %g: action %s, want %s", models[m], rho, t, act ? act : "-", want);
    }
}

static void test_helpers(void) {
    double v;
    int u, d;
    CHECK(paper_number(".885", &v, &u, &d) && v == 0.885 && u == 0 && d == 3, ".885");
    CHECK(paper_number("7.46%(22)", &v, &u, &d) && v == 7.46 && u == 1 && d == 2, "7.46%%(22)");
    CHECK(paper_number("-0.7 pp", &v, &u, &d) && v == -0.7 && u == 2 && d == 1, "-0.7 pp");
    CHECK(paper_number("~12%", &v, &u, &d) && v == 12 && u == 1, "~12%%");
    CHECK(!paper_number("0.87-1.75", &v, &u, &d) && !paper_number("-", &v, &u, &d) && !paper_number("Strong (alpha=0.5)", &v, &u, &d),
          "ranges, dashes and words are not numbers");
    char b[64];
    paper_diff(b, sizeof b, "5.00%(4)", "7.46%(22)");
    CHECK(!strcmp(b, "-2.46 pp"), "diff of percents in pp: %s", b);
    paper_diff(b, sizeof b, ".350", ".885");
    CHECK(!strcmp(b, "-0.535"), "diff of fractions: %s", b);
    paper_diff(b, sizeof b, "0.65", "0.65");
    CHECK(!strcmp(b, "+0.00"), "no -0.00: %s", b);
    paper_diff(b, sizeof b, "3", "0.87-1.75");
    CHECK(!b[0], "no diff against a range");
    CHECK(paper_model_of("Qwen/Qwen3-8B") && !strcmp(paper_model_of("qwen3-8b"), "Qwen3-8B") &&
              !strcmp(paper_model_of("Meta-Llama-3.1-8B"), "LLaMA3.1-8B") && !strcmp(paper_model_of("phi4-mini"), "Phi-4B") &&
              !paper_model_of("SmolLM2-135M-Instruct"), "paper model names");
    struct results_buf o = {0};
    CHECK(latex_escape(&o, "a_b 5% x&y #1 {z} ~ \\ ^ \xe2\x9c\x93 \xce\x94") == 0 &&
              !strcmp(o.p, "a\\_b 5\\% x\\&y \\#1 \\{z\\} \\textasciitilde{} \\textbackslash{} \\textasciicircum{} \\checkmark{} $\\Delta$"),
          "latex_escape: %s", o.p ? o.p : "");
    free(o.p);
}

int main(void) {
    test_load();
    test_against_transcription();
    test_table1();
    test_table3();
    test_table5();
    test_table6();
    test_helpers();
    paper_free(&pv);
    return test_summary("test_paper_values");
}
