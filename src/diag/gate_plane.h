// gate_plane.h: Figure 6's gate plane for several models under both gate rules (docs/results/gate.md),
// read from their scales files: the paper's plane (rho_K x T_KQ with the Bypass / Mild / Strong
// regions) and the measured rule's plane (T_KQ x the measured error ratio at the best alpha, with
// the smooth region below max_ratio). Each point is labelled with both decisions.
#ifndef HIFA4_GATE_PLANE_H
#define HIFA4_GATE_PLANE_H

#include "base/common.h"

// files[n]: scales files written by calibrate (the measured statistics must be in them);
// labels[n]: the point labels (NULL: each file's model_id). Writes out_dir/fig6_gate_plane_paper.svg
// and out_dir/fig6_gate_plane_measured.svg. Errors name the file and the missing field.
int gate_plane_write(const char *const *files, const char *const *labels, int n, const char *out_dir, struct err *e);

#endif
