// test_progress.c: the live progress line (src/base/progress.h) under an injected clock: the
// cadence rule on its own (a terminal every second; a log every 30 s or 5%, the end once), then
// a simulated 10-minute job with a slow and a fast phase written to a file as a log would get
// it (every gap between lines at most 30 s plus one update, a line at each 5% step in the fast
// phase, the last line the end), a terminal's lines ("\r", at least one a second), and the
// text of a line (task, mode, done/total, rate, task and run ETA, resumed items out of the rate).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "base/common.h"
#include "base/progress.h"
#include "test.h"

static double fake_now;
static double fake_clock(void) { return fake_now; }

static void check_due(void) {
    CHECK(progress_due(0, 0, 0, 100, -1, 0), "first line is due");
    CHECK(!progress_due(1, 10.5, 1, 100, 10, 1), "terminal: 0.5 s after a line: not due");
    CHECK(progress_due(1, 11.0, 1, 100, 10, 1), "terminal: 1 s after a line: due");
    CHECK(!progress_due(0, 39.9, 4.9, 100, 10, 0), "log: 29.9 s and 4.9%%: not due");
    CHECK(progress_due(0, 40.0, 1, 100, 10, 0), "log: 30 s: due");
    CHECK(progress_due(0, 11.0, 5, 100, 10, 0), "log: 5%% in 1 s: due");
    CHECK(!progress_due(0, 11.0, 5, 0, 10, 0), "log, total unknown: time only");
    CHECK(progress_due(0, 10.1, 100, 100, 10, 99), "log: the end is due");
    CHECK(!progress_due(0, 10.1, 100, 100, 10, 100), "log: the end only once");
}

// Reads the lines a progress object wrote to stderr (redirected to path).
static int read_lines(const char *path, char lines[][512], int max) {
    FILE *f = fopen(path, "r");
    int n = 0;
    if (!f) return 0;
    while (n < max && fgets(lines[n], 512, f)) n++;
    fclose(f);
    return n;
}

static double line_time(const char *l) { // "... 1:05 elapsed ..." -> 65
    const char *e = strstr(l, " elapsed");
    if (!e) return -1;
    const char *s = e;
    while (s > l && s[-1] != ' ') s--;
    int a = 0, b = 0, c = 0;
    int k = sscanf(s, "%d:%d:%d", &a, &b, &c);
    return k == 3 ? a * 3600 + b * 60 + c : k == 2 ? a * 60 + b : -1;
}

// stderr into a fresh temporary file (its descriptor returned, -1 on failure) and back.
static int stderr_to_file(char *path, int *saved) {
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    fflush(stderr);
    *saved = dup(2);
    dup2(fd, 2);
    return fd;
}
static void stderr_back(int saved) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

// 1000 items: 100 in the first 400 s (slow), 900 in the next 200 s (fast); an update every 2 s.
static void check_log(void) {
    char path[] = "/tmp/test_progress_XXXXXX";
    int saved, fd = stderr_to_file(path, &saved);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return;
    fake_now = 0;
    struct progress *p = progress_open("exam", PROGRESS_COUNT, "items", 1000, 0, fake_clock);
    for (int s = 2; s <= 600; s += 2) {
        fake_now = s;
        double done = s <= 400 ? s / 4.0 : 100 + (s - 400) * 4.5;
        progress_set(p, done, "hifa4");
    }
    progress_close(p);
    stderr_back(saved);
    close(fd);
    static char lines[200][512];
    int n = read_lines(path, lines, 200);
    unlink(path);
    CHECK(n >= 20 && n <= 40, "log: %d lines for 600 s and 1000 items (expected 20-40: every 30 s, 5%% steps)", n);
    double prev = 0;
    int fast = 0;
    for (int i = 0; i < n; i++) {
        double t = line_time(lines[i]);
        CHECK(t >= 0, "log line %d has its elapsed time: %s", i, lines[i]);
        CHECK(t - prev <= 32.0, "log: %.0f s between lines %d and %d (at most 30 s + one update)", t - prev, i - 1, i);
        CHECK(!strchr(lines[i], '\r'), "log line %d holds a carriage return", i);
        if (t > 400) fast++;
        prev = t;
    }
    CHECK(fast >= 16, "fast phase: %d lines for 90%% of the items (expected one per 5%% step: 18, less the steps split at its edges)", fast);
    CHECK(n > 0 && strstr(lines[n - 1], "1000/1000 items"), "last line is the end: %s", n ? lines[n - 1] : "");
}

