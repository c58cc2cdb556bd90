// lock.c: the run-directory lock (see lock.h).
#include "results/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

int results_lock(const char *dir, int *fd, struct err *e) {
    *fd = -1;
    char path[4096];
    int rc = path_join(path, sizeof path, dir, RESULTS_LOCK_FILE, e);
    if (rc) return rc;
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0) return err_set(e, ERR_IO, "%s: %s", path, strerror(errno));
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        int er = errno;
        char pid[32] = "";
        ssize_t n = pread(f, pid, sizeof pid - 1, 0);
        close(f);
        if (n > 0) pid[n] = 0;
        for (char *p = pid; *p; p++)
            if (*p < '0' || *p > '9') { *p = 0; break; }
        if (er == EWOULDBLOCK)
            return err_set(e, ERR_IO, "%s is in use by another hifa4-eval process%s%s%s (lock %s): wait for it to finish "
                           "or stop it; a killed process releases the lock by itself", dir, pid[0] ? " (pid " : "", pid,
                           pid[0] ? ")" : "", path);
        return err_set(e, ERR_IO, "%s: flock: %s", path, strerror(er));
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (ftruncate(f, 0) != 0 || pwrite(f, pid, (size_t)n, 0) != n) {
        // the pid is only for the message; a full disk must not stop a run here
    }
    *fd = f;
    return 0;
}

void results_unlock(int fd) {
    if (fd >= 0) close(fd); // closing the last descriptor releases the flock
}
