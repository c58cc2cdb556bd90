// tensor_names.h: which tensor names a checkpoint may hold for a config (every tensor
// is used or named). A name is either one the model binds for this config (weights.c's
// bind_layer, selected by the same config flags) or on the short known-unused list (the rotary
// `inv_freq` buffers some exporters save); anything else - a layer at or past
// num_hidden_layers, a bias or norm the declared architecture does not have, an untied head
// under tie_word_embeddings, a name of another architecture - is an ERR_FORMAT naming the
// tensor and the config field that rules it out. Pure: names and a config, no weights.
#ifndef HIFA4_TENSOR_NAMES_H
#define HIFA4_TENSOR_NAMES_H

#include "base/common.h"
#include "model/config.h"

enum tensor_use { TENSOR_BOUND = 0, TENSOR_KNOWN_UNUSED = 1 };

// Classifies `name` under c into *use; cfg_file names the config in errors ("config.json").
int tensor_name_check(const struct model_config *c, const char *name, const char *cfg_file, enum tensor_use *use,
                      struct err *e);

#endif