// A terminal: each update at least 1 s after the last line redraws it ("\r"); 20 updates 0.5 s apart.
static void check_tty(void) {
    char path[] = "/tmp/test_progress_XXXXXX";
    int saved, fd = stderr_to_file(path, &saved);
    if (fd < 0) return;
    fake_now = 0;
    struct progress *p = progress_open("arc_easy", PROGRESS_COUNT, "items", 20, 1, fake_clock);
    for (int i = 1; i <= 20; i++) {
        fake_now = i * 0.5;
        progress_set(p, i, "bf16");
    }
    progress_close(p);
    stderr_back(saved);
    char buf[8192] = {0};
    lseek(fd, 0, SEEK_SET);
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    unlink(path);
    int cr = 0;
    for (ssize_t i = 0; i < got; i++) cr += buf[i] == '\r';
    CHECK(cr >= 10 && cr <= 12, "terminal: %d redraws over 10 s (expected one a second + the end)", cr);
    CHECK(got > 0 && buf[got - 1] == '\n' && strchr(buf, '\n') == buf + got - 1, "terminal: one line, ended once");
}

static void quiet_close(struct progress *p) { // the final line to /dev/null
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    progress_close(p);
    stderr_back(saved);
    close(null);
}

static void check_text(void) {
    fake_now = 100;
    struct progress *p = progress_open("arc_challenge", PROGRESS_COUNT, "items", 200, 0, fake_clock);
    progress_set_skipped(p, 50);
    progress_set_outer(p, 50, 400);
    fake_now = 160;
    progress_set_outer(p, 110, 400); // 60 items in 60 s: 1 item/s; task: 100 left, run: 290
    progress_set(p, 100, "hifa4");
    char line[512];
    progress_format(p, line, sizeof line);
    CHECK(strstr(line, "[arc_challenge] hifa4  100/200 items  1.00 items/s") == line, "line: %s", line);
    CHECK(strstr(line, "1.00 items/s"), "rate without the resumed items: %s", line);
    CHECK(strstr(line, "ETA 1:40") && strstr(line, "run 4:50 (110/400, 50 resumed)"), "task and run ETA, the run's resumed: %s", line);
    fake_now = 170; // no update for 10 s: the average rate falls to 60/70 items/s, the ETA grows
    progress_format(p, line, sizeof line);
    CHECK(strstr(line, "ETA 1:57") && strstr(line, "run 5:38"), "ETA 10 s later: %s", line);
    quiet_close(p);

    // a part with nothing done yet in a resumed run: the resumed items are the run's, shown with its count
    fake_now = 200;
    p = progress_open("arc_easy", PROGRESS_COUNT, "items", 200, 0, fake_clock);
    progress_set_skipped(p, 200);
    progress_set_outer(p, 200, 1000);
    progress_set(p, 0, "bf16, replica 1/4");
    progress_format(p, line, sizeof line);
    CHECK(!strcmp(line, "[arc_easy] bf16, replica 1/4  0/200 items  0:00 elapsed, run 200/1000, 200 resumed"), "line: %s", line);
    quiet_close(p);
    // without an outer total the resumed count stays beside the count (a download's bytes)
    p = progress_open("fetch y", PROGRESS_COUNT, "items", 10, 0, fake_clock);
    progress_set_skipped(p, 4);
    progress_set(p, 4, NULL);
    progress_format(p, line, sizeof line);
    CHECK(!strcmp(line, "[fetch y]  4/10 items (4 resumed)  0:00 elapsed"), "line: %s", line);
    quiet_close(p);

    fake_now = 170;
    struct progress *b = progress_open("fetch x.gguf", PROGRESS_BYTES, NULL, 93e6, 0, fake_clock);
    fake_now = 180;
    progress_set(b, 45e6, NULL);
    progress_format(b, line, sizeof line);
    CHECK(strstr(line, "[fetch x.gguf]  45.0 MB/93.0 MB  4.5 MB/s"), "bytes line: %s", line);
    quiet_close(b);
}

int main(void) {
    log_set_level(LOG_INFO);
    check_due();
    check_log();
    check_tty();
    check_text();
    return test_summary("test_progress");
}
