// test_run_api.c: the run module's API (src/eval/run.h) driven directly, as a distributed
// driver would: a run scored in uneven item ranges (several run_task_score calls per task)
// and a second process-free "resume" (a new run_open with resume over a half-scored run)
// must leave samples files byte-identical to one run scoring every task in one call, as must
// the run made through the run's plan (runplan/run_plan.h) as the command makes it. Needs no
// data outside the repository: a make-model checkpoint and mc_jsonl questions written here.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"
#include "eval/run.h"
#include "import/make_model.h"
#include "runplan/run_plan.h"
#include "run_util.h"
#include "test.h"

static char tmp[1024], model_dir[1200], qfile[1200];

static int write_questions(void) {
    FILE *f = fopen(qfile, "w");
    if (!f) return -1;
    for (int i = 0; i < 37; i++)
        fprintf(f, "{\"id\": \"q%d\", \"subject\": \"arithmetic\", \"question\": \"What is %d plus %d?\", "
                   "\"choices\": [\"%d\", \"%d\", \"%d\", \"seven\"], \"answer\": %d}\n",
                i, i, 2 * i + 1, 3 * i + 1, 3 * i, 3 * i + 2, i % 3);
    return fclose(f);
}

static void opts_for(struct run_opts *o, const char *out, int resume, const char **tasks, int n_tasks) {
    run_opts_default(o);
    o->model_dir = model_dir;
    o->model_name = "tiny";
    o->model_arg = model_dir;
    o->model.max_tokens = 256;  // several batches per task
    o->n_threads = 1;
    o->out_dir = out;
    o->resume = resume;
    o->task.file = qfile;
    o->task.limit = 0;
    static char *argv0[] = {"test_run_api"};
    o->argc = 1;
    o->argv = argv0;
    const char *modes[] = {"f32", "bf16", "direct"};
    struct err e = {0};
    CHECK(run_select_modes(o, modes, 3, &e) == 0, "%s", e.msg);
    CHECK(run_select_tasks(o, tasks, n_tasks, &e) == 0, "%s", e.msg);
}

// Scores every task of a fresh run; ranges[] (ending at a value >= the task size) split each
// task into several run_task_score calls. stop_after > 0 ends the run early like a kill.
static int score(const char *out, int resume, const int *ranges, int stop_after) {
    const char *tasks[] = {"mc_jsonl"};
    struct run_opts o;
    opts_for(&o, out, resume, tasks, 1);
    o.stop_after_items = stop_after;
    struct err e = {0};
    int rc = test_run_all(&o, ranges, &e);
    if (rc && !stop_after) fprintf(stderr, "run: %s\n", e.msg);
    return rc;
}

static void compare(const char *dir_a, const char *dir_b, const char *what) {
    const char *modes[] = {"f32", "bf16", "direct"};
    for (int m = 0; m < 3; m++) {
        char a[1500], b[1500];
        snprintf(a, sizeof a, "%s/samples-mc_jsonl-%s.jsonl.zst", dir_a, modes[m]);
        snprintf(b, sizeof b, "%s/samples-mc_jsonl-%s.jsonl.zst", dir_b, modes[m]);
        CHECK(test_same_bytes(a, b), "%s: %s differs from %s", what, b, a);
    }
}

// The same run made through the run's plan (runplan/run_plan.h), as the `run` command makes it:
// the model resolved from its directory, the task's data loaded once by run_precheck and taken
// by run_open, one thread. The samples files equal the run opened directly.
static void plan_run(const char *out, const char *whole) {
    struct run_opts o;
    run_opts_default(&o);
    o.model_arg = model_dir;
    o.model.max_tokens = 256;
    o.out_dir = out;
    o.task.file = qfile;
    static char *argv0[] = {"test_run_api"};
    o.argc = 1;
    o.argv = argv0;
    const char *modes[] = {"f32", "bf16", "direct"}, *tasks[] = {"mc_jsonl"};
    const struct run_plan_args a = {.model = model_dir, .modes = modes, .n_modes = 3, .tasks = tasks, .n_tasks = 1,
                                    .offline = 1, .threads = 1};
    struct run_plan p;
    struct run_done done = {0};
    struct err e = {0};
    int rc = run_plan_make(&p, &o, &a, &e);
    CHECK(rc == 0 && p.tasks.sets[0] && p.tasks.sets[0]->n_items == 37 && p.o.n_modes == 3 && p.o.n_threads == 1,
          "plan: %s", e.msg);
    if (!rc) rc = run_plan_drive(&p, &done, &e);
    CHECK(rc == 0 && done.written && !strcmp(done.dir, out), "drive: %s", e.msg);
    CHECK(!p.tasks.sets[0], "run_open took the task data the plan loaded (not read twice)");
    free(done.headline);
    run_plan_free(&p);
    if (!rc) compare(whole, out, "made through the run's plan");
}

int main(void) {
    const char *t = getenv("HIFA4_TMP");
    snprintf(tmp, sizeof tmp, "%s/run_api", t ? t : "build/tmp");
    snprintf(model_dir, sizeof model_dir, "%s/model", tmp);
    snprintf(qfile, sizeof qfile, "%s/questions.jsonl", tmp);
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", tmp, tmp);
    CHECK(system(cmd) == 0, "%s", cmd);
    log_set_level(LOG_WARN);
    struct make_model_opts mo;
    make_model_opts_default(&mo);
    mo.arch = ARCH_QWEN3;
    struct err e = {0};
    CHECK(make_model(&mo, model_dir, &e) == 0, "make_model: %s", e.msg);
    CHECK(write_questions() == 0, "cannot write %s", qfile);

    char whole[1200], ranged[1200], resumed[1200];
    snprintf(whole, sizeof whole, "%s/whole", tmp);
    snprintf(ranged, sizeof ranged, "%s/ranged", tmp);
    snprintf(resumed, sizeof resumed, "%s/resumed", tmp);
    CHECK(score(whole, 0, NULL, 0) == 0, "one call per task");
    const int ranges[] = {1, 2, 9, 16, 17, 30, 1000};
    CHECK(score(ranged, 0, ranges, 0) == 0, "ranges");
    compare(whole, ranged, "items scored in 7 ranges");
    // a run stopped after some items (the files hold only whole frames, like a killed run),
    // then resumed by a new run_open with resume = 1
    CHECK(score(resumed, 0, NULL, 20) != 0, "the stop hook ends the run with an error");
    CHECK(score(resumed, 1, NULL, 0) == 0, "resume");
    compare(whole, resumed, "stopped after 20 items, then resumed");
    char planned[1200];
    snprintf(planned, sizeof planned, "%s/planned", tmp);
    plan_run(planned, whole);
    return test_summary("test_run_api");
}
