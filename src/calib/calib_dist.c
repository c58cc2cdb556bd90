// calib_dist.c: see calib_dist.h. A worker's message: int32 count, then per observed sample
// its index (int32) and its row of every per-sample array, then the fallback count (int64).
#include "calib/calib_dist.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/dist.h"

#define TAG_STATS 21

int calib_dist_mine(int batch) { return batch % dist_size() == dist_rank(); }

// bytes of one sample's statistics
static size_t row_bytes(const struct calib_stats *s) {
    const size_t L = (size_t)s->n_layers, big = L * (size_t)s->Hkv * (size_t)s->d;
    return 2 * big * sizeof(float) + 4 * L * sizeof(float) + L;
}

// Copies sample i's row between s and buf (to_buf: s -> buf).
static void move_row(struct calib_stats *s, int i, unsigned char *buf, int to_buf) {
    const size_t L = (size_t)s->n_layers, big = L * (size_t)s->Hkv * (size_t)s->d;
    struct { void *p; size_t n; } part[7] = {
        {s->kmax + (size_t)i * big, big * sizeof(float)}, {s->qmax + (size_t)i * big, big * sizeof(float)},
        {s->kp99 + (size_t)i * L, L * sizeof(float)},     {s->qp99 + (size_t)i * L, L * sizeof(float)},
        {s->kp999 + (size_t)i * L, L * sizeof(float)},    {s->kstd + (size_t)i * L, L * sizeof(float)},
        {s->seen + (size_t)i * L, L}};
    for (int k = 0; k < 7; k++) {
        if (to_buf) memcpy(buf, part[k].p, part[k].n);
        else memcpy(part[k].p, buf, part[k].n);
        buf += part[k].n;
    }
}

static int send_mine(struct calib_stats *s, struct err *e) {
    const size_t rb = row_bytes(s), L = (size_t)s->n_layers;
    int32_t n = 0;
    for (int i = 0; i < s->n_samples; i++) n += s->seen[(size_t)i * L] != 0;
    const size_t total = sizeof n + (size_t)n * (sizeof(int32_t) + rb) + sizeof(int64_t);
    unsigned char *buf = malloc(total), *p = buf;
    if (!buf) return err_set(e, ERR_NOMEM, "calibration: out of memory");
    memcpy(p, &n, sizeof n), p += sizeof n;
    for (int32_t i = 0; i < s->n_samples; i++) {
        if (!s->seen[(size_t)i * L]) continue;
        memcpy(p, &i, sizeof i), p += sizeof i;
        move_row(s, i, p, 1), p += rb;
    }
    memcpy(p, &s->n_fallback, sizeof s->n_fallback);
    int rc = dist_send(0, TAG_STATS, buf, total, e);
    free(buf);
    return rc;
}

static int take(struct calib_stats *s, const unsigned char *p, size_t len, int from, struct err *e) {
    const size_t rb = row_bytes(s);
    int32_t n;
    if (len < sizeof n + sizeof(int64_t)) return err_set(e, ERR_IO, "calibration: rank %d sent %zu bytes", from, len);
    memcpy(&n, p, sizeof n), p += sizeof n;
    if (n < 0 || len != sizeof n + (size_t)n * (sizeof(int32_t) + rb) + sizeof(int64_t))
        return err_set(e, ERR_IO, "calibration: rank %d sent %zu bytes for %d samples", from, len, n);
    for (int32_t k = 0; k < n; k++) {
        int32_t i;
        memcpy(&i, p, sizeof i), p += sizeof i;
        if (i < 0 || i >= s->max_samples) return err_set(e, ERR_IO, "calibration: rank %d sent sample %d", from, i);
        move_row(s, i, (unsigned char *)p, 0), p += rb;
        if (i + 1 > s->n_samples) s->n_samples = i + 1;
    }
    int64_t fb;
    memcpy(&fb, p, sizeof fb);
    s->n_fallback += fb;
    return 0;
}

int calib_dist_gather(struct calib_stats *s, struct err *e) {
    if (dist_size() == 1) return 0;
    if (dist_rank() > 0) return send_mine(s, e);
    int rc = 0;
    for (int k = 1; k < dist_size() && !rc; k++) {
        int from, tag;
        size_t n;
        dist_wait(k, TAG_STATS, 0, &from, &tag, &n);
        unsigned char *buf = malloc(n + 1);
        if (!buf) return err_set(e, ERR_NOMEM, "calibration: out of memory");
        if (!(rc = dist_recv(k, TAG_STATS, buf, n, e))) rc = take(s, buf, n, k, e);
        free(buf);
    }
    return rc;
}
