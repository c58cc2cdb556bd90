// plot.h: a small SVG writer for the report's figures: histograms drawn as step curves, one
// curve per series on shared bins, and empirical CDFs (the decision margins of the report, one
// curve per attention mode: paper Fig. 9's quantity in a form where 7 modes stay readable). Pure text output, no I/O; deterministic bytes for equal inputs.
#ifndef HIFA4_PLOT_H
#define HIFA4_PLOT_H

#include "base/common.h"

struct plot_series {
    const char *label;   // legend text
    const double *v;     // [n] values; non-finite values are skipped
    int n;
};

// The bins of a histogram: n equal-width bins over [lo, hi] (lo >= hi: the range of all
// finite values; values outside are counted in the first/last bin).
struct plot_bins {
    int n;
    double lo, hi;
};

// Renders a histogram SVG into a malloc'd NUL-terminated string *svg (caller frees) over the
// bins; each curve shows the fraction of its series per bin. Errors: bins.n < 1 or > 1000
// (ERR_RANGE), OOM.
int plot_hist_svg(char **svg, const char *title, const char *xlabel, const struct plot_series *s,
                  int n_series, struct plot_bins bins, struct err *e);

// Renders the empirical cumulative distribution of each series (fraction of its values <= x)
// as a step curve over x = [lo, hi] (lo >= hi: the range of all finite values; values beyond hi
// reach 1 at the right edge), one colour and dash pattern per series so that curves lying on
// each other stay visible, the legend outside the plot area on the right with each label in
// full. Errors: n_series > 64
// (ERR_RANGE), OOM. *svg malloc'd (caller frees).
struct plot_range { double lo, hi; };
int plot_ecdf_svg(char **svg, const char *title, const char *xlabel, const struct plot_series *s, int n_series,
                  struct plot_range x, struct err *e);

// 1, 2 or 5 times a power of ten, >= x (x > 0): the step between axis ticks of every plot.
double plot_nice_step(double x);

// Escapes &, <, >, " for SVG/XML text into out (n bytes, truncated safely).
void plot_xml_escape(char *out, size_t n, const char *s);

#endif
