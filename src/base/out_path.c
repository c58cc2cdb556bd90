// out_path.c: an output path is never an input (see out_path.h).
#include "base/out_path.h"

#include <dirent.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

// The identity of the directory that holds path (its parent, links of the last component not
// followed), or -1.
static int parent_of(const char *path, struct stat *st) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return -1;
    return stat(dirname(buf), st);
}

// 1 when a file directly inside directory dir has the identity of so (a hard link or a symlink
// elsewhere that leads to a checkpoint's file is that file).
static int in_dir(const char *dir, const struct stat *so) {
    DIR *d = opendir(dir);
    int found = 0;
    for (struct dirent *de; d && !found && (de = readdir(d));) {
        char p[8192];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) < (int)sizeof p && !stat(p, &st) && !S_ISDIR(st.st_mode))
            found = st.st_dev == so->st_dev && st.st_ino == so->st_ino;
    }
    if (d) closedir(d);
    return found;
}

int out_path_check(const char *opt, const char *out, const char *const *inputs, int n, struct err *e) {
    if (!out) return 0; // not given: the command's default, never an input
    if (!out[0])
        return err_set(e, ERR_USAGE, "%s '': an empty path; give the file or directory to write", opt);
    struct stat so, sp;
    if (stat(out, &so)) return 0; // nothing there yet: nothing to destroy
    const int have_parent = !parent_of(out, &sp);
    for (int i = 0; i < n; i++) {
        struct stat si;
        if (!inputs[i] || !inputs[i][0] || stat(inputs[i], &si)) continue;
        if (so.st_dev == si.st_dev && so.st_ino == si.st_ino)
            return err_set(e, ERR_USAGE, "%s %s is the input %s (the same file): writing it would destroy the input; "
                           "choose another path", opt, out, inputs[i]);
        if (S_ISDIR(si.st_mode) && !S_ISDIR(so.st_mode) &&
            ((have_parent && sp.st_dev == si.st_dev && sp.st_ino == si.st_ino) || in_dir(inputs[i], &so)))
            return err_set(e, ERR_USAGE, "%s %s is a file of the input directory %s: writing it would destroy the input; "
                           "choose another path", opt, out, inputs[i]);
    }
    return 0;
}
