#!/usr/bin/env python3
"""qbias_forms.py: per layer, the q_proj bias as Smooth-QK scales it, beside the token and channel
forms of Q-Mean's attention error from `trace --qmean both` (analysis aid for
docs/results/qwen25.md; not used by the tool or its tests).

  scripts/qbias_forms.py MODEL_DIR SCALES.safetensors TRACE_DIR

MODEL_DIR holds config.json and one model.safetensors (F32/F16 tensors, as `import-gguf` writes);
SCALES is the `calibrate` file the trace used; TRACE_DIR/trace.json comes from
`hifa4-eval trace --qmean both` with direct+qmean and hifa4 among its modes. A bias constant over
positions survives RoPE on the lowest-frequency rotary pairs (angle ~ position * theta^-1); a
per-channel mean over a query tile (the channel form) removes it, a per-token scalar (the token
form) cannot. Printed per layer: max |b_q| and max |b_q * s| over the last 8 rotary pairs of each
half of every head (the low-frequency band), and the rel-L2 ratio token form / channel form of
row B (direct+qmean) and row E (hifa4)."""
import json, struct, sys

BAND = 8


def fail(msg):
    sys.exit(f"qbias_forms.py: {msg}")


def tensors(path):
    try:
        f = open(path, "rb")
        n = struct.unpack("<Q", f.read(8))[0]
        return f, json.loads(f.read(n)), 8 + n
    except (OSError, struct.error, ValueError) as e:
        fail(f"{path}: not a safetensors file ({e})")


def read(st, path, name):
    f, head, base = st
    if name not in head:
        fail(f"{path}: tensor {name} missing")
    meta = head[name]
    code = {"F32": "f", "F16": "e"}.get(meta["dtype"])
    if code is None:
        fail(f"{path}: {name}: dtype {meta['dtype']} (expected F32 or F16)")
    a, b = meta["data_offsets"]
    f.seek(base + a)
    raw = f.read(b - a)
    return struct.unpack(f"<{len(raw) // struct.calcsize(code)}{code}", raw)


def trace_ratios(path):
    try:
        modes = json.load(open(path))["modes"]
    except (OSError, ValueError, KeyError) as e:
        fail(f"{path}: {e}")
    layers = {(m["mode"], m.get("qmean")): [l["rel_l2"] for l in m["inputs"][0]["layers"]] for m in modes}
    out = {}
    for mode in ("direct+qmean", "hifa4"):
        tok, ch = layers.get((mode, "token")), layers.get((mode, "channel"))
        if tok is None or ch is None:
            fail(f"{path}: mode {mode} not traced in both Q-Mean forms (use --qmean both)")
        out[mode] = [t / c for t, c in zip(tok, ch)]
    return out


def main():
    if len(sys.argv) != 4:
        fail("usage: qbias_forms.py MODEL_DIR SCALES.safetensors TRACE_DIR")
    mdir, spath, tdir = sys.argv[1:]
    cfg = json.load(open(f"{mdir}/config.json"))
    heads, kvh = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg.get("head_dim") or cfg["hidden_size"] // heads
    model, scales = tensors(f"{mdir}/model.safetensors"), tensors(spath)
    s = read(scales, spath, "smooth_qk.scales")
    ratio = trace_ratios(f"{tdir}/trace.json")
    band = [c for c in range(d) if c % (d // 2) >= d // 2 - BAND]
    print("| layer | max abs b_q (band) | max abs b_q * s (band) | B token/channel rel-L2 | E token/channel rel-L2 |")
    print("|---:|---:|---:|---:|---:|")
    for l in range(cfg["num_hidden_layers"]):
        b = read(model, f"{mdir}/model.safetensors", f"model.layers.{l}.self_attn.q_proj.bias")
        raw = max(abs(b[h * d + c]) for h in range(heads) for c in band)
        scaled = max(abs(b[h * d + c] * s[(l * kvh + h // (heads // kvh)) * d + c]) for h in range(heads) for c in band)
        print(f"| {l} | {raw:.2f} | {scaled:.2f} | {ratio['direct+qmean'][l]:.2f} | {ratio['hifa4'][l]:.2f} |")


if __name__ == "__main__":
    main()
