#!/usr/bin/env python3
"""Float32 logits of SmolLM2-135M-Instruct (Q4_1 GGUF dequantized by transformers) for 3 prompts.

Outputs (in /work/refs/; format in /work/refs/README.md, section logits):
  logits_ref.json                 per prompt: text, token ids, argmax / top-10 ids+values / logsumexp
                                  at every position, the positions of the full rows, section layout
                                  and sha256 of each binary file, perplexity; model/run facts.
  logits_ref_<name>.bin.zst       per prompt, zstd -19 of: final hidden state (post final RMSNorm)
                                  at every position (f32, exact), all 31 hidden states at the last
                                  position (f32, exact), full logit rows at positions 0,4,8,... and the
                                  last position (f32 with the low 7 mantissa bits zeroed, byte-plane
                                  shuffled).

Ran with (see /work/refs/SOURCES.md):
  Python 3.11.2 (Debian 12 /usr/bin/python3; venv /work/venv --system-site-packages)
  torch 1.13.0a0 (Debian python3-torch 1.13.1+dfsg, CPU, 1 thread (SMOLLM2_THREADS)), numpy 1.24.2 (Debian),
  transformers 4.45.2, tokenizers 0.20.3, gguf 0.19.0, zstandard 0.25.0; lm-eval 0.4.5 not used here.

Run:
  /work/venv/bin/python /work/refs/scripts/logits_ref.py
  (env SMOLLM2_GGUF_DIR / SMOLLM2_GGUF_FILE override /work/cache/smollm2 / SmolLM2-135M-Instruct.Q4_1.gguf)
"""
import hashlib
import importlib.metadata as md
import json
import os
import sys
import time

import numpy as np
import torch
import zstandard

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smollm_hf  # noqa: E402

OUTDIR = "/work/refs"
ROW_STRIDE = 4
TOPK = 10
TRUNC_MASK = np.uint32(0xFFFFFF80)  # zero the low 7 mantissa bits

PROMPTS = {
    "prose": ("The village sat at the edge of a wide, slow river. Every morning the fishermen pushed their small wooden "
              "boats into the cold mist, and every evening they returned with baskets of silver fish. The children "
              "waited on the bank, counting the boats as they appeared, because a missing boat meant that "
              "someone would have to go out and"),
    "code": ("def binary_search(items, target):\n"
             "    # items must be sorted\n"
             "    lo, hi = 0, len(items) - 1\n"
             "    while lo <= hi:\n"
             "        mid = (lo + hi) // 2\n"
             "        if items[mid] == target:\n"
             "            return mid\n"
             "        elif items[mid] <"),
    "mcq": ("Question: A student places a metal spoon in a cup of hot water. After a few minutes the handle of "
            "the spoon feels warm. Which process moved most of the heat from the hot water up to the handle of the spoon?\n"
            "A. convection\nB. conduction\nC. radiation\nD. evaporation\nAnswer:"),
}


def shuffle_bytes(a):
    """float32 array -> bytes: plane 0 (LSB of every element), plane 1, plane 2, plane 3 (MSB)."""
    return a.astype("<f4").view(np.uint8).reshape(-1, 4).T.copy().tobytes()


