// report.h: renders a finished run directory (run.json, summary.json, samples files) as
// report.md with paper-style tables, a CSV file per table (tables/*.csv) and SVG margin
// histograms (plots/margins-<task>.svg, paper Fig. 9: one curve per mode). Reads only files,
// so a run can be re-rendered at any time. (`hifa4-eval tables`, the paper's tables across
// runs, is paper_tables.h; what tells two runs apart, run_label.h.)
#ifndef HIFA4_REPORT_H
#define HIFA4_REPORT_H

#include <cjson/cJSON.h>

#include "base/common.h"

// Writes report.md, tables/*.csv and plots/*.svg into run_dir from its run.json and
// summary.json (plots also read the samples files). *headline (may be NULL) receives a
// malloc'd Markdown copy of the headline table (accuracy and flips per task and mode).
int report_render(const char *run_dir, char **headline, struct err *e);

#endif
