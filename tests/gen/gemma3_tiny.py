#!/usr/bin/env python3
"""gemma3_tiny.py: the gemma3-tiny golden - a synthetic Gemma 3 checkpoint and its logits from
Hugging Face transformers 4.50.0 in float64 (an implementation independent of ours).

    python tests/gen/gemma3_tiny.py HIFA4_BIN OUT_DIR

runs `HIFA4_BIN make-model --arch gemma3` (3 layers, 64 hidden, 2/1 heads of 64, FFN 128,
vocab 512, seed 22, bf16 weights: the inputs, not the expected output), rewrites its config so
that every Gemma 3 feature is on (window 32 on layers 0 and 1 with local base 10000; layer 2
global with base 1e6 and linear rope_scaling x4; query_pre_attn_scalar 48), and runs the
checkpoint in float64, eager attention, use_cache=False on T = 100 seeded token ids (no BOS).
It writes OUT_DIR/models/gemma3-tiny/{config.json,model.safetensors} and
OUT_DIR/logits/gemma3-tiny.safetensors with
  input_ids     I32 [T]
  logits_f64    F32 [T][512]  attention inputs q, k, v rounded binary64 -> binary32 -> bf16 before
                              a binary64 attention (our `--attn f32`, as the other goldens)
  logits_exact  F32 [T][512]  no rounding anywhere (our `--attn exact`)
Needs a venv with transformers==4.50.0 and safetensors on Debian's torch 1.13 (python3-torch):
  python3 -m venv --system-site-packages V && V/bin/pip install transformers==4.50.0 safetensors
"""
import json
import os
import subprocess
import sys
import types

import torch


def stub_torch():
    # transformers 4.50 imports these; torch 1.13 has neither
    if "torch.distributed.tensor" not in sys.modules:
        m = types.ModuleType("torch.distributed.tensor")
        m.DTensor = type("DTensor", (), {})
        sys.modules["torch.distributed.tensor"] = m
    if not hasattr(torch, "compiler"):
        torch.compiler = types.SimpleNamespace(is_compiling=lambda: False, disable=lambda f=None, **k: f if f else (lambda g: g))


def load(mg, mdir):
    # by hand: torch 1.13's load_state_dict has no `assign` for from_pretrained
    from safetensors.torch import load_file
    config = mg.Gemma3TextConfig.from_pretrained(mdir)
    config._attn_implementation = "eager"
    model = mg.Gemma3ForCausalLM(config).double().eval()
    sd = {k: v.double() for k, v in load_file(os.path.join(mdir, "model.safetensors")).items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert set(missing) <= {"lm_head.weight"} and not unexpected, (missing, unexpected)
    model.tie_weights()
    assert torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)
    return model


def main():
    hifa4, out = sys.argv[1], sys.argv[2]
    mdir = os.path.join(out, "models", "gemma3-tiny")
    os.makedirs(os.path.join(out, "logits"), exist_ok=True)
    subprocess.run([hifa4, "--quiet", "make-model", "--arch", "gemma3", "--layers", "3", "--dim", "64", "--heads", "2",
                    "--kv-heads", "1", "--head-dim", "64", "--ffn", "128", "--vocab", "512", "--seed", "22",
                    "--out", mdir], check=True)
    cp = os.path.join(mdir, "config.json")
    cfg = json.load(open(cp))
    cfg.pop("_synthetic", None)
    cfg.update({"sliding_window": 32, "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
                "sliding_window_pattern": 3, "rope_scaling": {"rope_type": "linear", "factor": 4.0},
                "query_pre_attn_scalar": 48, "_golden": "tests/gen/gemma3_tiny.py (transformers 4.50.0, float64)"})
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if os.path.exists(os.path.join(mdir, f)):
            os.remove(os.path.join(mdir, f))
    with open(cp, "w") as f:
        json.dump(cfg, f, indent=1)
        f.write("\n")

    stub_torch()
    import transformers
    from transformers.models.gemma3 import modeling_gemma3 as mg
    from safetensors.torch import save_file
    assert transformers.__version__ == "4.50.0", transformers.__version__
    model = load(mg, mdir)
    g = torch.Generator().manual_seed(22)
    ids = torch.randint(0, 512, (1, 100), generator=g)
    eager = mg.eager_attention_forward

    def rounded(module, q, k, v, *a, **kw):
        r = lambda t: t.float().bfloat16().double()
        return eager(module, r(q), r(k), r(v), *a, **kw)

    res = {"input_ids": ids[0].to(torch.int32)}
    with torch.no_grad():
        res["logits_exact"] = model(ids, use_cache=False).logits[0].float()
        mg.eager_attention_forward = rounded
        res["logits_f64"] = model(ids, use_cache=False).logits[0].float()
        mg.eager_attention_forward = eager
    d = (res["logits_f64"] - res["logits_exact"]).norm() / res["logits_exact"].norm()
    print("gemma3-tiny: T %d, rel-L2(f64 with bf16 attention inputs, exact) = %.3g" % (ids.shape[1], d))
    assert d > 0, "the bf16 rounding hook did not run"
    save_file({k: v.contiguous() for k, v in res.items()}, os.path.join(out, "logits", "gemma3-tiny.safetensors"),
              metadata={"generator": "tests/gen/gemma3_tiny.py", "transformers": transformers.__version__})


if __name__ == "__main__":
    main()
