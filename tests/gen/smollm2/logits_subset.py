#!/usr/bin/env python3
"""The committed subset of the SmolLM2 logits reference (tests/test_gguf_import.c reads it).

logits_ref.py (beside this file) wrote, per prompt, argmax / top-10 / logsumexp at every position
and full float32 logit rows at every 4th position (low 7 mantissa bits zeroed, rel-L2 <= 6.5e-6)
- 6.8 MB. This keeps all per-position data and two full rows per prompt (the middle stored row
and the last position), so the repository carries ~0.8 MB:

  tests/data/gguf/smollm2_logits_ref.json.zst   generator facts, per prompt: name, text, ids,
        argmax, logsumexp, topk_ids, topk_vals (every position), rows: positions of the rows below
  tests/data/gguf/smollm2_logit_rows.bin.zst    the rows, prompt by prompt, as float32 with the
        low 7 mantissa bits zeroed, byte-plane shuffled (all LSBs, then ..., then all MSBs) per prompt

Run: python tests/gen/smollm2/logits_subset.py REFS_DIR   (REFS_DIR holds logits_ref.py's output)
"""
import json
import sys

import numpy as np
import zstandard

refs = sys.argv[1]
d = json.load(open(f"{refs}/logits_ref.json"))
out = {"format": "hifa4-eval smollm2 logits subset v1", "generator": d["generator"], "model": d["model"],
       "vocab": d["vocab"], "subset_of": "logits_ref.json (tests/gen/smollm2/logits_ref.py)", "prompts": []}
blobs = []
for p in d["prompts"]:
    raw = zstandard.ZstdDecompressor().decompress(open(f"{refs}/{p['file']}", "rb").read())
    s = {x["name"]: x for x in p["sections"]}["logit_rows"]
    nr, V = s["shape"]
    rows = np.frombuffer(raw[s["offset"]:s["offset"] + s["nbytes"]], np.uint8).reshape(4, -1).T.copy().view("<f4").reshape(nr, V)
    keep = [len(p["row_positions"]) // 2, len(p["row_positions"]) - 1]
    sel = rows[keep]
    blobs.append(sel.astype("<f4").view(np.uint8).reshape(-1, 4).T.copy().tobytes())
    out["prompts"].append({k: p[k] for k in ("name", "text", "n_tokens", "ids", "argmax", "logsumexp", "topk_ids",
                                              "topk_vals", "perplexity")} |
                          {"rows": [p["row_positions"][k] for k in keep],
                           "max_relL2_truncation_error": p["max_relL2_truncation_error"]})
js = json.dumps(out, separators=(",", ":"), ensure_ascii=False).encode()
open("tests/data/gguf/smollm2_logits_ref.json.zst", "wb").write(zstandard.ZstdCompressor(level=19).compress(js))
open("tests/data/gguf/smollm2_logit_rows.bin.zst", "wb").write(zstandard.ZstdCompressor(level=19).compress(b"".join(blobs)))
