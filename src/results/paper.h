// paper.h: the HiFA4 paper's printed table cells (configs/paper/tableN.csv: table,row,column,
// value; see configs/paper/README.md), which paper model a run's model is, and the number a
// printed cell holds - so `tables` can put the paper's value and the difference beside ours.
#ifndef HIFA4_PAPER_H
#define HIFA4_PAPER_H

#include "base/common.h"

#define PAPER_TABLES 10

struct paper_cell { int table; char *row, *col, *value; };
struct paper_values { struct paper_cell *cell; int n; };

// Reads <dir>/table1.csv ... table10.csv (a missing file: that table has no values). Errors
// name file:line and field (a row with other than 4 fields, a table number other than the
// file's, a value that is empty). *p owned by the caller (paper_free).
int paper_load(struct paper_values *p, const char *dir, struct err *e);
// The same from configs/paper under the current directory, else under paths_home().
int paper_load_default(struct paper_values *p, struct err *e);
void paper_free(struct paper_values *p);
// The printed value of (table, row, column) or NULL. row may hold '*' wildcards (fnmatch),
// e.g. "Qwen3-8B (*) / BF16" for Table 5's row whatever its gate.
const char *paper_get(const struct paper_values *p, int table, const char *row, const char *col);

// The paper's name of a model ("Qwen3-8B", "Gemma2-9B", "LLaMA3.1-8B", "Mistral-7B",
// "Phi-4B") when name (a run's model name, a configs/models name or a Hugging Face id) is one
// of them - compared lower-case without punctuation, so "Qwen/Qwen3-8B", "qwen3-8b" and
// "Meta-Llama-3.1-8B" match - else NULL.
const char *paper_model_of(const char *name);

// The number a printed cell starts with: optional '~', sign, digits with an optional point
// (".885" too), then a unit: "" , "%", "%(N)", " pp", "pp" or "x". 1 with *v and *unit
// (0 none, 1 percent, 2 pp, 3 x) and *decimals (digits after the point), 0 for any other text
// ("-", "0.87-1.75", "Strong (alpha=0.5)").
int paper_number(const char *s, double *v, int *unit, int *decimals);
// "ours minus paper" of two printed cells in the paper's precision and unit ("+0.12 pp",
// "-3", "+0.012"), or "" when either is not a number or their units differ. out >= 32 bytes.
void paper_diff(char *out, size_t n, const char *ours, const char *paper);

#endif
