#!/usr/bin/env python3
"""Dequantization reference vectors from gguf-py (`gguf.quants.dequantize`).

Output: tests/data/gguf/dequant_ref.json.zst (zstd-compressed JSON; read by tests/test_gguf.c).

Ran once (python3 -m venv v && v/bin/pip install gguf numpy zstandard) with:
  Python 3.11.2 (Debian 12 /usr/bin/python3; venv /work/venv --system-site-packages)
  numpy 1.24.2 (Debian), gguf 0.19.0, zstandard 0.25.0
  (torch 1.13.0a0, transformers 4.45.2, lm-eval 0.4.5 are in the venv but not used here)

Run:
  python tests/gen/gguf_dequant_ref.py [OUT]   (from the repository root)
Deterministic: fixed RNG seed; re-running gives byte-identical JSON (before compression).

For each ggml type F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K:
  - "cases": random blocks, raw bytes as stored in a GGUF tensor, with every fp16 scale/min field
    overwritten by a finite value drawn from a palette (positive/negative normal values of several
    magnitudes, +0, -0, fp16 subnormals, the smallest normal, large values up to 65504). A few
    cases have all quant bytes 0x00 or 0xFF; one case per type holds 3 consecutive blocks.
    For F32/F16/BF16 a "block" is one element; each case holds 32 elements (finite values only,
    incl. subnormals, +-0, max finite).
  - "special_cases": blocks with a NaN or +-Inf in a scale field (or NaN/Inf elements for
    F32/F16/BF16), to record what the reference does. numpy RuntimeWarnings raised while
    dequantizing a case are recorded in the case's "warnings".
"""
import hashlib
import importlib.metadata as md
import json
import sys
import warnings

import numpy as np
import zstandard

import gguf
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T

OUT = sys.argv[1] if len(sys.argv) > 1 else "tests/data/gguf/dequant_ref.json.zst"
SEED = 20250207
N_CASES = 36          # regular cases per type (one of them is a 3-block case)
N_ELEMS_FLOAT = 32    # elements per case for F32/F16/BF16

TYPES = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
         "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]

# Byte offsets of the fp16 fields inside one block (ggml's block_* structs).
FP16_FIELDS = {
    "Q8_0": [("d", 0)],
    "Q4_0": [("d", 0)],
    "Q4_1": [("d", 0), ("m", 2)],
    "Q5_0": [("d", 0)],
    "Q5_1": [("d", 0), ("m", 2)],
    "Q2_K": [("d", 80), ("dmin", 82)],
    "Q3_K": [("d", 108)],
    "Q4_K": [("d", 0), ("dmin", 2)],
    "Q5_K": [("d", 0), ("dmin", 2)],
    "Q6_K": [("d", 208)],
}
LAYOUT = {
    "F32": "one little-endian IEEE binary32",
    "F16": "one little-endian IEEE binary16",
    "BF16": "one little-endian bfloat16 (upper 16 bits of a binary32)",
    "Q8_0": "d:f16 @0, qs:int8[32] @2; y[i] = d*qs[i]",
    "Q4_0": "d:f16 @0, qs:u8[16] @2; y[j] = d*((qs[j]&15)-8), y[j+16] = d*((qs[j]>>4)-8)",
    "Q4_1": "d:f16 @0, m:f16 @2, qs:u8[16] @4; y[j] = d*(qs[j]&15)+m, y[j+16] = d*(qs[j]>>4)+m",
    "Q5_0": "d:f16 @0, qh:u8[4] @2 (u32 LE), qs:u8[16] @6; 5th bit of y[j] = bit j of qh, of y[j+16] = bit j+16; y = d*(q-16)",
    "Q5_1": "d:f16 @0, m:f16 @2, qh:u8[4] @4, qs:u8[16] @8; y = d*q + m",
    "Q2_K": "scales:u8[16] @0, qs:u8[64] @16, d:f16 @80, dmin:f16 @82",
    "Q3_K": "hmask:u8[32] @0, qs:u8[64] @32, scales:u8[12] @96, d:f16 @108",
    "Q4_K": "d:f16 @0, dmin:f16 @2, scales:u8[12] @4, qs:u8[128] @16",
    "Q5_K": "d:f16 @0, dmin:f16 @2, scales:u8[12] @4, qh:u8[32] @16, qs:u8[128] @48",
    "Q6_K": "ql:u8[128] @0, qh:u8[64] @128, scales:int8[16] @192, d:f16 @208",
}


def f16_bits(x):
    return int(np.array(x, dtype=np.float16).view(np.uint16))


def palette_f16(rng, kind):
    """Return (bits, label) of a finite fp16 value of the given kind."""
    s = 0x8000 if rng.random() < 0.5 else 0
    if kind == "typical":          # like real weight scales
        return f16_bits(rng.uniform(1e-4, 5e-2) * (-1 if s else 1)), "typical"
    if kind == "pos":
        return f16_bits(10 ** rng.uniform(-4, 2)), "positive normal"
    if kind == "neg":
        return f16_bits(-(10 ** rng.uniform(-4, 2))), "negative normal"
    if kind == "zero":
        return 0x0000, "+0"
    if kind == "negzero":
        return 0x8000, "-0"
    if kind == "subnormal":
        return s | int(rng.integers(1, 0x400)), "subnormal"
    if kind == "minnormal":
        return s | 0x0400, "smallest normal"
    if kind == "large":
        return s | int(rng.integers(0x7800, 0x7C00)), "large (>= 32768)"
    if kind == "max":
        return s | 0x7BFF, "max finite (65504)"
    raise ValueError(kind)


