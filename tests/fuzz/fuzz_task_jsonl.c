// fuzz_task_jsonl.c: the JSONL task loaders (eval/tasks/) through their real file path
// (--task-file): each input is written to a tmpfs file and loaded as mc_jsonl, arc_easy,
// arc_challenge, hellaswag (JSONL form), mmlu (JSONL form) and truthfulqa_mc1 (JSONL rows),
// with and without --skip-bad-rows, then every item is checked for the invariants the
// scorer relies on.
// fuzz-seeds: tests/data/tasks/*.jsonl ../shared/datasets/arc/ai2-subset/*.jsonl
// fuzz-seeds: ../shared/datasets/arc/genmc/arc_easy/official/*.jsonl ../shared/datasets/arc/llm-foundry/*.jsonl
// fuzz-max-len: 16384
#include <stdint.h>
#include <stdlib.h>

#include "eval/tasks/task.h"
#include "fuzz.h"
#include "fuzz_task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const tasks[] = {"mc_jsonl", "arc_easy", "arc_challenge", "hellaswag", "mmlu", "truthfulqa_mc1"};
    char path[1024];
    fz_write(path, sizeof path, "in.jsonl", data, size);
    for (size_t i = 0; i < sizeof tasks / sizeof tasks[0]; i++) fz_load_task(tasks[i], path, 0);
    fz_load_task("mc_jsonl", path, 1);
    fz_load_task("hellaswag", path, 1);
    return 0;
}
