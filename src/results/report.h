// report.h: renders a finished run directory (run.json, summary.json, samples files) as
// report.md with paper-style tables, a CSV file per table (tables/*.csv), the degenerate-mode
// flags (degenerate.h) and SVG margin plots (plots/margins-<task>.svg, paper Fig. 9's quantity:
// one empirical CDF per mode). Reads only files,
// so a run can be re-rendered at any time. (`hifa4-eval tables`, the paper's tables across
// runs, is paper_tables.h; what tells two runs apart, run_label.h.)
#ifndef HIFA4_REPORT_H
#define HIFA4_REPORT_H

#include <cjson/cJSON.h>

#include "base/common.h"

// The margin statistics and plot of a task rest on the items every mode answers correctly;
// below this many their p10/p90 rest on two items or fewer each and the section leaves them out.
#define REPORT_MARGIN_MIN_ITEMS 30

// Writes report.md, tables/*.csv and plots/*.svg into run_dir from its run.json and
// summary.json (plots also read the samples files). *headline (may be NULL) receives a
// malloc'd Markdown copy of the headline tables (accuracy and flips per task and mode) and of
// the degenerate-mode flags (degenerate.h).
int report_render(const char *run_dir, char **headline, struct err *e);

#endif