def main():
    tok, model, info = smollm_hf.load()
    print("load info:", info)
    out = {
        "format": "hifa4-eval logits_ref v1",
        "generator": {"script": "refs/scripts/logits_ref.py", "python": sys.version.split()[0],
                      "torch": torch.__version__, "numpy": np.__version__,
                      "transformers": md.version("transformers"), "tokenizers": md.version("tokenizers"),
                      "gguf": md.version("gguf"), "threads": torch.get_num_threads()},
        "model": {"gguf_file": smollm_hf.GGUF_FILE,
                  "load": "AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., torch_dtype=torch.float32); "
                          "lm_head.weight <- model.embed_tokens.weight (tied; the GGUF has no output.weight)",
                  "tokenizer": "AutoTokenizer.from_pretrained(dir, gguf_file=...), add_special_tokens=False (no BOS)",
                  "load_info": info},
        "row_stride": ROW_STRIDE, "topk": TOPK, "vocab": model.config.vocab_size,
        "hidden": model.config.hidden_size, "n_hidden_states": model.config.num_hidden_layers + 1,
        "prompts": [],
    }
    timing = {}
    for name, text in PROMPTS.items():
        ids = tok(text, add_special_tokens=False)["input_ids"]
        n = len(ids)
        assert 64 <= n <= 100, (name, n)
        t0 = time.time()
        with torch.no_grad():
            res = model(torch.tensor([ids]), output_hidden_states=True)
        timing[name] = round(time.time() - t0, 3)
        logits = res.logits[0].float().numpy()           # [n, vocab] float32
        hs = [h[0].float().numpy() for h in res.hidden_states]  # 31 x [n, hidden]
        final_hidden = hs[-1]                            # post final RMSNorm (transformers appends after norm)
        # sanity: logits == final_hidden @ E^T
        E = model.lm_head.weight.detach().numpy()
        chk = final_hidden.astype(np.float64) @ E.T.astype(np.float64)
        rel_chk = float(np.linalg.norm(chk - logits) / np.linalg.norm(logits))
        states_last = np.stack([h[-1] for h in hs])      # [31, hidden]
        rows_pos = list(range(0, n, ROW_STRIDE))
        if rows_pos[-1] != n - 1:
            rows_pos.append(n - 1)
        rows = logits[rows_pos]
        rows_t = (rows.view(np.uint32) & TRUNC_MASK).view(np.float32)
        rel = [float(np.linalg.norm(rows_t[i].astype(np.float64) - rows[i]) / np.linalg.norm(rows[i].astype(np.float64)))
               for i in range(len(rows_pos))]
        l64 = logits.astype(np.float64)
        lse = (l64.max(1) + np.log(np.exp(l64 - l64.max(1, keepdims=True)).sum(1)))
        top = np.argsort(-logits, axis=1, kind="stable")[:, :TOPK]
        lp_next = [float(l64[i, ids[i + 1]] - lse[i]) for i in range(n - 1)]
        ppl = float(np.exp(-np.mean(lp_next)))
        sec = [("final_hidden", "f32", [n, final_hidden.shape[1]], final_hidden.astype("<f4").tobytes()),
               ("states_last_pos", "f32", list(states_last.shape), states_last.astype("<f4").tobytes()),
               ("logit_rows", "f32 low-7-bits-zeroed, byte-plane shuffled", [len(rows_pos), logits.shape[1]],
                shuffle_bytes(rows_t))]
        blob = b"".join(s[3] for s in sec)
        t1 = time.time()
        comp = zstandard.ZstdCompressor(level=19).compress(blob)
        tz = time.time() - t1
        fname = f"logits_ref_{name}.bin.zst"
        with open(os.path.join(OUTDIR, fname), "wb") as f:
            f.write(comp)
        off, layout = 0, []
        for s in sec:
            layout.append({"name": s[0], "dtype": s[1], "shape": s[2], "offset": off, "nbytes": len(s[3])})
            off += len(s[3])
        out["prompts"].append({
            "name": name, "text": text, "n_tokens": n, "ids": ids,
            "tokens": tok.convert_ids_to_tokens(ids),
            "argmax": logits.argmax(1).tolist(),
            "topk_ids": top.tolist(),
            "topk_vals": [[float(logits[i, j]) for j in top[i]] for i in range(n)],
            "logsumexp": [float(x) for x in lse],
            "logprob_next_token": lp_next, "perplexity": ppl,
            "row_positions": rows_pos,
            "file": fname, "file_bytes": len(comp), "decompressed_bytes": len(blob),
            "decompressed_sha256": hashlib.sha256(blob).hexdigest(),
            "sections": layout,
            "max_relL2_truncation_error": max(rel),
            "relL2_logits_vs_final_hidden_times_E": rel_chk,
            "forward_s": timing[name], "zstd_s": round(tz, 1),
        })
        print(f"{name}: n={n} rows={len(rows_pos)} file={len(comp)} B ppl={ppl:.2f} "
              f"trunc relL2 max={max(rel):.2e} chk={rel_chk:.1e} fwd={timing[name]}s zstd={tz:.1f}s")
        print("   argmax tokens:", "".join(tok.convert_ids_to_tokens(logits.argmax(1).tolist()))[:300])
    with open(os.path.join(OUTDIR, "logits_ref.json"), "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"), ensure_ascii=False)
    print("wrote logits_ref.json", os.path.getsize(os.path.join(OUTDIR, "logits_ref.json")), "bytes")


if __name__ == "__main__":
    main()
