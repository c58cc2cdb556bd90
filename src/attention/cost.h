// cost.h: the emulated Ascend cost counter and cycle model (spec/cost.md). Counts are exact
// functions of the call shape and the mode flags (no data is looked at), so attn_forward can
// add them for every call; a small parameter file (configs/ascend/*.json) turns counts into
// Cube / vector cycles per stage and a critical path. Knows no numerics and no models.
#ifndef HIFA4_COST_H
#define HIFA4_COST_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/common.h"

// ---- counts (spec/cost.md section 1) ----
// Vector operations, counted in elements (one element-op = one element through one vector
// instruction). Three groups, which feed the three stages of the cycle model:
enum cost_vop {
    // softmax stage, per score element of every visited Br x Bc tile and query head
    COST_V_MAX,       // row max of S
    COST_V_SUB,       // S - m_new
    COST_V_EXP,       // exp(S - m_new)
    COST_V_SUM,       // row sum of P (absent under ATTN_F_PREORDER: fused into the Cube)
    COST_V_CAST,      // P -> 16-bit PV operand (absent under ATTN_F_QUANT)
    COST_V_QDQ,       // HiF4 qdq of P (ATTN_F_QUANT)
    COST_V_ADD,       // Q-Mean correction per score: + fp16(mu*kappa) (token form) or + delta_j
                      // (channel form) (ATTN_F_QMEAN)
    // softmax stage, per visited tile and query head, not per score element
    COST_V_QMEAN_GEMV,// channel form (ATTN_F_QMEAN_CH): delta = mu . K^T over the tile's Bc keys,
                      // Bc*d multiply-adds (charged like the Q-Mean reductions, kind qmean)
    // softmax stage, per tile row (Br rows per visited tile and query head)
    COST_V_ROW_MR,    // m_new = max(m, m_t), m - m_new: 2 per row
    COST_V_ROW_MR_EXP,// r = exp(m - m_new): 1 per row
    COST_V_ROW_L,     // l = r*l + rowsum: 2 per row
    COST_V_ROW_O,     // O = r*O: d per row
    // other stage, outside the tile loop, per call
    COST_V_QKV_QDQ,   // HiF4 of Q, K, V: T*H*d + 2*T*Hkv*d (ATTN_F_QUANT)
    COST_V_SMOOTH,    // Smooth-QK scaling: T*(H+Hkv)*d (ATTN_F_SQK)
    COST_V_QMEAN,     // Q-Mean means: token form the row means and kappa, T*H*d + T*Hkv*d; channel
                      // form a column mean over each query tile's Br rows x d, ceil(T/Br)*Br*H*d
    COST_V_FINAL,     // final O / l: T*H*d
    COST_V_COUNT
};
#define COST_V_FIRST_ROW COST_V_ROW_MR
#define COST_V_FIRST_OTHER COST_V_QKV_QDQ

// Short JSON/CLI name of a vector op ("max", "qmean_gemv", "row_mr", "qkv_qdq", ...); static
// storage.
const char *cost_vop_name(int vop);

// Exact counts. Everything is an integer count except bytes4, which is elements * 4.5 / 8
// (exact in binary64: a multiple of 1/16). Zero-initialise, then add calls.
struct cost_counts {
    int64_t calls;         // attention calls (one sequence, one layer, all heads)
    int64_t tokens;        // sum of T over calls
    int64_t tiles;         // visited (row block, key tile) pairs, summed over query heads
    int64_t mac16_qk, mac16_pv, mac16_ones; // 16-bit Cube MACs (ones: preorder column)
    int64_t mac4_qk, mac4_pv, mac4_ones;    // 4-bit (HiF4-operand) Cube MACs
    int64_t vop[COST_V_COUNT];              // vector element-ops by enum cost_vop
    int64_t elems16;       // Q, K, V, O elements moved at 16 bits
    int64_t elems4;        // Q, K, V elements moved as HiF4 (4.5 bits: 36-byte unit / 64)
    int64_t bytes16;       // 2 * elems16
    double bytes4;         // elems4 * 4.5 / 8
};

// Cost tiling (spec/cost.md section 1): independent of the emulation's --tile; attn_forward
// counts every call with these.
#define COST_BR_DEFAULT 128
#define COST_BC_DEFAULT 128

// Visited (row block, key tile) pairs of one query head for a causal sequence of T tokens,
// optional sliding window (0 = none; key j visible to query i iff j <= i and i - j < window),
// row blocks of Br queries and key tiles of Bc keys, both starting at 0. A pair is visited
// when it holds at least one visible (i, j). Edge blocks/tiles past T count like full ones
// (the hardware pads them). O(T / Br). Returns 0 for T <= 0, Br <= 0 or Bc <= 0.
int64_t cost_visited_tiles(int T, int window, int Br, int Bc);

