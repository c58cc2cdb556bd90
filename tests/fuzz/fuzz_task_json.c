// fuzz_task_json.c: the whole-file JSON task loaders through their real file path:
// truthfulqa_mc1 (--task-file mc_task.json, one array) and bbh (--task-file DIR: the input is
// the first subtask's <subtask>.json; the others are empty, reached only when it loads).
// fuzz-seeds: ../shared/datasets/truthfulqa/data/v1/mc_task.json ../shared/datasets/bbh/bbh/*.json
// fuzz-seeds: tests/data/tasks/datasets/truthfulqa/data/v1/*
// fuzz-max-len: 8192
#include <stdint.h>
#include <stdlib.h>

#include "eval/tasks/task.h"
#include "fuzz.h"
#include "fuzz_task.h"

static char bbh_dir[1024];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    char p[1024];
    for (int i = 1; i < task_bbh_subtask_count(); i++) {
        char name[300];
        snprintf(name, sizeof name, "bbh/%s.json", task_bbh_subtask_name(i));
        fz_write(p, sizeof p, name, "", 0);
    }
    snprintf(bbh_dir, sizeof bbh_dir, "%s/bbh", fz_dir());
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[1024], name[300];
    fz_write(path, sizeof path, "mc_task.json", data, size);
    fz_load_task("truthfulqa_mc1", path, 0);
    fz_load_task("truthfulqa_mc1", path, 1);
    snprintf(name, sizeof name, "bbh/%s.json", task_bbh_subtask_name(0));
    fz_write(path, sizeof path, name, data, size);
    fz_load_task("bbh", bbh_dir, 0);
    fz_load_task("bbh", bbh_dir, 1);
    return 0;
}
