// progress.c: the live progress line of progress.h: the cadence rule, the line's text, and the
// ticker thread that redraws it between updates (only with the real clock; tests inject theirs
// and drive every update themselves).
#include "base/progress.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/common.h"

struct progress {
    pthread_mutex_t mu;
    pthread_t ticker;
    int has_ticker, stop, tty;
    int parked;                // progress_end_part wrote the line: nothing more until the next update
    int open_line;             // a terminal's line is drawn and not yet ended
    double (*clock)(void);
    enum progress_unit unit;
    char what[96], detail[64], unit_name[16];
    double total, done, skipped, outer_done, outer_total;
    double t0;                 // clock at open (the rate's start)
    double t_set, rate;        // clock and rate at the last progress_set
    double last_t, last_done;  // the last line written (last_t < 0: none)
};

int progress_due(int tty, double now, double done, double total, double last_t, double last_done) {
    if (last_t < 0) return 1;
    if (tty) return now - last_t >= PROGRESS_TTY_S;
    if (total > 0 && done >= total) return done > last_done;
    if (now - last_t >= PROGRESS_LOG_S) return 1;
    return total > 0 && done - last_done >= PROGRESS_LOG_FRAC * total;
}

// ---- text ----
static void fmt_time(char *out, size_t n, double s) {
    if (!(s >= 0) || s > 360000.0 * 24) { snprintf(out, n, "?"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(out, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(out, n, "%ld:%02ld", t / 60, t % 60);
}

static void fmt_amount(char *out, size_t n, enum progress_unit u, double v) {
    if (u == PROGRESS_COUNT) { snprintf(out, n, v == (double)(int64_t)v ? "%.0f" : "%.1f", v); return; }
    if (v >= 1e9) snprintf(out, n, "%.2f GB", v / 1e9);
    else if (v >= 1e6) snprintf(out, n, "%.1f MB", v / 1e6);
    else snprintf(out, n, "%.0f kB", v / 1e3);
}

// The ETA of the remaining count at the average rate up to now: the work counted at the last
// update over the time since the start, so while one long batch computes the ETA grows instead
// of counting down to a 0:00 that is not true.
static double eta(const struct progress *p, double remaining, double now) {
    if (!(p->rate > 0) || !(now > p->t0)) return -1;
    const double rate_now = p->rate * (p->t_set - p->t0) / (now - p->t0);
    return rate_now > 0 ? remaining / rate_now : -1;
}

static void format_at(const struct progress *p, double now, char *out, int n) {
    char d[32], t[32], r[32], e1[32], e2[32], el[32];
    fmt_amount(d, sizeof d, p->unit, p->done);
    fmt_amount(t, sizeof t, p->unit, p->total);
    fmt_time(el, sizeof el, now - p->t0);
    int o = snprintf(out, (size_t)n, "[%s]%s%s  %s/%s", p->what, p->detail[0] ? " " : "", p->detail, d, p->total > 0 ? t : "?");
    if (p->unit == PROGRESS_COUNT && o < n) o += snprintf(out + o, (size_t)(n - o), " %s", p->unit_name);
    char sk[48] = "";
    if (p->skipped > 0) snprintf(sk, sizeof sk, p->outer_total > 0 ? ", %.0f resumed" : " (%.0f resumed)", p->skipped);
    if (p->outer_total <= 0 && o < n) o += snprintf(out + o, (size_t)(n - o), "%s", sk);
    if (o >= n) return;
    if (!(p->rate > 0)) {
        o += snprintf(out + o, (size_t)(n - o), "  %s elapsed", el);
        if (p->outer_total > 0 && o < n) snprintf(out + o, (size_t)(n - o), ", run %.0f/%.0f%s", p->outer_done, p->outer_total, sk);
        return;
    }
    if (p->unit == PROGRESS_COUNT) snprintf(r, sizeof r, "%.2f %s/s", p->rate, p->unit_name);
    else { fmt_amount(r, sizeof r, p->unit, p->rate); strcat(r, "/s"); }
    const double ref_done = p->outer_total > 0 ? p->outer_done : p->done;
    fmt_time(e1, sizeof e1, p->total > 0 ? eta(p, p->total - p->done, now) : -1);
    o += snprintf(out + o, (size_t)(n - o), "  %s  %s elapsed  ETA %s", r, el, e1);
    if (p->outer_total > 0 && o < n) {
        fmt_time(e2, sizeof e2, eta(p, p->outer_total - ref_done, now));
        snprintf(out + o, (size_t)(n - o), ", run %s (%.0f/%.0f%s)", e2, p->outer_done, p->outer_total, sk);
    }
}

void progress_format(const struct progress *p, char *out, int n) {
    if (!p) { if (n > 0) out[0] = 0; return; }
    format_at(p, p->clock(), out, n);
}

// Writes the line (caller holds mu).
static void emit(struct progress *p, double now, int final) {
    char line[512];
    format_at(p, now, line, sizeof line);
    p->open_line = p->tty && !final;
    if (p->tty) fprintf(stderr, "\r%s\033[K%s", line, final ? "\n" : "");
    else fprintf(stderr, "%s\n", line);
    fflush(stderr);
    p->last_t = now;
    p->last_done = p->done;
}

// ---- ticker ----
static void *tick(void *arg) {
    struct progress *p = arg;
    for (;;) {
        struct timespec ts = {0, 100 * 1000000L}; // the tick: a terminal line is redrawn 0.9-1.0 s after the last
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
        pthread_mutex_lock(&p->mu);
        if (p->stop) { pthread_mutex_unlock(&p->mu); return NULL; }
        const double now = p->clock();
        if (!p->parked && progress_due(p->tty, now, p->done, p->total, p->last_t, p->last_done)) emit(p, now, 0);
        pthread_mutex_unlock(&p->mu);
    }
}

// ---- public ----
struct progress *progress_open(const char *what, enum progress_unit unit, const char *unit_name, double total, int tty,
                               double (*clock)(void)) {
    if (log_get_level() < LOG_INFO) return NULL;
    struct progress *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    p->tty = tty < 0 ? isatty(2) : tty;
    p->clock = clock ? clock : time_now;
    p->unit = unit;
    snprintf(p->what, sizeof p->what, "%s", what ? what : "");
    snprintf(p->unit_name, sizeof p->unit_name, "%s", unit_name ? unit_name : "items");
    p->total = total;
    p->t0 = p->t_set = p->clock();
    p->last_t = -1;
    if (!clock && pthread_create(&p->ticker, NULL, tick, p) == 0) p->has_ticker = 1;
    if (p->tty) log_set_live_line(1);
    return p;
}

void progress_set(struct progress *p, double done, const char *detail) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    const double now = p->clock();
    p->parked = 0;
    p->done = done;
    snprintf(p->detail, sizeof p->detail, "%s", detail ? detail : "");
    const double work = (p->outer_total > 0 ? p->outer_done : done) - p->skipped;
    if (now > p->t0 && work > 0) p->rate = work / (now - p->t0), p->t_set = now;
    if (progress_due(p->tty, now, p->done, p->total, p->last_t, p->last_done) && !(p->tty && p->has_ticker)) emit(p, now, 0);
    pthread_mutex_unlock(&p->mu);
}

void progress_set_outer(struct progress *p, double outer_done, double outer_total) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->outer_done = outer_done;
    p->outer_total = outer_total;
    pthread_mutex_unlock(&p->mu);
}

void progress_set_skipped(struct progress *p, double skipped) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->skipped = skipped;
    pthread_mutex_unlock(&p->mu);
}

void progress_retitle(struct progress *p, const char *what, double total) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    snprintf(p->what, sizeof p->what, "%s", what ? what : "");
    p->total = total;
    p->done = p->last_done = 0;
    pthread_mutex_unlock(&p->mu);
}

void progress_end_part(struct progress *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    if (p->tty || p->done != p->last_done) emit(p, p->clock(), 1); // a log has its end line already
    p->parked = 1;
    pthread_mutex_unlock(&p->mu);
}

void progress_close(struct progress *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    if (p->open_line || (!p->parked && (p->done != p->last_done || p->last_t < 0))) emit(p, p->clock(), 1);
    pthread_mutex_unlock(&p->mu);
    if (p->has_ticker) pthread_join(p->ticker, NULL);
    if (p->tty) log_set_live_line(0);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
