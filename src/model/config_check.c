// config_check.c: values a config.json may hold as valid JSON that mean nothing for the
// architecture (config.h, cfg_check_meaning). cfg_parse has read every field into c
// before this runs, and already refuses what it reads in one place (a switched-on window of 0,
// rms_norm_eps outside (0, 1), rope_theta <= 1, an odd head_dim or rotary dimension); these
// are the cases where the parsed value alone hides the mistake.
#include "model/config.h"

#include <cjson/cJSON.h>
#include <math.h>

// A softcap given as the number 0: HF divides the scores by it (tanh(x / 0) * 0 is NaN) where
// the parser reads 0 as "no cap" - so a run would silently differ from the reference.
static int check_softcap(const cJSON *root, const char *key, const char *ctx, struct err *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (cJSON_IsNumber(v) && v->valuedouble == 0)
        return err_set(e, ERR_FORMAT, "%s: field '%s': 0 caps every logit at 0 (tanh(x / 0) * 0): give a positive cap, or "
                       "null for none", ctx, key);
    return 0;
}

int cfg_check_meaning(const struct model_config *c, const struct cJSON *root, const char *ctx, struct err *e) {
    int rc;
    if ((c->arch == ARCH_GEMMA2 || c->arch == ARCH_GEMMA3) && ((rc = check_softcap(root, "attn_logit_softcapping", ctx, e)) ||
                                   (rc = check_softcap(root, "final_logit_softcapping", ctx, e))))
        return rc;
    // Qwen2/3: layers from max_window_layers on slide; a negative count of layers is no count
    const cJSON *mwl = cJSON_GetObjectItemCaseSensitive(root, "max_window_layers");
    if ((c->arch == ARCH_QWEN2 || c->arch == ARCH_QWEN3) && cJSON_IsNumber(mwl) && mwl->valuedouble < 0)
        return err_set(e, ERR_FORMAT, "%s: field 'max_window_layers': %g is negative (the layers from this index on slide: "
                       "0 for all of them)", ctx, mwl->valuedouble);
    // longrope: the scaling factor divides positions' context; <= 0 (or NaN) scales nothing sensible
    if (c->rope_type == ROPE_LONGROPE && !(c->rope_factor > 0 && isfinite(c->rope_factor)))
        return err_set(e, ERR_FORMAT, "%s: rope_scaling (longrope): factor %g (max_position_embeddings / "
                       "original_max_position_embeddings, or rope_scaling.factor) must be positive", ctx, c->rope_factor);
    return 0;
}
