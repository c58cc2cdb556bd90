// out_dir.h: the output directory of an import (imports never mix models). An import
// into a directory that already holds files kept the old model's tokenizer_config.json: the
// new model then ran without BOS under the same tokenizer hash.
#ifndef HIFA4_IMPORT_OUT_DIR_H
#define HIFA4_IMPORT_OUT_DIR_H

#include "base/common.h"

enum import_dir_policy {
    IMPORT_DIR_EMPTY, // the directory must be missing (it is created) or empty
    IMPORT_DIR_FORCE, // --force: a non-empty directory is allowed after the model files are removed
};

// Prepares dir for an import. IMPORT_DIR_EMPTY: a directory holding anything is ERR_USAGE naming
// up to three of its entries and --force. IMPORT_DIR_FORCE: first removes every file a model
// directory is read from (import_model_files: weights and shards, their index, config.json,
// tokenizer files), so nothing of the old model stays; other files stay (named in a warning).
// A path that exists but is not a directory is ERR_USAGE. A missing directory is left to the
// importer to create (a refused import leaves nothing).
int import_out_dir(const char *dir, enum import_dir_policy policy, struct err *e);

// The names removed under IMPORT_DIR_FORCE ("model-*-of-*.safetensors" shards are matched by
// pattern besides), NULL-terminated (static storage).
const char *const *import_model_files(void);

#endif
