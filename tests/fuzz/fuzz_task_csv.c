// fuzz_task_csv.c: the CSV task loaders through their real file path: gpqa_diamond (--task-file
// FILE.csv) and mmlu (--task-file DIR of the 57 <subject>_test.csv: the input is the first
// subject's file, the other 56 are empty), with and without --skip-bad-rows.
// fuzz-seeds: tests/data/tasks/*.csv ../shared/datasets/mmlu/data/test/abstract_algebra_test.csv
// fuzz-seeds: ../shared/datasets/mmlu/data/test/high_school_physics_test.csv ../shared/datasets/truthfulqa/TruthfulQA.csv
// fuzz-max-len: 16384
#include <stdint.h>
#include <stdlib.h>

#include "eval/tasks/task.h"
#include "fuzz.h"
#include "fuzz_task.h"

static char mmlu_dir[1024];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    char p[1024];
    for (int i = 1; i < task_mmlu_subject_count(); i++) {
        char name[300];
        snprintf(name, sizeof name, "mmlu/%s_test.csv", task_mmlu_subject_name(i));
        fz_write(p, sizeof p, name, "", 0);
    }
    snprintf(mmlu_dir, sizeof mmlu_dir, "%s/mmlu", fz_dir());
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[1024], name[300];
    fz_write(path, sizeof path, "in.csv", data, size);
    fz_load_task("gpqa_diamond", path, 0);
    fz_load_task("gpqa_diamond", path, 1);
    snprintf(name, sizeof name, "mmlu/%s_test.csv", task_mmlu_subject_name(0));
    fz_write(path, sizeof path, name, data, size);
    fz_load_task("mmlu", mmlu_dir, 0);
    fz_load_task("mmlu", mmlu_dir, 1);
    return 0;
}