// Adds one attention call (one sequence, one layer, all H query heads) of a mode with
// `mode_flags` (enum attn_flag of attention/attn.h; attn_mode_run_flags gives the channel
// form's ATTN_F_QMEAN_CH) to *acc. Per visited tile and query head it counts Br*Bc score
// elements and Br rows (spec/cost.md section 1); flags without ATTN_F_QUANT count as the
// 16-bit kernel (the reference modes f32/exact are charged like bf16). The channel form of
// Q-Mean (not in spec/cost.md yet) replaces the token form's per-row mean and kappa
// by a column mean per query tile (Br rows x d, other stage) and adds a mu . K^T GEMV per
// visited tile (Bc x d, softmax stage: it runs on the vector units beside the scores); the
// per-score correction add is the same in both forms. Cheap: O(T / Br), no allocation,
// thread-safe for distinct acc. Does nothing when a dimension is <= 0 (callers validate shapes
// before they call). Every count is checked: one that would not fit in 64 bits (e.g. 4096
// layers x 1024 heads x head_dim 65536 at T = 4M) leaves *acc unchanged and is ERR_RANGE
// naming the count and the shape (e may be NULL).
// The shape of one (sequence, layer) call: T rows, H query and Hkv kv heads of d channels, the
// sliding window (0 = none), the tiles Br x Bc.
struct cost_shape {
    int T, H, Hkv, d, window, Br, Bc;
};
int cost_count_call(struct cost_counts *acc, unsigned mode_flags, const struct cost_shape *sh, struct err *e);

// a += b, field by field; ERR_RANGE naming the field (and *a unchanged) on 64-bit overflow.
int cost_add(struct cost_counts *a, const struct cost_counts *b, struct err *e);

// JSON object with every count (numbers; exact up to 2^53). Caller owns (cJSON_Delete);
// NULL on OOM.
cJSON *cost_counts_json(const struct cost_counts *c);

// Reads an object written by cost_counts_json back (e.g. from a run.json), validating every
// field (present, integer, >= 0; vector_ops.qmean_gemv may be absent, as in run.json files
// written before the channel form: 0); errors name ctx (the file) and the field.
int cost_counts_from_json(struct cost_counts *c, const cJSON *obj, const char *ctx, struct err *e);

// ---- parameters (configs/ascend/*.json; spec/cost.md section 2) ----
// Cost kinds: lane-cycles per element of each vector op group. Several vops share a kind:
// the row exp uses "exp", HiF4 of Q/K/V uses "qdq", all row updates use "row".
enum cost_kind {
    COST_K_MAX, COST_K_SUB, COST_K_EXP, COST_K_SUM, COST_K_CAST, COST_K_QDQ, COST_K_ADD,
    COST_K_ROW, COST_K_SMOOTH, COST_K_QMEAN, COST_K_FINAL, COST_K_COUNT
};
const char *cost_kind_name(int kind);  // JSON key under "vector_cost"; static storage
int cost_vop_kind(int vop);            // enum cost_kind charged for a vop

struct cost_params {
    char name[64];                 // "name" of the file
    double cube_macs_per_cycle_16; // 16-bit MACs per cycle of one Cube unit (> 0)
    double cube_4bit_speedup;      // HiF4-operand MAC rate / 16-bit rate (> 0)
    int n_vector_units;            // vector units per Cube unit (>= 1)
    double vector_lanes;           // elements per cycle of one vector unit (> 0)
    double vector_cost[COST_K_COUNT]; // lane-cycles per element, by enum cost_kind (>= 0)
};

// Loads and validates a parameter file. Every parameter is an object
// {"value": number, "basis": "hardware"|"assumption"|"fitted", "doc": "non-empty text"};
// all are required, unknown keys are errors (typos must not silently fall back). Errors
// (ERR_IO / ERR_NOTFOUND / ERR_FORMAT / ERR_RANGE) name the file and the field.
int cost_params_load(struct cost_params *p, const char *path, struct err *e);

// ---- cycle model ----
struct cost_cycles {
    double cube;      // sum of MACs / Cube rate (16-bit and 4-bit operands)
    double softmax;   // per-tile vector work (score element ops and row ops), one unit's cycles
    double other;     // outside-the-loop vector work, one unit's cycles (reported, not added)
    double critical;  // max(cube, softmax / n_vector_units)
    int vector_bound; // 1 when softmax / n_vector_units > cube (bottleneck "Vector"), else 0
};

// Turns counts into cycles (spec/cost.md section 2). Pure function.
void cost_cycles(struct cost_cycles *out, const struct cost_counts *c, const struct cost_params *p);

// JSON object {"cube":..,"softmax":..,"other":..,"critical":..,"bottleneck":"Cube"|"Vector"}.
// Caller owns; NULL on OOM.
cJSON *cost_cycles_json(const struct cost_cycles *cy);

#endif
