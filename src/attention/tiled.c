// tiled.c: the descriptors of the FlashAttention-tiled modes (spec/attention.md section 3-4,
// paper Table 7 rows A-E). Each mode is its flag set over the shared kernel in flash.c; a new
// tiled mode is one TILED_MODE line here plus one registry line in attn.c. The Q-Mean form is a
// run option (attn_call.qmean), not a mode: a mode with ATTN_F_QMEAN runs the channel form
// `qmean-ch` when the call asks for it.
#include "attention/modes.h"

#define TILED_MODE(ident, mname, mlabel, mflags)                                                   \
    static void fwd_##ident(const struct attn_operands *x, const struct attn_call *c, int h0, int h1, \
                            void *scratch) {                                                       \
        unsigned f_ = (mflags);                                                                    \
        if ((f_ & ATTN_F_QMEAN) && c->qmean == ATTN_QMEAN_CHANNEL) f_ |= ATTN_F_QMEAN_CH;          \
        attn_flash_forward(x, c, h0, h1, scratch, f_);                                             \
    }                                                                                              \
    const struct attn_mode attn_mode_##ident = {                                                   \
        .name = mname, .label = mlabel, .flags = (mflags),                                         \
        .scratch_bytes = attn_flash_scratch, .forward = fwd_##ident,                               \
    };

#define BASE (ATTN_F_ROUND_INPUT | ATTN_F_TILED)
#define Q4 (BASE | ATTN_F_QUANT)

TILED_MODE(bf16, "bf16", "BF16 (C16V16)", BASE)
TILED_MODE(direct, "direct", "Direct HIF4 (C4V16, A)", Q4)
TILED_MODE(direct_qmean, "direct+qmean", "Direct + Q-Mean (B)", Q4 | ATTN_F_QMEAN)
TILED_MODE(direct_qmean_sqk, "direct+qmean+sqk", "Direct + Q-Mean + Smooth-QK (C)",
           Q4 | ATTN_F_QMEAN | ATTN_F_SQK)
TILED_MODE(direct_qmean_preorder, "direct+qmean+preorder", "Direct + Q-Mean + P-Reordering (D)",
           Q4 | ATTN_F_QMEAN | ATTN_F_PREORDER)
TILED_MODE(hifa4, "hifa4", "HiFA4 (C4V16-Aux, E)", Q4 | ATTN_F_QMEAN | ATTN_F_SQK | ATTN_F_PREORDER)
