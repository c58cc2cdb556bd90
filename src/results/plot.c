// plot.c: SVG histogram curves (see plot.h). Layout: 640x400 canvas, plot area with a 60 px
// left and 50 px bottom margin, legend top right. Axis ticks sit at round values, multiples
// of a 1-2-5 step giving 3 to 6 ticks over the axis (not at bin edges such as 0.738, 1.48);
// numbers are printed with fixed rules so equal inputs give equal bytes.
#include "results/plot.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/results.h"

static const char *const palette[] = {"#222222", "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e",
                                      "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"};

double plot_nice_step(double x) {
    double p = pow(10, floor(log10(x))), m = x / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

// Ticks of a linear axis [lo, hi] drawn at pixel offset off + len * (v - lo) / (hi - lo):
// every multiple of the 1-2-5 step inside the range. AXIS_Y: labels on the left.
enum axis_dir { AXIS_X, AXIS_Y };
static int axis_ticks(struct results_buf *o, double lo, double hi, double off, double len, double base,
                      enum axis_dir dir) {
    const int vertical = dir == AXIS_Y;
    double step = plot_nice_step((hi - lo) / 5);
    int rc = 0;
    for (double k = ceil(lo / step - 1e-9); k <= floor(hi / step + 1e-9); k++) {
        double t = k * step, f = (t - lo) / (hi - lo);
        if (fabs(t) < 1e-9 * step) t = 0; // no "-0"
        if (vertical)
            rc |= results_buf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>"
                                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                                     base - 5, off - len * f, base, off - len * f, base - 8, off - len * f + 4, t);
        else
            rc |= results_buf_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>"
                                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                                     off + len * f, base, off + len * f, base + 5, off + len * f, base + 18, t);
    }
    return rc;
}

void plot_xml_escape(char *out, size_t n, const char *s) {
    size_t k = 0;
    if (!n) return;
    for (; s && *s && k + 7 < n; s++) {
        const char *r = NULL;
        switch (*s) {
        case '&': r = "&amp;"; break;
        case '<': r = "&lt;"; break;
        case '>': r = "&gt;"; break;
        case '"': r = "&quot;"; break;
        }
        if (r) { size_t l = strlen(r); memcpy(out + k, r, l); k += l; }
        else out[k++] = *s;
    }
    out[k] = 0;
}

// The canvas, the title, the plot area's frame and both axes' ticks (x over r[0..1], y over r[2..3]).
struct frame_geom { double W, H, L, T, pw, ph; };
static int frame(struct results_buf *o, struct frame_geom g, const char *title, const double r[4]) {
    char esc[512];
    int rc = results_buf_printf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                                    "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
                                    "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", g.W, g.H, g.W, g.H);
    plot_xml_escape(esc, sizeof esc, title);
    rc |= results_buf_printf(o, "<text x=\"%.1f\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">%s</text>\n", g.L + g.pw / 2, esc);
    rc |= results_buf_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#000\"/>\n",
                             g.L, g.T, g.pw, g.ph);
    rc |= axis_ticks(o, r[0], r[1], g.L, g.pw, g.T + g.ph, AXIS_X);
    return rc | axis_ticks(o, r[2], r[3], g.T + g.ph, g.ph, g.L, AXIS_Y);
}

