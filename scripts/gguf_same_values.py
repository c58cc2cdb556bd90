#!/usr/bin/env python3
"""gguf_same_values.py: do llama.cpp and hifa4-eval compute with the same weights?

   usage: scripts/gguf_same_values.py MODEL.gguf HIFA4_DIR

Reads every F32/F16/BF16 tensor of a GGUF (what llama.cpp computes with: it uses the stored
values as they are) and the model.safetensors that `hifa4-eval import-gguf` wrote from it, and
compares them tensor by tensor, after undoing the two transformations import-gguf documents
(src/import/gguf_import.c): the llama.cpp Q/K row permutation of llama-architecture models
(rows compared as bytes in the un-permuted order) and Gemma's stored 1 + w for norm weights
(the import stores w = stored - 1; the model computes 1 + w in binary32, which is compared with
the stored value). Prints one line per kind of tensor (matrices, vectors) with the count of
tensors whose values are identical, and for the others the largest relative difference; exit
status 1 if a GEMM matrix (2-D tensor) differs in any value. Python 3 standard library only.
"""
import json
import struct
import sys

GGML = {0: ("F32", 4), 1: ("F16", 2), 30: ("BF16", 2)}
KV_FIXED = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_gguf(path):
    data = open(path, "rb").read()
    if data[:4] != b"GGUF":
        sys.exit("gguf_same_values: %s: not a GGUF file" % path)
    pos = 8
    n_t, n_kv = struct.unpack_from("<QQ", data, pos)
    pos += 16

    def string(p):
        n = struct.unpack_from("<Q", data, p)[0]
        return data[p + 8:p + 8 + n].decode("utf-8", "replace"), p + 8 + n

    def value(t, p):
        if t in KV_FIXED:
            f = "<" + KV_FIXED[t]
            return struct.unpack_from(f, data, p)[0], p + struct.calcsize(f)
        if t == 8:
            return string(p)
        if t == 9:
            et, n = struct.unpack_from("<IQ", data, p)
            p += 12
            if et in KV_FIXED:  # skip fixed-size arrays without decoding them
                return None, p + n * struct.calcsize("<" + KV_FIXED[et])
            for _ in range(n):
                _, p = value(et, p)
            return None, p
        sys.exit("gguf_same_values: %s: metadata type %d unknown" % (path, t))

    meta = {}
    for _ in range(n_kv):
        k, pos = string(pos)
        t = struct.unpack_from("<I", data, pos)[0]
        meta[k], pos = value(t, pos + 4)
    tensors = []
    for _ in range(n_t):
        name, pos = string(pos)
        nd = struct.unpack_from("<I", data, pos)[0]
        ne = struct.unpack_from("<%dq" % nd, data, pos + 4)
        pos += 4 + 8 * nd
        typ, off = struct.unpack_from("<IQ", data, pos)
        pos += 12
        tensors.append((name, ne, typ, off))
    align = meta.get("general.alignment") or 32
    base = (pos + align - 1) // align * align
    out = {}
    for name, ne, typ, off in tensors:
        if typ not in GGML:
            sys.exit("gguf_same_values: %s: tensor %s has ggml type %d (make F32/BF16 GGUFs first)" % (path, name, typ))
        n = 1
        for d in ne:
            n *= d
        size = GGML[typ][1]
        out[name] = (ne, GGML[typ][0], data[base + off:base + off + n * size])
    return meta, out


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack_from("<Q", data, 0)[0]
    head = json.loads(data[8:8 + n])
    out = {}
    for name, t in head.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        out[name] = (t["shape"], t["dtype"], data[8 + n + a:8 + n + b])
    return out


def f16(h):
    return struct.unpack("<e", struct.pack("<H", h))[0]


