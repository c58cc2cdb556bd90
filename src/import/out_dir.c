// out_dir.c: the output directory of an import (see out_dir.h).
#include "import/out_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const g_model_files[] = {
    "model.safetensors", "model.safetensors.index.json", "config.json", "tokenizer.json", "tokenizer.json.zst",
    "tokenizer_config.json", "special_tokens_map.json", "generation_config.json", NULL};

const char *const *import_model_files(void) { return g_model_files; }

static int is_model_file(const char *name) {
    for (int i = 0; g_model_files[i]; i++)
        if (!strcmp(name, g_model_files[i])) return 1;
    return fnmatch("model-*-of-*.safetensors", name, 0) == 0;
}

int import_out_dir(const char *dir, enum import_dir_policy policy, struct err *e) {
    if (file_exists(dir)) return err_set(e, ERR_USAGE, "--out %s: a file, not a directory", dir);
    if (!dir_exists(dir)) return 0; // the importer creates it once its input passed every check
    DIR *d = opendir(dir);
    if (!d) return err_set(e, ERR_IO, "--out %s: %s", dir, strerror(errno));
    char held[512] = "", kept[512] = "";
    int n_held = 0, n_kept = 0, rc = 0;
    for (struct dirent *de; !rc && (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (policy == IMPORT_DIR_EMPTY) {
            if (n_held++ < 3) snprintf(held + strlen(held), sizeof held - strlen(held), "%s%s", n_held > 1 ? ", " : "", de->d_name);
            continue;
        }
        char p[4200];
        if ((rc = path_join(p, sizeof p, dir, de->d_name, e))) break;
        if (!is_model_file(de->d_name)) {
            if (n_kept++ < 3) snprintf(kept + strlen(kept), sizeof kept - strlen(kept), "%s%s", n_kept > 1 ? ", " : "", de->d_name);
        } else if (unlink(p) != 0) {
            rc = err_set(e, ERR_IO, "--force: cannot remove %s: %s", p, strerror(errno));
        }
    }
    closedir(d);
    if (rc) return rc;
    if (n_held)
        return err_set(e, ERR_USAGE, "--out %s is not empty (%s%s): an import there would mix its files with another "
                       "model's; use a new or empty directory, or --force to remove the model files first", dir, held,
                       n_held > 3 ? ", ..." : "");
    if (n_kept)
        log_warn("import: --force: kept %d file(s) that are not model files in %s (%s%s)", n_kept, dir, kept,
                 n_kept > 3 ? ", ..." : "");
    return 0;
}
