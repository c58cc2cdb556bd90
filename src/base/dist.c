// dist.c: see dist.h. With HIFA4_MPI the calls map to MPI; without, a job of one process.
#include "base/dist.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HIFA4_MPI
#include <mpi.h>
#endif

static char host_name[256];
static int together;

int dist_failed_together(void) { return together; }

int dist_agree(int rc, struct err *e) {
    if (dist_size() == 1 || !dist_max_int(rc != 0)) return rc;
    const int rank0_failed = dist_max_int(dist_rank() == 0 && rc);
    together = rc && (dist_rank() == 0 || !rank0_failed) ? 1 : 2;
    return rc ? rc : err_set(e, ERR_INTERNAL, "another rank failed");
}

const char *dist_host(void) {
    if (!host_name[0] && gethostname(host_name, sizeof host_name - 1) != 0) strcpy(host_name, "?");
    return host_name;
}

#ifdef HIFA4_MPI
static int started, rank, size = 1;

int dist_built(void) { return 1; }

int dist_init(int *argc, char ***argv, struct err *e) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return err_set(e, ERR_INTERNAL, "MPI_Init_thread failed");
    started = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_SERIALIZED)
        return err_set(e, ERR_INTERNAL, "MPI gives thread level %d, MPI_THREAD_SERIALIZED (%d) is needed", provided,
                       MPI_THREAD_SERIALIZED);
    return 0;
}

void dist_finalize(void) {
    if (started) MPI_Finalize();
    started = 0;
}

int dist_rank(void) { return rank; }
int dist_size(void) { return size; }
void dist_abort(int code) {
    if (started) MPI_Abort(MPI_COMM_WORLD, code);
}

int dist_send(int to, int tag, const void *buf, size_t n, struct err *e) {
    if (n > (size_t)1 << 30) return err_set(e, ERR_RANGE, "MPI message of %zu bytes to rank %d: over 1 GiB", n, to);
    if (MPI_Send(buf, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD) != MPI_SUCCESS)
        return err_set(e, ERR_IO, "MPI_Send to rank %d failed", to);
    return 0;
}

int dist_wait(int from, int tag, double timeout_s, int *from_out, int *tag_out, size_t *n_out) {
    const double t0 = time_now();
    for (;;) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(from < 0 ? MPI_ANY_SOURCE : from, tag < 0 ? MPI_ANY_TAG : tag, MPI_COMM_WORLD, &flag, &st);
        if (flag) {
            int count = 0;
            MPI_Get_count(&st, MPI_BYTE, &count);
            *from_out = st.MPI_SOURCE;
            *tag_out = st.MPI_TAG;
            *n_out = (size_t)count;
            return 0;
        }
        if (timeout_s > 0 && time_now() - t0 >= timeout_s) return 1;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
}

int dist_recv(int from, int tag, void *buf, size_t n, struct err *e) {
    if (MPI_Recv(buf, (int)n, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return err_set(e, ERR_IO, "MPI_Recv from rank %d failed", from);
    return 0;
}

int dist_max_int(int v) {
    int out = v;
    MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return out;
}

int dist_gather(const void *buf, size_t n, void *out, struct err *e) {
    if (MPI_Gather(buf, (int)n, MPI_BYTE, out, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        return err_set(e, ERR_IO, "MPI_Gather failed");
    return 0;
}
#else
int dist_built(void) { return 0; }
int dist_init(int *argc, char ***argv, struct err *e) {
    (void)argc, (void)argv, (void)e;
    return 0;
}
void dist_finalize(void) {}
int dist_rank(void) { return 0; }
int dist_size(void) { return 1; }
void dist_abort(int code) { (void)code; }
int dist_send(int to, int tag, const void *buf, size_t n, struct err *e) {
    (void)tag, (void)buf, (void)n;
    return err_set(e, ERR_INTERNAL, "send to rank %d: this binary is built without MPI", to);
}
int dist_wait(int from, int tag, double timeout_s, int *from_out, int *tag_out, size_t *n_out) {
    (void)from, (void)tag, (void)timeout_s, (void)from_out, (void)tag_out, (void)n_out;
    return 1;
}
int dist_recv(int from, int tag, void *buf, size_t n, struct err *e) {
    (void)tag, (void)buf, (void)n;
    return err_set(e, ERR_INTERNAL, "receive from rank %d: this binary is built without MPI", from);
}
int dist_max_int(int v) { return v; }
int dist_gather(const void *buf, size_t n, void *out, struct err *e) {
    (void)e;
    memcpy(out, buf, n);
    return 0;
}
#endif
