// tok_llama2c.c: placeholder until the tokenizer module lands (see tok_llama2c.h).
#include "tok_llama2c.h"

int tok_llama2c_to_json(const char *path, int vocab_size, char **json, struct err *e) {
    (void)vocab_size;
    *json = 0;
    return err_set(e, ERR_UNSUPPORTED, "%s: llama2.c tokenizer conversion not implemented yet", path);
}
