// plot_xy.h: SVG figures beside plot.h's histograms, for diagnose and trace: line charts with
// several series (paper Fig. 4 layer-wise K statistics, Fig. 8 eps_bar curves, per-layer
// rel-L2), a heat map (Fig. 3 head x channel max |K|) and a scatter plane with shaded regions
// (Fig. 6 gate plane). Pure text output, no I/O; equal inputs give equal bytes (fixed-precision
// number printing, no locale, no time).
#ifndef HIFA4_PLOT_XY_H
#define HIFA4_PLOT_XY_H

#include "base/common.h"

struct plot_axis {
    const char *label;
    double lo, hi; // lo >= hi: from the data (rounded out to nice ticks; log axes: to decades)
    int log;       // 1: log10 scale; values <= 0 are not drawn
};

struct plot_xy_series {
    const char *label;    // legend text
    const double *x, *y;  // [n]; a point with a coordinate that cannot be drawn breaks the line
    int n;
    int markers;          // 1: a dot at each point as well as the line
};

// Line chart, one coloured polyline per series, legend top right. Errors: n_series > 64 or a
// series with n < 0 (ERR_RANGE), OOM. *svg malloc'd, NUL-terminated (caller frees).
int plot_line_svg(char **svg, const char *title, const struct plot_axis *xa, const struct plot_axis *ya,
                  const struct plot_xy_series *s, int n_series, struct err *e);

// A matrix of values: v (rows, cols) row-major.
struct plot_grid {
    const double *v;
    int rows, cols;
};
// Heat map of g: row r drawn as the r-th band from the top, column c from the left; colour
// linear in v / max(v) (0 at the bottom of the ramp; non-finite cells grey) with a colour bar
// labelled value_label. Errors: rows or cols < 1, rows*cols > 1<<20 (ERR_RANGE), OOM.
int plot_heatmap_svg(char **svg, const char *title, const char *xlabel, const char *ylabel, const char *value_label,
                     struct plot_grid g, struct err *e);

// A shaded rectangle of the plane; bounds may be +-INFINITY (clipped to the axes).
struct plot_region {
    double x0, x1, y0, y1;
    const char *label;  // drawn at the centre of its visible part (may be NULL)
    const char *fill;   // SVG colour, e.g. "#d8f0d8"
};
struct plot_point {
    double x, y;
    const char *label;  // drawn beside the point (may be NULL)
    int emphasis;       // 1: large red point (this model); 0: small grey (references)
};
// What a plane shows: its shaded regions and its points.
struct plot_plane {
    const struct plot_region *r; // (n_regions)
    int n_regions;
    const struct plot_point *p;  // (n_points)
    int n_points;
};
// Scatter plane with shaded regions drawn first, then the points. Points outside the axes are
// drawn clamped to the border with their label. Errors: more than 64 regions or 256 points
// (ERR_RANGE), OOM.
int plot_plane_svg(char **svg, const char *title, const struct plot_axis *xa, const struct plot_axis *ya,
                   const struct plot_plane *pl, struct err *e);

#endif
