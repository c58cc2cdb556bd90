// plot_xy.c: line charts, heat maps and region planes as SVG (see plot_xy.h). Layout: 720 px
// wide canvas, 70 px left margin, legend or colour bar in a 160 px right margin. Coordinates
// are printed with %.2f and labels with %.6g, so equal inputs give equal bytes.
#include "results/plot_xy.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "results/plot.h"
#include "results/results.h"

static const char *const palette[] = {"#222222", "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e",
                                      "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"};
#define N_PALETTE ((int)(sizeof palette / sizeof palette[0]))
#define MAX_TICKS 24

// ---- axes ----
struct axis_r {
    double lo, hi; // drawn range (for log axes: positive)
    int log;
    double ticks[MAX_TICKS];
    int n_ticks;
};


static int drawable(const struct axis_r *a, double v) { return isfinite(v) && (!a->log || v > 0); }

// dmin/dmax: extent of the drawable data (dmin > dmax when there is none)
static void axis_resolve(struct axis_r *a, const struct plot_axis *ax, double dmin, double dmax) {
    memset(a, 0, sizeof *a);
    a->log = ax->log;
    int fixed = ax->lo < ax->hi && (!ax->log || ax->lo > 0);
    if (a->log) {
        double lo, hi;
        if (fixed) { lo = ax->lo; hi = ax->hi; }
        else if (!(dmin <= dmax)) { lo = 1; hi = 10; }
        else {
            lo = pow(10, floor(log10(dmin)));
            hi = pow(10, ceil(log10(dmax)));
            if (!(hi > lo)) hi = lo * 10;
        }
        a->lo = lo; a->hi = hi;
        int k0 = (int)ceil(log10(lo) - 1e-9), k1 = (int)floor(log10(hi) + 1e-9);
        int every = (k1 - k0) / (MAX_TICKS - 1) + 1;
        for (int k = k0; k <= k1 && a->n_ticks < MAX_TICKS; k += every) a->ticks[a->n_ticks++] = pow(10, k);
        if (k1 - k0 < 2) // short range: 2x and 5x minor labels too
            for (int k = k0 - 1; k <= k1 && a->n_ticks < MAX_TICKS; k++)
                for (int m = 2; m <= 5; m += 3) {
                    double t = m * pow(10, k);
                    if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9) && a->n_ticks < MAX_TICKS) a->ticks[a->n_ticks++] = t;
                }
        return;
    }
    double lo, hi, step;
    if (fixed) {
        lo = ax->lo; hi = ax->hi;
        step = plot_nice_step((hi - lo) / 5);
    } else {
        if (!(dmin <= dmax)) { dmin = 0; dmax = 1; }
        if (dmax - dmin <= 1e-12 * (fabs(dmin) + fabs(dmax)) || dmax == dmin) {
            double w = fabs(dmin) > 0 ? fabs(dmin) * 0.1 : 1;
            dmin -= w; dmax += w;
        }
        step = plot_nice_step((dmax - dmin) / 5);
        lo = floor(dmin / step) * step;
        hi = ceil(dmax / step) * step;
        if (!(hi > lo)) hi = lo + step;
    }
    a->lo = lo; a->hi = hi;
    double k0 = ceil(lo / step - 1e-9), k1 = floor(hi / step + 1e-9);
    for (double k = k0; k <= k1 && a->n_ticks < MAX_TICKS; k++) {
        double t = k * step;
        if (fabs(t) < 1e-12 * step) t = 0; // no "-0"
        a->ticks[a->n_ticks++] = t;
    }
}

static double axis_frac(const struct axis_r *a, double v) {
    if (a->log) return (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
    return (v - a->lo) / (a->hi - a->lo);
}

// ---- canvas ----
struct canvas {
    struct results_buf o;
    int rc;
    double W, H, L, T, pw, ph; // canvas size, plot area origin and size
};

static void put(struct canvas *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct canvas *c, const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) { c->rc = -1; return; }
    if ((size_t)n >= sizeof buf) { // long line: format again into the buffer directly
        char *big = malloc((size_t)n + 1);
        if (!big) { c->rc = -1; return; }
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        if (results_buf_put(&c->o, big, (size_t)n)) c->rc = -1;
        free(big);
        return;
    }
    if (results_buf_put(&c->o, buf, (size_t)n)) c->rc = -1;
}

