// fuzz_binding.c: config.json against a checkpoint's tensor names (every tensor is
// used or named; model/tensor_names.c). Input: a config.json text, a NUL byte, then tensor
// names one per line (without a NUL: the config alone). For a config cfg_parse accepts:
//  - every name the model binds for it (the oracle below, written from weights.c's bind_layer
//    independently of tensor_names.c) is accepted as bound, at every layer < num_hidden_layers,
//    and refused naming num_hidden_layers at layer num_hidden_layers;
//  - a fuzzed name accepted as bound is one of the oracle's names at a layer in range, one
//    accepted as known-unused ends in "inv_freq"; a refused one has an error that starts with
//    the name (it names the tensor) and says which config field or architecture rules it out.
// fuzz-seeds: ../shared/goldens/models/*/config.json build/fuzz-seeds/config/* tests/data/fuzz/binding/*
// fuzz-max-len: 8192
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "model/config.h"
#include "model/tensor_names.h"

#define MAX_NAMES 48

struct oracle {
    int n;
    const char *suffix[MAX_NAMES]; // per-layer names after "model.layers.N."
};

// The per-layer tensors bind_layer binds for c (weights.c), in its order.
static void oracle_layer(const struct model_config *c, struct oracle *o) {
    o->n = 0;
#define ADD(s) (o->suffix[o->n++] = (s))
    if (c->fused_qkv) ADD("self_attn.qkv_proj.weight");
    else ADD("self_attn.q_proj.weight"), ADD("self_attn.k_proj.weight"), ADD("self_attn.v_proj.weight");
    ADD("self_attn.o_proj.weight");
    if (c->fused_gate_up) ADD("mlp.gate_up_proj.weight");
    else ADD("mlp.gate_proj.weight"), ADD("mlp.up_proj.weight");
    ADD("mlp.down_proj.weight");
    if (c->qkv_bias) ADD("self_attn.q_proj.bias"), ADD("self_attn.k_proj.bias"), ADD("self_attn.v_proj.bias");
    if (c->o_bias) ADD("self_attn.o_proj.bias");
    if (c->mlp_bias) ADD("mlp.gate_proj.bias"), ADD("mlp.up_proj.bias"), ADD("mlp.down_proj.bias");
    ADD("input_layernorm.weight"), ADD("post_attention_layernorm.weight");
    if (c->sandwich_norm) ADD("pre_feedforward_layernorm.weight"), ADD("post_feedforward_layernorm.weight");
    if (c->qk_norm) ADD("self_attn.q_norm.weight"), ADD("self_attn.k_norm.weight");
#undef ADD
}

static void fail(const char *what, const char *name, const struct err *e) {
    fprintf(stderr, "binding: %s: '%s' (%s)\n", what, name, e && e->msg[0] ? e->msg : "no error");
    abort();
}

static int check(const struct model_config *c, const char *name, enum tensor_use *u, struct err *e) {
    memset(e, 0, sizeof *e);
    int rc = tensor_name_check(c, name, "config.json", u, e);
    if (rc && (!e->code || strncmp(e->msg, name, strlen(name)) || e->msg[strlen(name)] != ':'))
        fail("refused without naming the tensor first", name, e);
    if (rc && !strstr(e->msg, "config.json")) fail("refused without naming the config", name, e);
    return rc;
}

// Is `name` one of the names the model binds under c?
static int oracle_has(const struct model_config *c, const struct oracle *o, const char *name) {
    if (!strcmp(name, "model.embed_tokens.weight") || !strcmp(name, "model.norm.weight")) return 1;
    if (!strcmp(name, "lm_head.weight")) return !c->tie_embeddings;
    for (int l = 0; l < c->n_layers; l++)
        for (int i = 0; i < o->n; i++) {
            char n[256];
            snprintf(n, sizeof n, "model.layers.%d.%s", l, o->suffix[i]);
            if (!strcmp(n, name)) return 1;
        }
    return 0;
}

static void check_oracle(const struct model_config *c, const struct oracle *o) {
    struct err e;
    enum tensor_use u;
    const char *top[3] = {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"};
    for (int k = 0; k < 3 - c->tie_embeddings; k++)
        if (check(c, top[k], &u, &e) || u != TENSOR_BOUND) fail("a bound tensor refused", top[k], &e);
    for (int i = 0; i < o->n; i++) {
        char n[256];
        const int ls[3] = {0, c->n_layers - 1, c->n_layers};
        for (int k = 0; k < 3; k++) {
            snprintf(n, sizeof n, "model.layers.%d.%s", ls[k], o->suffix[i]);
            const int rc = check(c, n, &u, &e);
            if (k < 2 && (rc || u != TENSOR_BOUND)) fail("a bound tensor refused", n, &e);
            if (k == 2 && (!rc || !strstr(e.msg, "num_hidden_layers"))) fail("a layer past num_hidden_layers accepted", n, &e);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)fz_dir();
    const char *buf = (const char *)data, *nul = memchr(buf, 0, size);
    const size_t cfg_len = nul ? (size_t)(nul - buf) : size;
    struct model_config *c = malloc(sizeof *c);
    struct err e = {0};
    if (!c || cfg_parse(c, buf, cfg_len, "config.json", &e)) { free(c); return 0; }
    struct oracle o;
    oracle_layer(c, &o);
    check_oracle(c, &o);
    for (const char *p = nul ? nul + 1 : buf + size, *end = buf + size; p < end;) {
        const char *lf = memchr(p, '\n', (size_t)(end - p));
        const size_t n = lf ? (size_t)(lf - p) : (size_t)(end - p);
        char name[512];
        if (n < sizeof name && !memchr(p, 0, n)) {
            memcpy(name, p, n), name[n] = 0;
            enum tensor_use u;
            if (!check(c, name, &u, &e)) {
                if (u == TENSOR_BOUND && !oracle_has(c, &o, name)) fail("a tensor the model does not bind accepted", name, &e);
                if (u == TENSOR_KNOWN_UNUSED && (n < 8 || strcmp(name + n - 8, "inv_freq")))
                    fail("known-unused but not an inv_freq", name, &e);
            }
        }
        p += n + 1;
    }
    free(c);
    return 0;
}
