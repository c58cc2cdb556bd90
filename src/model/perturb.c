// perturb.c: the one-ulp null perturbation of run --replicas (see perturb.h).
#include "model/perturb.h"

#include <string.h>

#define GOLD 0x9e3779b97f4a7c15ull

static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t tensor_base(const struct perturb_key *k) {
    return mix(mix(k->seed + (uint64_t)(k->replica + 1) * GOLD) ^ (uint64_t)k->tensor);
}

static int bit_at(uint64_t base, uint64_t element) { return (int)(mix(base + (element + 1) * GOLD) >> 63); }

int perturb_bit(const struct perturb_key *k, uint64_t element) { return bit_at(tensor_base(k), element); }

float perturb_one(float x, int bit) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t s = u & 0x80000000u, m = u & 0x7fffffffu;
    if (!bit) {
        if (m < 0x00800000u || m >= 0x7f800000u) return x;
        m ^= 1u;
    } else {
        if (m <= 0x00800000u || m >= 0x7f7fffffu) return x;
        m = ((m - 1u) ^ 1u) + 1u;
    }
    u = s | m;
    memcpy(&x, &u, sizeof x);
    return x;
}

void perturb_array(float *x, size_t n, const struct perturb_key *k, uint64_t elem0) {
    const uint64_t base = tensor_base(k);
    for (size_t i = 0; i < n; i++) x[i] = perturb_one(x[i], bit_at(base, elem0 + i));
}

void perturb_packed(struct gemm_w *w, const struct perturb_key *k) {
    const uint64_t base = tensor_base(k);
    const size_t K = (size_t)w->K;
    const int n_panels = (w->N + GEMM_NR - 1) / GEMM_NR;
    for (int p = 0; p < n_panels; p++) { // panel order: (K, GEMM_NR) floats, contiguous
        const int n0 = p * GEMM_NR, nj = w->N - n0 < GEMM_NR ? w->N - n0 : GEMM_NR;
        for (size_t kk = 0; kk < K; kk++) {
            float *row = w->p + ((size_t)p * K + kk) * GEMM_NR;
            for (int j = 0; j < nj; j++) row[j] = perturb_one(row[j], bit_at(base, (uint64_t)(n0 + j) * K + kk));
        }
    }
}
