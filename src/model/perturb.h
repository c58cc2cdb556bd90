// perturb.h: the seeded null perturbation of `run --replicas K`: every binary32
// weight element moved by one ulp up or down, the direction from a hash of (seed, replica,
// tensor, element). A change far below what the model's function notices, so whatever a
// decision does under it is noise.
//
// The move is an involution on the bits, so applying the same perturbation twice restores every
// weight exactly (no saved copy): with m the element's magnitude bits (bits & 0x7fffffff) and
// h the hash bit, h = 0 toggles m within the pair {2j, 2j+1} (m ^ 1), h = 1 within the pair
// {2j-1, 2j} (((m - 1) ^ 1) + 1). Either way m moves by one - one ulp, to the adjacent binary32
// value of the same sign - up or down as h and m's last bit say; the sign bit never changes.
// Elements whose partner would leave the normal finite range are left alone: zeros and
// subnormals (m < 0x00800000), for h = 1 also the smallest normal (m == 0x00800000 pairs with a
// subnormal), for h = 0 m >= 0x7f800000 (inf, NaN), for h = 1 m >= 0x7f7fffff (FLT_MAX pairs
// with inf). Nothing ever becomes inf, NaN or subnormal.
//
// Revision 2 (PERTURB_REVISION). Revision 1 also moved zeros to the smallest subnormal (h = 0):
// a change no result notices in its value, but quantized checkpoints hold many exact zeros
// (0.8% of Qwen2.5-Coder-0.5B's weights, 4.5% of Gemma 3 270M's in the part measured), and every
// product with a subnormal takes a microcode assist on x86: the forward of a replica ran 15x
// slower than replica 0's on the 0.5B. Results of the two revisions may differ where a zero's
// subnormal neighbour broke a rounding tie; run.json records the revision and a run of one is
// never resumed or merged with the other.
#ifndef HIFA4_PERTURB_H
#define HIFA4_PERTURB_H

#include <stddef.h>
#include <stdint.h>

#include "model/gemm.h"

// The name and revision run.json records for this perturbation.
#define PERTURB_NAME "weight-ulp"
#define PERTURB_REVISION 2

// Which perturbation: replica r >= 1 of a run with this seed, and the tensor being moved.
struct perturb_key {
    uint64_t seed;
    int replica;
    uint32_t tensor;   // the caller's canonical tensor number (the same on every machine)
};

// The hash bit of element `element` (row-major index in the logical tensor):
// b = mix(mix(mix(seed + (replica + 1) * G) ^ tensor) + (element + 1) * G) >> 63 with
// G = 0x9e3779b97f4a7c15 and mix the SplitMix64 finalizer (stats.h cites it).
int perturb_bit(const struct perturb_key *k, uint64_t element);
// One element moved by the rule above (its own inverse).
float perturb_one(float x, int bit);

// x[i] (the tensor's elements elem0 + i) moved in place.
void perturb_array(float *x, size_t n, const struct perturb_key *k, uint64_t elem0);
// A packed matrix (gemm.h panels) moved in place element (n, k) -> index n * K + k, so the
// bits do not depend on the layout; padding past N untouched.
void perturb_packed(struct gemm_w *w, const struct perturb_key *k);

#endif
