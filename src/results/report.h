// report.h: renders a finished run directory (run.json, summary.json, samples files) as
// report.md with paper-style tables, a CSV file per table (tables/*.csv) and SVG margin
// histograms (plots/margins-<task>.svg, paper Fig. 9: one curve per mode). Also assembles the
// cross-run tables of `hifa4-eval tables` (modes x tasks x models). Reads only files, so a
// run can be re-rendered at any time.
#ifndef HIFA4_REPORT_H
#define HIFA4_REPORT_H

#include <cjson/cJSON.h>

#include "base/common.h"

// Writes report.md, tables/*.csv and plots/*.svg into run_dir from its run.json and
// summary.json (plots also read the samples files). *headline (may be NULL) receives a
// malloc'd Markdown copy of the headline table (accuracy and flips per task and mode).
int report_render(const char *run_dir, char **headline, struct err *e);

// Cross-run tables from the summary.json of each run (paper Tables 3, 5, 6, 7 layout; rows are
// model x mode, columns are tasks): Table 3 flip rate (PFR %), Table 5 accuracy gaps D_avg /
// D_w, Table 6 Quant Hurts / Helps, Table 7 accuracy. *md receives the Markdown (malloc'd);
// with csv_dir non-NULL each table is also written there as table3.csv ... table7.csv.
// A row's model column says what tells its run apart from the others (report_run_differences'
// fields, "model [limit 80, tile 64]"); runs alike in all of them get their directory too.
int report_tables(const char *const *runs, int n_runs, const char *csv_dir, char **md, struct err *e);

// "limit 80 vs 70, tile 128 vs 64": the recorded options in which run.json objects a and b
// differ (limit, tile, format, Q-Mean form, v-group, qdq-skip, activations, subjects, seed, and
// the model, scales and tokenizer hashes), "" when none (diff prints it under its title).
void report_run_differences(char *out, size_t n, const cJSON *a, const cJSON *b);

#endif
