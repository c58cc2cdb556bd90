// modes.h: the mode descriptors each src/attention/<mode>.c file defines, for the registry
// in attn.c. Internal to src/attention/.
#ifndef HIFA4_ATTN_MODES_H
#define HIFA4_ATTN_MODES_H

#include "attention/attn.h"

extern const struct attn_mode attn_mode_exact; // ref.c
extern const struct attn_mode attn_mode_f32;   // ref.c

#endif