KINDS = ["typical", "pos", "neg", "typical", "zero", "subnormal", "negzero", "large",
         "minnormal", "typical", "max", "neg", "subnormal", "pos"]

SPECIAL_F16 = [(0x7C00, "+Inf"), (0xFC00, "-Inf"), (0x7E00, "NaN (quiet, 0x7E00)"),
               (0x7C01, "NaN (signalling payload 0x7C01)"), (0xFFFF, "NaN (0xFFFF)")]


def deq(raw, qtype):
    """Dequantize raw bytes; returns (float32 array, list of warning strings)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = gguf.quants.dequantize(np.frombuffer(bytes(raw), dtype=np.uint8).copy(), T[qtype])
    out = np.ascontiguousarray(np.asarray(out, dtype=np.float32)).reshape(-1)
    return out, sorted({f"{x.category.__name__}: {x.message}" for x in w})


def case_json(name, raw, out, warns, fields=None):
    c = {"name": name, "raw": bytes(raw).hex(), "out": out.astype("<f4").tobytes().hex()}
    if fields:
        c["fp16_fields"] = fields
    if warns:
        c["warnings"] = warns
    return c


def float_elems(rng, qtype, n):
    """n finite interesting values, returned as raw bytes of the type."""
    vals = []
    for i in range(n):
        k = i % 8
        if qtype == "F32":
            if k == 0:
                v = np.float32(rng.standard_normal())
            elif k == 1:
                v = np.uint32(rng.integers(1, 1 << 23) | (rng.integers(0, 2) << 31)).view(np.float32)  # subnormal
            elif k == 2:
                v = np.float32(0.0) * (1 if rng.random() < .5 else -1)
            elif k == 3:
                v = np.float32(rng.uniform(-1, 1) * 3.0e38)
            elif k == 4:
                v = np.float32(np.finfo(np.float32).max * (1 if rng.random() < .5 else -1))
            else:
                v = np.float32(rng.standard_normal() * 10 ** rng.uniform(-30, 30))
            vals.append(np.array(v, dtype=np.float32).tobytes())
        elif qtype == "F16":
            if k == 0:
                b = f16_bits(rng.standard_normal())
            elif k == 1:
                b = int(rng.integers(1, 0x400)) | (0x8000 if rng.random() < .5 else 0)
            elif k == 2:
                b = 0x8000 if rng.random() < .5 else 0
            elif k == 3:
                b = 0x7BFF | (0x8000 if rng.random() < .5 else 0)
            else:
                e = int(rng.integers(0, 31))  # exponent 0..30: finite
                b = (e << 10) | int(rng.integers(0, 0x400)) | (0x8000 if rng.random() < .5 else 0)
            vals.append(np.uint16(b).tobytes())
        else:  # BF16
            if k == 0:
                b = int(np.float32(rng.standard_normal()).view(np.uint32)) >> 16
            elif k == 1:
                b = int(rng.integers(1, 0x80)) | (0x8000 if rng.random() < .5 else 0)  # subnormal
            elif k == 2:
                b = 0x8000 if rng.random() < .5 else 0
            elif k == 3:
                b = 0x7F7F | (0x8000 if rng.random() < .5 else 0)  # max finite
            else:
                e = int(rng.integers(0, 255))
                b = (e << 7) | int(rng.integers(0, 0x80)) | (0x8000 if rng.random() < .5 else 0)
            vals.append(np.uint16(b).tobytes())
    return b"".join(vals)


def main():
    rng = np.random.default_rng(SEED)
    doc = {
        "format": "hifa4-eval dequant_ref v1",
        "generator": {
            "script": "refs/scripts/dequant_ref.py", "seed": SEED,
            "python": sys.version.split()[0], "numpy": np.__version__, "gguf": md.version("gguf"),
            "function": "gguf.quants.dequantize(np.frombuffer(raw, np.uint8), GGMLQuantizationType[type])",
        },
        "types": {},
    }
    for qt in TYPES:
        bs, ts = GGML_QUANT_SIZES[T[qt]]
        ent = {"ggml_type": int(T[qt]), "block_size": bs, "type_size": ts, "layout": LAYOUT[qt],
               "fp16_fields": [{"name": n, "offset": o} for n, o in FP16_FIELDS.get(qt, [])],
               "cases": [], "special_cases": []}
        if qt in ("F32", "F16", "BF16"):
            for i in range(N_CASES):
                raw = float_elems(rng, qt, N_ELEMS_FLOAT)
                out, w = deq(raw, qt)
                assert np.all(np.isfinite(out)), (qt, i)
                ent["cases"].append(case_json(f"{qt} #{i}: {N_ELEMS_FLOAT} finite elements", raw, out, w))
            # special: NaN / Inf elements
            if qt == "F32":
                sp = [(0x7F800000, "+Inf"), (0xFF800000, "-Inf"), (0x7FC00000, "NaN quiet"),
                      (0x7F800001, "NaN signalling payload 1"), (0xFFFFFFFF, "NaN 0xFFFFFFFF")]
                raw = b"".join(np.uint32(b).tobytes() for b, _ in sp)
            elif qt == "F16":
                sp = SPECIAL_F16
                raw = b"".join(np.uint16(b).tobytes() for b, _ in sp)
            else:
                sp = [(0x7F80, "+Inf"), (0xFF80, "-Inf"), (0x7FC0, "NaN quiet"), (0x7F81, "NaN signalling"),
                      (0xFFFF, "NaN 0xFFFF")]
                raw = b"".join(np.uint16(b).tobytes() for b, _ in sp)
            out, w = deq(raw, qt)
            ent["special_cases"].append(case_json(f"{qt} special: " + ", ".join(l for _, l in sp), raw, out, w))
            doc["types"][qt] = ent
            continue

        fields = FP16_FIELDS[qt]
        for i in range(N_CASES):
            nblk = 3 if i == N_CASES - 1 else 1
            raw = bytearray(rng.integers(0, 256, size=nblk * ts, dtype=np.uint8).tobytes())
            fdesc = []
            for b in range(nblk):
                base = b * ts
                if i in (5, 6) and nblk == 1:  # all quant bytes 0x00 / 0xFF
                    fill = 0x00 if i == 5 else 0xFF
                    for j in range(ts):
                        raw[base + j] = fill
                for fi, (fname, off) in enumerate(fields):
                    kind = KINDS[(i + 5 * fi + b) % len(KINDS)] if i >= 2 else "typical"
                    bits, label = palette_f16(rng, kind)
                    raw[base + off:base + off + 2] = np.uint16(bits).tobytes()
                    fdesc.append({"block": b, "field": fname, "bits": f"{bits:04x}", "kind": label,
                                  "value": float(np.uint16(bits).view(np.float16))})
            out, w = deq(raw, qt)
            assert out.size == nblk * bs
            assert np.all(np.isfinite(out)), (qt, i)
            extra = " (quant bytes all 0x00)" if i == 5 else " (quant bytes all 0xFF)" if i == 6 else ""
            ent["cases"].append(case_json(f"{qt} #{i}: {nblk} block(s){extra}", raw, out, w, fdesc))
        # special cases: NaN / Inf in each fp16 field, one at a time, and all at once
        for fi, (fname, off) in enumerate(fields):
            for bits, label in SPECIAL_F16:
                raw = bytearray(rng.integers(0, 256, size=ts, dtype=np.uint8).tobytes())
                fdesc = []
                for fj, (gname, goff) in enumerate(fields):
                    if fj == fi:
                        b = bits
                        kl = label
                    else:
                        b, kl = palette_f16(rng, "typical")
                    raw[goff:goff + 2] = np.uint16(b).tobytes()
                    fdesc.append({"block": 0, "field": gname, "bits": f"{b:04x}", "kind": kl})
                out, w = deq(raw, qt)
                ent["special_cases"].append(case_json(f"{qt} special: {fname} = {label}", raw, out, w, fdesc))
        if len(fields) > 1:
            raw = bytearray(rng.integers(0, 256, size=ts, dtype=np.uint8).tobytes())
            fdesc = []
            for (gname, goff), (b, kl) in zip(fields, [(0x7C00, "+Inf"), (0x7C00, "+Inf")]):
                raw[goff:goff + 2] = np.uint16(b).tobytes()
                fdesc.append({"block": 0, "field": gname, "bits": f"{b:04x}", "kind": kl})
            out, w = deq(raw, qt)
            ent["special_cases"].append(case_json(f"{qt} special: all fp16 fields +Inf", raw, out, w, fdesc))
        doc["types"][qt] = ent

    js = json.dumps(doc, indent=None, separators=(",", ":"), sort_keys=False).encode()
    comp = zstandard.ZstdCompressor(level=19).compress(js)
    with open(OUT, "wb") as f:
        f.write(comp)
    n_cases = sum(len(v["cases"]) for v in doc["types"].values())
    n_sp = sum(len(v["special_cases"]) for v in doc["types"].values())
    print(f"wrote {OUT}: {len(comp)} bytes compressed, {len(js)} bytes JSON, sha256(JSON) "
          f"{hashlib.sha256(js).hexdigest()}; {n_cases} cases, {n_sp} special cases")
    # summary of special-case behaviour
    for qt, v in doc["types"].items():
        for c in v["special_cases"]:
            o = np.frombuffer(bytes.fromhex(c["out"]), dtype="<f4")
            print(f"  {c['name']}: nan={int(np.isnan(o).sum())} +inf={int(np.isposinf(o).sum())} "
                  f"-inf={int(np.isneginf(o).sum())} finite={int(np.isfinite(o).sum())}/{o.size}"
                  + (f" warnings={c['warnings']}" if c.get("warnings") else ""))


if __name__ == "__main__":
    main()
