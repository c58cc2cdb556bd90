// progress.h: one live progress line on stderr for a long loop (scoring, calibration, imports,
// downloads). On a terminal the line is rewritten in place at least once a second (a ticker
// thread redraws it between updates, so the elapsed time and ETA move while one long batch
// computes); off a terminal (logs, Slurm) a whole line is written every PROGRESS_LOG_S seconds
// or every PROGRESS_LOG_FRAC of the total, whichever comes first. Never writes to stdout or to
// results. Quiet below LOG_INFO.
#ifndef HIFA4_PROGRESS_H
#define HIFA4_PROGRESS_H

#include <stdint.h>

#define PROGRESS_TTY_S 0.9    // a terminal's line is redrawn this long after the last (at most 1 s with the 0.1 s tick)
#define PROGRESS_LOG_S 30.0   // off a terminal: a line at least this often ...
#define PROGRESS_LOG_FRAC 0.05 // ... or each time this share of the total is done

// The cadence rule, pure (the clock is the caller's): 1 when a line is due at time now (seconds)
// with done/total finished, given the time and done count of the last line written (last_t < 0:
// none yet). A terminal: every PROGRESS_TTY_S. Else: every PROGRESS_LOG_S, or when done has
// grown by PROGRESS_LOG_FRAC * total since the last line (total <= 0: time only). The end
// (done >= total > 0) is always due once more than the last line's count.
int progress_due(int tty, double now, double done, double total, double last_t, double last_done);

// What the line counts: items (a count, "items/s") or bytes (shown in kB/MB/GB, "MB/s").
enum progress_unit { PROGRESS_COUNT, PROGRESS_BYTES };

struct progress; // opaque

// Opens a line labelled `what` ("exam", "calibrate", "fetch X"), counting `unit_name` (for
// PROGRESS_COUNT: "items", "samples", "tensors") up to total (<= 0: unknown). tty: -1 = decide
// from isatty(2). clock: NULL = time_now (tests inject their own). Returns NULL (no line, every
// call below a no-op) when out of memory or the log level is below LOG_INFO.
struct progress *progress_open(const char *what, enum progress_unit unit, const char *unit_name, double total, int tty,
                               double (*clock)(void));
// Sets the count done (monotone; may be fractional: a batch part-way) and an optional detail
// shown after the label (the mode being computed; NULL: none). Writes a line when one is due.
void progress_set(struct progress *p, double done, const char *detail);
// The outer total of a multi-part job (the run's items over all tasks) and its count done, for a
// second ETA ("run 1:02:03"); outer_total <= 0 hides it.
void progress_set_outer(struct progress *p, double outer_done, double outer_total);
// Counts done before this process started (a resumed run): shown, left out of the rate. With an
// outer total they are counts of it, and shown with it ("run 1:02:03 (250/1000, 200 resumed)"),
// not beside the part's count, which may have none resumed.
void progress_set_skipped(struct progress *p, double skipped);
// Writes the line as it stands and ends it (a terminal's line gets its newline and the next
// one starts below it): the end of one part of a multi-part job. p stays open.
void progress_end_part(struct progress *p);
// Retitles the line (the next task) and resets its count to 0 of total, keeping the clock.
void progress_retitle(struct progress *p, const char *what, double total);
// Writes the final line (a terminal's line ends with a newline), stops the ticker and frees p.
// Safe on NULL.
void progress_close(struct progress *p);

// The line as it would be written (no "\r", no newline), for tests: into out (n bytes).
void progress_format(const struct progress *p, char *out, int n);

#endif