def floats(dtype, raw):
    if dtype == "F32":
        return list(struct.unpack("<%df" % (len(raw) // 4), raw))
    hs = struct.unpack("<%dH" % (len(raw) // 2), raw)
    if dtype == "BF16":
        return list(struct.unpack("<%df" % len(hs), struct.pack("<%dI" % len(hs), *[h << 16 for h in hs])))
    return [f16(h) for h in hs]


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


LAYER = {"attn_norm.weight": "input_layernorm.weight", "attn_q.weight": "self_attn.q_proj.weight",
         "attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
         "attn_output.weight": "self_attn.o_proj.weight", "attn_q_norm.weight": "self_attn.q_norm.weight",
         "attn_k_norm.weight": "self_attn.k_norm.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
         "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight",
         "post_ffw_norm.weight": "post_feedforward_layernorm.weight"}
GLOBAL = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
          "output.weight": "lm_head.weight"}


def hf_name(name, arch):
    if name in GLOBAL:
        return GLOBAL[name]
    if not name.startswith("blk."):
        return None
    layer, rest = name[4:].split(".", 1)
    gemma = arch.startswith("gemma")
    if rest == "ffn_norm.weight":
        rest_hf = "pre_feedforward_layernorm.weight" if gemma else "post_attention_layernorm.weight"
    elif rest == "post_attention_norm.weight":
        rest_hf = "post_attention_layernorm.weight"
    else:
        rest_hf = LAYER.get(rest)
    return rest_hf and "model.layers.%s.%s" % (layer, rest_hf)


def unpermute(raw, rows, heads):
    """import-gguf's X_PERM: HF row h*hd + r <- GGUF row h*hd + 2r (r < hd/2), else 2(r - hd/2) + 1."""
    cols = len(raw) // rows
    hd = rows // heads
    out = []
    for h in range(heads):
        for r in range(hd):
            src = h * hd + (2 * r if r < hd // 2 else 2 * (r - hd // 2) + 1)
            out.append(raw[src * cols:(src + 1) * cols])
    return b"".join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1].strip())
    meta, g = read_gguf(sys.argv[1])
    st = read_safetensors(sys.argv[2] + "/model.safetensors")
    arch = meta.get("general.architecture", "")
    heads = {"q": meta.get(arch + ".attention.head_count"), "k": meta.get(arch + ".attention.head_count_kv")}
    stats = {}  # kind -> [tensors, identical, max relative difference]
    bad_matrix = 0
    for name, (ne, gtype, graw) in sorted(g.items()):
        hf = hf_name(name, arch)
        if hf is None or hf not in st:
            continue
        shape, stype, sraw = st[hf]
        kind = "matrices" if len(ne) == 2 else "vectors"
        s = stats.setdefault(kind, [0, 0, 0.0, set()])
        s[0] += 1
        s[3].add("%s->%s" % (gtype, stype))
        rows = ne[1] if len(ne) == 2 else ne[0]
        leaf = name.split(".")[-2]
        if arch == "llama" and leaf in ("attn_q", "attn_k"):
            graw = unpermute(graw, rows, heads[leaf[-1]])
        plus_one = arch.startswith("gemma") and name.endswith("norm.weight")
        if not plus_one and gtype == stype and graw == sraw:
            s[1] += 1
            continue
        a, b = floats(gtype, graw), floats(stype, sraw)
        if plus_one:
            b = [f32(1.0 + v) for v in b]
        diff = max((abs(x - y) / max(abs(x), 1e-30) for x, y in zip(a, b) if x != y), default=0.0)
        if diff == 0.0 and len(a) == len(b):
            s[1] += 1
        else:
            s[2] = max(s[2], diff)
            bad_matrix += kind == "matrices"
    for kind, (n, same, diff, types) in sorted(stats.items()):
        print("%s: %d tensors (%s), %d with identical values%s" % (
            kind, n, ", ".join(sorted(types)), same,
            "" if same == n else ", the others differ by at most %.3g relative" % diff))
    return 1 if bad_matrix or not stats else 0


if __name__ == "__main__":
    sys.exit(main())