int plot_hist_svg(char **svg, const char *title, const char *xlabel, const struct plot_series *s,
                  int n_series, struct plot_bins bins, struct err *e) {
    *svg = NULL;
    const int n_bins = bins.n;
    double lo = bins.lo, hi = bins.hi;
    if (n_bins < 1 || n_bins > 1000) return err_set(e, ERR_RANGE, "plot: %d bins (1..1000)", n_bins);
    if (!(lo < hi)) {
        lo = INFINITY; hi = -INFINITY;
        for (int k = 0; k < n_series; k++)
            for (int i = 0; i < s[k].n; i++)
                if (isfinite(s[k].v[i])) { if (s[k].v[i] < lo) lo = s[k].v[i]; if (s[k].v[i] > hi) hi = s[k].v[i]; }
        if (!(lo <= hi)) { lo = 0; hi = 1; }
        if (hi - lo < 1e-12) { hi = lo + 1; }
    }
    double *frac = calloc((size_t)n_bins * (size_t)(n_series > 0 ? n_series : 1), sizeof *frac);
    if (!frac) return err_set(e, ERR_NOMEM, "plot: out of memory");
    double ymax = 0;
    for (int k = 0; k < n_series; k++) {
        int cnt = 0;
        for (int i = 0; i < s[k].n; i++) {
            double v = s[k].v[i];
            if (!isfinite(v)) continue;
            // values outside [lo, hi] are counted in the first / last bin (overflow)
            int b = v <= lo ? 0 : v >= hi ? n_bins - 1 : (int)floor((v - lo) / (hi - lo) * n_bins);
            if (b >= n_bins) b = n_bins - 1;
            frac[(size_t)k * n_bins + b] += 1;
            cnt++;
        }
        for (int b = 0; b < n_bins; b++) {
            if (cnt) frac[(size_t)k * n_bins + b] /= cnt;
            if (frac[(size_t)k * n_bins + b] > ymax) ymax = frac[(size_t)k * n_bins + b];
        }
    }
    if (ymax <= 0) ymax = 1;
    ymax *= 1.05;
    const double W = 640, H = 400, L = 60, R = 20, T = 40, B = 50;
    const double pw = W - L - R, ph = H - T - B;
    struct results_buf o = {0};
    char esc[512];
    int rc = frame(&o, (struct frame_geom){W, H, L, T, pw, ph}, title, (double[4]){lo, hi, 0, ymax});
    plot_xml_escape(esc, sizeof esc, xlabel);
    rc |= results_buf_printf(&o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", L + pw / 2, H - 10, esc);
    rc |= results_buf_printf(&o, "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">fraction of items</text>\n", T + ph / 2);
    for (int k = 0; k < n_series; k++) {
        const char *col = palette[k % (int)(sizeof palette / sizeof palette[0])];
        rc |= results_buf_printf(&o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"%s points=\"", col,
                                 k >= 10 ? " stroke-dasharray=\"4 2\"" : "");
        for (int b = 0; b < n_bins; b++) {
            double y = T + ph - ph * frac[(size_t)k * n_bins + b] / ymax;
            rc |= results_buf_printf(&o, "%.1f,%.1f %.1f,%.1f ", L + pw * b / n_bins, y, L + pw * (b + 1) / n_bins, y);
        }
        rc |= results_buf_put(&o, "\"/>\n", 4);
        plot_xml_escape(esc, sizeof esc, s[k].label);
        double ly = T + 16 + 16 * k;
        rc |= results_buf_printf(&o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>"
                                     "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s (n=%d)</text>\n",
                                 L + pw - 30, ly - 4, L + pw - 8, ly - 4, col, L + pw - 36, ly, esc, s[k].n);
    }
    rc |= results_buf_put(&o, "</svg>\n", 7);
    free(frac);
    if (rc) { free(o.p); return err_set(e, ERR_NOMEM, "plot: out of memory"); }
    *svg = o.p;
    return 0;
}

// ---- empirical CDF ----
static const char *const dashes[] = {"", "6 3", "2 2", "8 3 2 3", "4 4", "1 3", "10 4"};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// One series' step curve: (lo, 0) then up by 1/n at each sorted value, flat to hi.
static int ecdf_curve(struct results_buf *o, const struct plot_series *s, double lo, double hi, struct frame_geom g) {
    const double L = g.L, T = g.T, pw = g.pw, ph = g.ph;
    double *v = malloc(sizeof *v * (size_t)(s->n > 0 ? s->n : 1));
    if (!v) return 1;
    int n = 0;
    for (int i = 0; i < s->n; i++) if (isfinite(s->v[i])) v[n++] = s->v[i];
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int rc = 0;
    double prev = 0;
    rc |= results_buf_printf(o, "%.1f,%.1f ", L, T + ph);
    for (int i = 0; i < n; i++) {
        if (i + 1 < n && v[i + 1] == v[i]) continue; // one step per distinct value
        const double x = v[i] < lo ? lo : v[i] > hi ? hi : v[i], f = (double)(i + 1) / n;
        const double X = L + pw * (x - lo) / (hi - lo);
        rc |= results_buf_printf(o, "%.1f,%.1f %.1f,%.1f ", X, T + ph - ph * prev, X, T + ph - ph * f);
        prev = f;
    }
    rc |= results_buf_printf(o, "%.1f,%.1f", L + pw, T + ph - ph * prev);
    free(v);
    return rc;
}

int plot_ecdf_svg(char **svg, const char *title, const char *xlabel, const struct plot_series *s, int n_series,
                  struct plot_range x, struct err *e) {
    *svg = NULL;
    double lo = x.lo, hi = x.hi;
    if (n_series < 0 || n_series > 64) return err_set(e, ERR_RANGE, "plot: %d series (0..64)", n_series);
    if (!(lo < hi)) {
        lo = INFINITY; hi = -INFINITY;
        for (int k = 0; k < n_series; k++)
            for (int i = 0; i < s[k].n; i++)
                if (isfinite(s[k].v[i])) { lo = fmin(lo, s[k].v[i]); hi = fmax(hi, s[k].v[i]); }
        if (!(lo <= hi)) { lo = 0; hi = 1; }
        if (hi - lo < 1e-12) hi = lo + 1;
    }
    // legend column to the right of the plot area, as wide as the longest label
    size_t longest = 0;
    for (int k = 0; k < n_series; k++) if (s[k].label && strlen(s[k].label) > longest) longest = strlen(s[k].label);
    const double legend_w = 40 + 7.0 * (double)(longest < 60 ? longest : 60);
    const double L = 60, T = 40, B = 50, pw = 520, ph = 330, W = L + pw + 20 + legend_w, H = T + ph + B;
    const int n_legend = n_series;
    struct results_buf o = {0};
    char esc[512];
    int rc = frame(&o, (struct frame_geom){W, H, L, T, pw, ph}, title, (double[4]){lo, hi, 0, 1});
    plot_xml_escape(esc, sizeof esc, xlabel);
    rc |= results_buf_printf(&o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", L + pw / 2, H - 10, esc);
    rc |= results_buf_printf(&o, "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">fraction of "
                                 "items &lt;= x</text>\n", T + ph / 2);
    for (int k = 0; k < n_series && !rc; k++) {
        const char *col = palette[k % (int)(sizeof palette / sizeof palette[0])];
        const char *dash = dashes[k % (int)(sizeof dashes / sizeof dashes[0])];
        char da[40] = "";
        if (dash[0]) snprintf(da, sizeof da, " stroke-dasharray=\"%s\"", dash);
        rc |= results_buf_printf(&o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s points=\"", col, da);
        rc |= ecdf_curve(&o, &s[k], lo, hi, (struct frame_geom){W, H, L, T, pw, ph});
        rc |= results_buf_put(&o, "\"/>\n", 4);
        plot_xml_escape(esc, sizeof esc, s[k].label ? s[k].label : "");
        const double lx = L + pw + 16, ly = T + 12 + 18 * k;
        if (k < n_legend)
            rc |= results_buf_printf(&o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>"
                                         "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                                     lx, ly - 4, lx + 28, ly - 4, col, da, lx + 34, ly, esc);
    }
    rc |= results_buf_put(&o, "</svg>\n", 7);
    if (rc) { free(o.p); return err_set(e, ERR_NOMEM, "plot: out of memory"); }
    *svg = o.p;
    return 0;
}
