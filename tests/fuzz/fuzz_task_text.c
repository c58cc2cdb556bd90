// fuzz_task_text.c: the plain-text task loaders through their real file path: ppl (--task-file
// FILE), niah (the same file as haystack; tokens counted as bytes / 4), hellaswag (llama.cpp
// text form, FILE.txt) and exam (a pool directory holding the input as one question file).
// fuzz-seeds: tests/data/tasks/ppl_mini.txt tests/data/tasks/hellaswag_bad.txt tests/data/tasks/haystack.txt
// fuzz-seeds: tests/data/tasks/exampool/* tests/data/tasks/exampool_bad/* ../shared/datasets/hellaswag/hellaswag_val_full.txt.zst
// fuzz-seeds: ../shared/datasets/wikitext2/raw/wiki.test.raw
// fuzz-max-len: 16384
#include <stdint.h>
#include <stdlib.h>

#include "eval/tasks/task.h"
#include "fuzz.h"
#include "fuzz_task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[1024], pool[1024];
    fz_write(path, sizeof path, "in.txt", data, size);
    fz_load_task("ppl", path, 0);
    fz_load_task("niah", path, 0);
    fz_load_task("hellaswag", path, 0);
    fz_load_task("hellaswag", path, 1);
    fz_write(path, sizeof path, "pool/T1A01", data, size);
    snprintf(pool, sizeof pool, "%s/pool", fz_dir());
    fz_load_task("exam", pool, 0);
    fz_load_task("exam", pool, 1);
    return 0;
}