// A canvas's geometry: its size W x H and the plot area's origin (L, T) and size pw x ph.
struct frame {
    double W, H, L, T, pw, ph;
};

static void canvas_begin(struct canvas *c, struct frame f, const char *title) {
    const double W = f.W, H = f.H, L = f.L, T = f.T, pw = f.pw, ph = f.ph;
    memset(c, 0, sizeof *c);
    c->W = W; c->H = H; c->L = L; c->T = T; c->pw = pw; c->ph = ph;
    char esc[512];
    put(c, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
           "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
        W, H, W, H);
    plot_xml_escape(esc, sizeof esc, title ? title : "");
    put(c, "<text x=\"%.2f\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">%s</text>\n", L + pw / 2, esc);
    put(c, "<defs><clipPath id=\"area\"><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/></clipPath></defs>\n",
        L, T, pw, ph);
}

static int canvas_end(struct canvas *c, char **svg, struct err *e) {
    put(c, "</svg>\n");
    if (c->rc) { free(c->o.p); return err_set(e, ERR_NOMEM, "plot: out of memory"); }
    *svg = c->o.p;
    return 0;
}

static double cx(const struct canvas *c, const struct axis_r *a, double v) { return c->L + c->pw * axis_frac(a, v); }
static double cy(const struct canvas *c, const struct axis_r *a, double v) {
    return c->T + c->ph - c->ph * axis_frac(a, v);
}

static void draw_axes(struct canvas *c, const struct axis_r *xa, const struct axis_r *ya, const char *xlabel,
                      const char *ylabel) {
    char esc[512];
    for (int i = 0; i < xa->n_ticks; i++) {
        double x = cx(c, xa, xa->ticks[i]);
        put(c, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000\"/>"
               "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%.6g</text>\n",
            x, c->T + c->ph, x, c->T + c->ph + 5, x, c->T + c->ph + 18, xa->ticks[i]);
    }
    for (int i = 0; i < ya->n_ticks; i++) {
        double y = cy(c, ya, ya->ticks[i]);
        put(c, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000\"/>"
               "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#ddd\"/>"
               "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%.6g</text>\n",
            c->L - 5, y, c->L, y, c->L, y, c->L + c->pw, y, c->L - 8, y + 4, ya->ticks[i]);
    }
    put(c, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#000\"/>\n", c->L, c->T,
        c->pw, c->ph);
    plot_xml_escape(esc, sizeof esc, xlabel ? xlabel : "");
    put(c, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%s</text>\n", c->L + c->pw / 2, c->T + c->ph + 38, esc);
    plot_xml_escape(esc, sizeof esc, ylabel ? ylabel : "");
    put(c, "<text transform=\"translate(16 %.2f) rotate(-90)\" text-anchor=\"middle\">%s</text>\n", c->T + c->ph / 2,
        esc);
}

// ---- line chart ----
int plot_line_svg(char **svg, const char *title, const struct plot_axis *xa, const struct plot_axis *ya,
                  const struct plot_xy_series *s, int n_series, struct err *e) {
    *svg = NULL;
    if (n_series < 0 || n_series > 64) return err_set(e, ERR_RANGE, "plot: %d series (0..64)", n_series);
    for (int k = 0; k < n_series; k++)
        if (s[k].n < 0) return err_set(e, ERR_RANGE, "plot: series %d has %d points", k, s[k].n);
    // data extents over the points drawable on both axes
    struct axis_r ax, ay;
    struct axis_r probe_x = {.log = xa->log}, probe_y = {.log = ya->log};
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int k = 0; k < n_series; k++)
        for (int i = 0; i < s[k].n; i++) {
            double x = s[k].x[i], y = s[k].y[i];
            if (!drawable(&probe_x, x) || !drawable(&probe_y, y)) continue;
            x0 = fmin(x0, x); x1 = fmax(x1, x); y0 = fmin(y0, y); y1 = fmax(y1, y);
        }
    axis_resolve(&ax, xa, x0, x1);
    axis_resolve(&ay, ya, y0, y1);
    struct canvas c;
    canvas_begin(&c, (struct frame){800, 420, 70, 40, 480, 330}, title);
    draw_axes(&c, &ax, &ay, xa->label, ya->label);
    char esc[512];
    for (int k = 0; k < n_series; k++) {
        const char *col = palette[k % N_PALETTE];
        put(&c, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"%s clip-path=\"url(#area)\" d=\"", col,
            k >= N_PALETTE ? " stroke-dasharray=\"5 3\"" : "");
        int pen = 0;
        for (int i = 0; i < s[k].n; i++) {
            double x = s[k].x[i], y = s[k].y[i];
            if (!drawable(&ax, x) || !drawable(&ay, y)) { pen = 0; continue; }
            put(&c, "%s%.2f %.2f ", pen ? "L" : "M", cx(&c, &ax, x), cy(&c, &ay, y));
            pen = 1;
        }
        put(&c, "\"/>\n");
        if (s[k].markers)
            for (int i = 0; i < s[k].n; i++) {
                double x = s[k].x[i], y = s[k].y[i];
                if (!drawable(&ax, x) || !drawable(&ay, y)) continue;
                put(&c, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\" clip-path=\"url(#area)\"/>\n",
                    cx(&c, &ax, x), cy(&c, &ay, y), col);
            }
        plot_xml_escape(esc, sizeof esc, s[k].label ? s[k].label : "");
        double ly = c.T + 10 + 18 * k, lx = c.L + c.pw + 12;
        put(&c, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" stroke-width=\"2\"/>"
                "<text x=\"%.2f\" y=\"%.2f\">%s</text>\n",
            lx, ly - 4, lx + 22, ly - 4, col, lx + 28, ly, esc);
    }
    return canvas_end(&c, svg, e);
}

// ---- heat map ----
// Five-stop ramp (dark blue -> teal -> yellow, after viridis), f in [0, 1].
static void ramp(double f, char out[8]) {
    static const int stops[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
    if (!(f >= 0)) f = 0;
    if (f > 1) f = 1;
    double p = f * 4;
    int i = (int)floor(p);
    if (i > 3) i = 3;
    double t = p - i;
    int rgb[3];
    for (int k = 0; k < 3; k++) rgb[k] = (int)lround(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * t);
    snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

int plot_heatmap_svg(char **svg, const char *title, const char *xlabel, const char *ylabel, const char *value_label,
                     struct plot_grid g, struct err *e) {
    *svg = NULL;
    const double *v = g.v;
    const int rows = g.rows, cols = g.cols;
    if (rows < 1 || cols < 1 || (int64_t)rows * cols > (1 << 20))
        return err_set(e, ERR_RANGE, "plot: heat map of %d x %d cells", rows, cols);
    double vmax = 0;
    for (int64_t i = 0; i < (int64_t)rows * cols; i++)
        if (isfinite(v[i]) && v[i] > vmax) vmax = v[i];
    double ph = rows * 14.0;
    if (ph < 80) ph = 80;
    if (ph > 420) ph = 420;
    struct canvas c;
    canvas_begin(&c, (struct frame){720, ph + 100, 70, 40, 540, ph}, title);
    const double cw = c.pw / cols, rh = c.ph / rows;
    char col[8], esc[512];
    put(&c, "<g shape-rendering=\"crispEdges\">\n");
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < cols; k++) {
            double x = v[(size_t)r * cols + k];
            if (isfinite(x)) ramp(vmax > 0 ? x / vmax : 0, col);
            else snprintf(col, sizeof col, "#999999");
            put(&c, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n", c.L + cw * k,
                c.T + rh * r, cw, rh, col);
        }
    put(&c, "</g>\n");
    put(&c, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#000\"/>\n", c.L, c.T,
        c.pw, c.ph);
    double xs = cols <= 16 ? 1 : plot_nice_step(cols / 8.0), ys = rows <= 16 ? 1 : plot_nice_step(rows / 8.0);
    for (double k = 0; k < cols; k += xs) {
        double x = c.L + cw * (k + 0.5);
        put(&c, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000\"/>"
                "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%.0f</text>\n",
            x, c.T + c.ph, x, c.T + c.ph + 5, x, c.T + c.ph + 18, k);
    }
    for (double r = 0; r < rows; r += ys) {
        double y = c.T + rh * (r + 0.5);
        put(&c, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%.0f</text>\n", c.L - 8, y + 4, r);
    }
    plot_xml_escape(esc, sizeof esc, xlabel ? xlabel : "");
    put(&c, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%s</text>\n", c.L + c.pw / 2, c.T + c.ph + 38, esc);
    plot_xml_escape(esc, sizeof esc, ylabel ? ylabel : "");
    put(&c, "<text transform=\"translate(16 %.2f) rotate(-90)\" text-anchor=\"middle\">%s</text>\n", c.T + c.ph / 2,
        esc);
    // colour bar: 20 steps from 0 (bottom) to vmax (top)
    const double bx = c.L + c.pw + 20, bw = 18;
    for (int i = 0; i < 20; i++) {
        ramp((i + 0.5) / 20, col);
        put(&c, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n", bx,
            c.T + c.ph - c.ph * (i + 1) / 20, bw, c.ph / 20, col);
    }
    put(&c, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#000\"/>\n", bx, c.T,
        bw, c.ph);
    put(&c, "<text x=\"%.2f\" y=\"%.2f\">%.4g</text><text x=\"%.2f\" y=\"%.2f\">0</text>\n", bx + bw + 4, c.T + 10,
        vmax, bx + bw + 4, c.T + c.ph);
    plot_xml_escape(esc, sizeof esc, value_label ? value_label : "");
    put(&c, "<text transform=\"translate(%.2f %.2f) rotate(-90)\" text-anchor=\"middle\">%s</text>\n", bx + bw + 40,
        c.T + c.ph / 2, esc);
    return canvas_end(&c, svg, e);
}

// ---- plane with regions ----
static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

// ---- point labels that do not overlap ----
// A label's box on the canvas (x0..x1, y0..y1) and where its text is anchored.
struct box { double x0, x1, y0, y1, ax, ay; const char *anchor; };

static double overlap(const struct box *a, const struct box *b) {
    double w = fmin(a->x1, b->x1) - fmax(a->x0, b->x0), h = fmin(a->y1, b->y1) - fmax(a->y0, b->y0);
    return w > 0 && h > 0 ? w * h : 0;
}

// The first of 12 positions around the point (right, left, above, below, then further out)
// whose box stays on the canvas and overlaps no label placed before; else the one overlapping
// least. Text width is estimated from the character count (6.2 px at 11 px, 7.4 px bold 12 px).
static struct box place_label(const struct canvas *c, const struct box *placed, int n_placed, double X, double Y,
                              const char *label, int emphasis) {
    static const double cand[12][2] = {{8, -6}, {8, 14}, {-8, -6}, {-8, 14}, {0, -12}, {0, 22},
                                       {8, -20}, {-8, -20}, {8, 28}, {-8, 28}, {0, -26}, {0, 36}};
    const double w = (double)strlen(label) * (emphasis ? 7.4 : 6.2), h = emphasis ? 13 : 12;
    struct box best = {0};
    double best_cost = INFINITY;
    for (int k = 0; k < 12; k++) {
        const double dx = cand[k][0], dy = cand[k][1];
        struct box b = {.ax = X + dx, .ay = Y + dy, .anchor = dx > 0 ? "start" : dx < 0 ? "end" : "middle"};
        b.x0 = dx > 0 ? b.ax : dx < 0 ? b.ax - w : b.ax - w / 2;
        b.x1 = b.x0 + w;
        b.y0 = b.ay - h + 2, b.y1 = b.ay + 2;
        double cost = 0;
        for (int j = 0; j < n_placed; j++) cost += overlap(&b, &placed[j]);
        if (b.x0 < 2 || b.x1 > c->W - 2 || b.y0 < c->T || b.y1 > c->T + c->ph) cost += 1e6;
        if (cost < best_cost) best = b, best_cost = cost;
        if (cost == 0) break;
    }
    return best;
}

int plot_plane_svg(char **svg, const char *title, const struct plot_axis *xa, const struct plot_axis *ya,
                   const struct plot_plane *pl, struct err *e) {
    *svg = NULL;
    const struct plot_region *r = pl->r;
    const struct plot_point *p = pl->p;
    const int n_regions = pl->n_regions, n_points = pl->n_points;
    if (n_regions < 0 || n_regions > 64 || n_points < 0 || n_points > 256)
        return err_set(e, ERR_RANGE, "plot: %d regions (0..64), %d points (0..256)", n_regions, n_points);
    struct axis_r ax, ay;
    struct axis_r probe_x = {.log = xa->log}, probe_y = {.log = ya->log};
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int i = 0; i < n_points; i++) {
        if (!drawable(&probe_x, p[i].x) || !drawable(&probe_y, p[i].y)) continue;
        x0 = fmin(x0, p[i].x); x1 = fmax(x1, p[i].x); y0 = fmin(y0, p[i].y); y1 = fmax(y1, p[i].y);
    }
    // finite region corners count as data, so the thresholds stay visible
    for (int i = 0; i < n_regions; i++) {
        const double xs[2] = {r[i].x0, r[i].x1}, ys[2] = {r[i].y0, r[i].y1};
        for (int k = 0; k < 2; k++) {
            if (drawable(&probe_x, xs[k])) { x0 = fmin(x0, xs[k]); x1 = fmax(x1, xs[k]); }
            if (drawable(&probe_y, ys[k])) { y0 = fmin(y0, ys[k]); y1 = fmax(y1, ys[k]); }
        }
    }
    // 8% headroom so a point at the data maximum does not sit on the frame (linear axes)
    if (!xa->log && x0 <= x1) x1 += 0.08 * (x1 - x0);
    if (!ya->log && y0 <= y1) y1 += 0.08 * (y1 - y0);
    axis_resolve(&ax, xa, x0, x1);
    axis_resolve(&ay, ya, y0, y1);
    struct canvas c;
    canvas_begin(&c, (struct frame){720, 460, 70, 40, 560, 360}, title);
    char esc[512];
    for (int i = 0; i < n_regions; i++) {
        double a = clampd(r[i].x0, ax.lo, ax.hi), b = clampd(r[i].x1, ax.lo, ax.hi);
        double lo = clampd(r[i].y0, ay.lo, ay.hi), hi = clampd(r[i].y1, ay.lo, ay.hi);
        if (!(b > a) || !(hi > lo)) continue;
        double X0 = cx(&c, &ax, a), X1 = cx(&c, &ax, b), Y0 = cy(&c, &ay, hi), Y1 = cy(&c, &ay, lo);
        put(&c, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" stroke=\"#888\"/>\n", X0, Y0,
            X1 - X0, Y1 - Y0, r[i].fill ? r[i].fill : "#eeeeee");
        if (r[i].label) {
            plot_xml_escape(esc, sizeof esc, r[i].label);
            put(&c, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"15\" fill=\"#444\">%s</text>\n",
                (X0 + X1) / 2, (Y0 + Y1) / 2 + 5, esc);
        }
    }
    draw_axes(&c, &ax, &ay, xa->label, ya->label);
    // labels avoid every point and the labels placed before them
    struct box placed[512];
    int n_placed = 0;
    double PX[256], PY[256];
    for (int i = 0; i < n_points; i++) {
        double x = ax.log && p[i].x <= 0 ? ax.lo : clampd(p[i].x, ax.lo, ax.hi);
        double y = ay.log && p[i].y <= 0 ? ay.lo : clampd(p[i].y, ay.lo, ay.hi);
        PX[i] = cx(&c, &ax, x), PY[i] = cy(&c, &ay, y);
        const double rr = p[i].emphasis ? 7 : 4.5;
        if (isfinite(p[i].x) && isfinite(p[i].y)) placed[n_placed++] = (struct box){PX[i] - rr, PX[i] + rr, PY[i] - rr, PY[i] + rr, 0, 0, ""};
    }
    for (int i = 0; i < n_points; i++) {
        if (!isfinite(p[i].x) || !isfinite(p[i].y)) continue;
        double X = PX[i], Y = PY[i];
        if (p[i].emphasis)
            put(&c, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"6\" fill=\"#d62728\" stroke=\"#000\"/>\n", X, Y);
        else
            put(&c, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" fill=\"#555555\"/>\n", X, Y);
        if (p[i].label) {
            plot_xml_escape(esc, sizeof esc, p[i].label);
            struct box b = place_label(&c, placed, n_placed, X, Y, p[i].label, p[i].emphasis);
            placed[n_placed++] = b;
            put(&c, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\"%s>%s</text>\n", b.ax, b.ay, b.anchor,
                p[i].emphasis ? " font-weight=\"bold\"" : " fill=\"#555\" font-size=\"11\"", esc);
        }
    }
    return canvas_end(&c, svg, e);
}
