#!/usr/bin/env python3
"""qwen25_ref.py: independent transformers references for Qwen2.5-Coder 0.5B and 1.5B Instruct.

Never a dependency of `make test`: it writes the small committed files of tests/data/qwen25/SIZE/
(format: tests/data/qwen25/README.md) that tests/test_qwen25.c compares the C model against.

What it does
  1. Dequantizes every tensor of the GGUF that scripts/fetch_qwen25.sh assembles with gguf-py
     (`gguf.quants.dequantize`) and maps llama.cpp's names to Hugging Face's. Nothing is shifted
     or permuted: llama.cpp's convert_hf_to_gguf.py class Qwen2Model writes the tensors as the HF
     checkpoint holds them (qwen2 uses NEOX RoPE, which reads HF's rotate-half layout).
  2. Builds transformers 4.50.0 Qwen2ForCausalLM from a config written from the GGUF metadata
     (untied output: both files carry `output.weight`), float32, eager attention,
     use_cache=False.
  3. `logits`: three WikiText-2 prompts (whole lines, one > 600 tokens), tokenized with a
     published Qwen tokenizer.json (no BOS: Qwen2 adds none). Stored as for Gemma 3: ids,
     per-position argmax / max / logsumexp / top-32 / a seeded 1024-id subset, and the rel-L2
     of float32 against a float64 run of the same model (skipped with --no-f64).
  4. `arc`: ARC-Easy test, first 100 items, lm-eval's arc_easy protocol for HF models.

The model-independent steps (prompts, sampling, lm-eval's request construction, scoring,
output files) are scripts/gemma3_ref.py's; this script supplies the Qwen2 pieces (weights,
config, model, tokenizer, provenance) to them.

Environment (as scripts/gemma3_ref.py; Debian's torch 1.13):
  apt-get install -y python3-torch python3-venv
  /usr/bin/python3 -m venv --system-site-packages VENV
  VENV/bin/pip install transformers==4.50.0 gguf==0.19.0 tokenizers==0.21.4 zstandard
  VENV/bin/python scripts/qwen25_ref.py --size 0.5b --gguf "$(scripts/fetch_qwen25.sh 0.5b)" all
"""
import argparse
import copy
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemma3_ref as g3  # noqa: E402  (stubs torch for transformers 4.50 on import)
import torch  # noqa: E402
import gguf  # noqa: E402
import transformers  # noqa: E402
from transformers import Qwen2Config, Qwen2ForCausalLM  # noqa: E402
from transformers.modeling_utils import no_init_weights  # noqa: E402

SIZES = {
    "0.5b": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    "1.5b": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
}
TOKENIZER = "tokenizers/qwen3/tokenizer.json"  # Qwen3's: Qwen2.5's vocabulary and merges (README)

# (name, first line, last line) of ../shared/datasets/wikitext2/raw/wiki.test.raw, 0-based,
# inclusive, as gemma3_ref.PROMPTS (the same three passages)
PROMPTS = [
    ("dufu_intro", 15, 15),       # CJK characters
    ("dufu_early", 20, 22),
    ("boulter_career", 4, 8),     # > 600 tokens
]

LAYER_MAP = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
}
TOP_MAP = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
           "output.weight": "lm_head.weight"}


def config_from_gguf(reader):
    """Qwen2Config fields from the GGUF metadata; every field Qwen2 needs is there."""
    f = lambda k: g3.field(reader, k)  # noqa: E731
    if f("general.architecture") != "qwen2":
        raise SystemExit(f"general.architecture is {f('general.architecture')!r}, expected 'qwen2'")
    p = "qwen2."
    if f(p + "rope.scaling.type") is not None:
        raise SystemExit("rope scaling present: not handled by this script")
    hidden, heads = int(f(p + "embedding_length")), int(f(p + "attention.head_count"))
    return dict(
        vocab_size=len(reader.fields["tokenizer.ggml.tokens"].data),
        hidden_size=hidden,
        intermediate_size=int(f(p + "feed_forward_length")),
        num_hidden_layers=int(f(p + "block_count")),
        num_attention_heads=heads,
        num_key_value_heads=int(f(p + "attention.head_count_kv")),
        max_position_embeddings=int(f(p + "context_length")),
        rms_norm_eps=float(f(p + "attention.layer_norm_rms_epsilon")),
        rope_theta=float(f(p + "rope.freq_base")),
        rope_scaling=None,
        hidden_act="silu",
        use_sliding_window=False,
        # None, not merely use_sliding_window=False: transformers 4.50's Qwen2 causal mask applies
        # config.sliding_window whenever it is set (modeling_qwen2.py, ..._with_cache_position)
        sliding_window=None,
        tie_word_embeddings=False,   # checked: output.weight present (dequantized_state)
        attention_dropout=0.0,
        bos_token_id=int(f("tokenizer.ggml.bos_token_id")),
        eos_token_id=int(f("tokenizer.ggml.eos_token_id")),
    )


def hf_name(name):
    if name in TOP_MAP:
        return TOP_MAP[name]
    parts = name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[2] in LAYER_MAP and parts[3] in ("weight", "bias"):
        return f"model.layers.{int(parts[1])}.{LAYER_MAP[parts[2]]}.{parts[3]}"
    raise SystemExit(f"unknown GGUF tensor {name!r}")


def dequantized_state(reader):
    sd = {}
    for t in reader.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        want = tuple(int(x) for x in reversed(t.shape.tolist()))
        sd[hf_name(t.name)] = np.ascontiguousarray(a.reshape(want))
    if "lm_head.weight" not in sd:
        raise SystemExit("no output.weight: a tied model, not handled by this script")
    return sd


def _f64_everywhere(model, cfg):
    """transformers computes Qwen2RMSNorm and RoPE in float32 whatever the model dtype; for the
    float64 run both are replaced by the same formulas in float64 (this model's instances only)."""
    from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm

    def norm_fwd(mod):
        def fwd(x):
            x = x.double()
            return mod.weight.double() * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + mod.variance_epsilon))
        return fwd

    dim = cfg["hidden_size"] // cfg["num_attention_heads"]
    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))

    def rope_fwd(x, position_ids):
        fr = position_ids[:, :, None].double() * inv[None, None, :]
        emb = torch.cat((fr, fr), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    for mod in model.modules():
        if isinstance(mod, Qwen2RMSNorm):
            mod.forward = norm_fwd(mod)
    model.model.rotary_emb.forward = rope_fwd


def build_model(cfg, sd, dtype):
    """Qwen2ForCausalLM with the GGUF's weights; float32 parameters share the numpy arrays (the
    1.5B model is 7.1 GB), float64 ones are converted copies."""
    conf = Qwen2Config(**cfg)
    conf._attn_implementation = "eager"
    with no_init_weights():
        model = Qwen2ForCausalLM(conf)
    model.eval()
    params = dict(model.named_parameters())
    if set(params) != set(sd):
        raise SystemExit(f"state dict mismatch: missing {sorted(set(params) - set(sd))}, "
                         f"unexpected {sorted(set(sd) - set(params))}")
    for k, p in params.items():
        if tuple(p.shape) != sd[k].shape:
            raise SystemExit(f"{k}: shape {sd[k].shape}, model wants {tuple(p.shape)}")
        p.requires_grad_(False)
        p.data = torch.from_numpy(sd[k]) if dtype == torch.float32 else torch.from_numpy(sd[k]).to(dtype)
    if model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr():
        raise SystemExit("lm_head is tied to embed_tokens: expected an untied head")
    if dtype == torch.float64:
        _f64_everywhere(model, cfg)
    return model


def load_tokenizer(data_root):
    from tokenizers import Tokenizer
    path = os.path.join(data_root, TOKENIZER)
    return Tokenizer.from_file(path), path


def encode(tok, text):
    """ids as Qwen2TokenizerFast.encode gives them: nothing added (no BOS; lm-eval's HFLM encodes
    with add_special_tokens=False for non-Gemma models, which is the same here)."""
    return tok.encode(text, add_special_tokens=False).ids


class PrefixScorer:
    """gemma3_ref.score with the context computed once per item: the input whole[:-1] is split
    at len(whole) - n_cont - 1 (the tokens before the last context token); that prefix's KV cache
    (transformers' DynamicCache) is kept while the next option starts with the same tokens, and
    each option runs only its remaining tokens on a copy of it. The same function of the same
    weights as one forward over whole[:-1] (the rows differ only in float32 summation order:
    `prefix_vs_full_max_dll` in the output measures it on the first items)."""

    def __init__(self, n_check):
        self.key, self.cache, self.n_check, self.n_checked, self.max_dll = None, None, n_check, 0, 0.0

    @torch.no_grad()
    def __call__(self, model, whole, n_cont):
        inp = whole[:-1]
        cut = len(inp) - n_cont
        if cut < 1:
            return g3_score(model, whole, n_cont)
        if self.key != tuple(inp[:cut]):
            out = model.model(input_ids=torch.tensor([inp[:cut]]), use_cache=True, return_dict=True)
            self.key, self.cache = tuple(inp[:cut]), out.past_key_values
        cache = copy.deepcopy(self.cache)
        h = model.model(input_ids=torch.tensor([inp[cut:]]), past_key_values=cache, use_cache=True,
                        return_dict=True).last_hidden_state[0]
        rows = model.lm_head(h).double()
        lsm = torch.log_softmax(rows, dim=-1)
        cont = torch.tensor(whole[-n_cont:])
        ll = float(lsm[torch.arange(n_cont), cont].sum())
        greedy = bool((rows.argmax(dim=-1) == cont).all())
        if self.n_checked < self.n_check:  # the first options once more through the whole forward
            self.n_checked += 1
            self.max_dll = max(self.max_dll, abs(ll - g3_score(model, whole, n_cont)[0]))
            print(f"prefix vs full forward: {self.n_checked} options, max |dLL| {self.max_dll:.2e}", flush=True)
        return ll, greedy


g3_score = g3.score


def make_meta(size, sha):
    def meta(args, cfg, tok_path):
        return {
            "script": "scripts/qwen25_ref.py", "size": size, "gguf": os.path.basename(args.gguf),
            "gguf_sha256": sha, "tokenizer": os.path.relpath(tok_path, args.data_root),
            "transformers": transformers.__version__, "torch": torch.__version__,
            "gguf_py": g3._pkg_version("gguf"), "tokenizers": g3._pkg_version("tokenizers"),
            "numpy": np.__version__, "dtype": "float32", "attn_implementation": "eager",
            "use_cache": False, "config": cfg,
            "arc_scoring": "context prefix once per item through transformers' DynamicCache "
                           "(PrefixScorer); prefix_vs_full: the first options also scored by one "
                           "full forward",
            "prefix_vs_full": {"options": g3.score.n_checked, "max_dll": g3.score.max_dll},
        }
    return meta


def use_qwen2(size, sha):
    """Points gemma3_ref's model-independent pipeline at the Qwen2 pieces of this file."""
    g3.build_model = build_model
    g3.encode = encode
    g3.meta = make_meta(size, sha)
    g3.PROMPTS = PROMPTS
    g3.score = PrefixScorer(n_check=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["logits", "arc", "arc-merge", "all", "config"])
    ap.add_argument("--size", required=True, choices=sorted(SIZES))
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--data-root", default=os.path.join(os.path.dirname(__file__), "../../shared"))
    ap.add_argument("--out", help="default tests/data/qwen25/SIZE")
    ap.add_argument("--arc-n", type=int, default=100)
    ap.add_argument("--arc-range", help="LO:HI: score items LO..HI-1 only, into arc_part_LO_HI.json")
    ap.add_argument("--parts", nargs="*", default=[], help="arc-merge: the arc_part_*.json files")
    ap.add_argument("--no-f64", action="store_true", help="skip the float64 run (the 1.5B's needs 14 GB)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prefix-check", type=int, default=20,
                    help="arc: score the first N options also by one full forward (default 20)")
    ap.add_argument("--cache", help="directory for the dequantized weights (.npz, 2-7 GB)")
    args = ap.parse_args()
    args.out = args.out or os.path.join(os.path.dirname(__file__), "../tests/data/qwen25", args.size)
    torch.set_num_threads(args.threads)
    sha = SIZES[args.size]
    got = g3.sha256_file(args.gguf)
    if got != sha:
        raise SystemExit(f"{args.gguf}: sha256 {got}, expected {sha} (--size {args.size})")
    use_qwen2(args.size, sha)
    g3.score.n_check = args.prefix_check
    reader = gguf.GGUFReader(args.gguf)
    cfg = config_from_gguf(reader)
    if args.what == "config":
        print(json.dumps(cfg, indent=1))
        return
    args.tok_path = os.path.join(args.data_root, TOKENIZER)
    if args.what == "arc-merge":
        parts = []
        for p in args.parts:
            with open(p, encoding="utf-8") as f:
                parts.append(json.load(f))
        src = os.path.join(args.data_root, "datasets/arc/genmc/arc_easy/official/test.jsonl")
        g3.score.n_checked = sum(p["prefix_vs_full"]["options"] for p in parts)
        g3.score.max_dll = max(p["prefix_vs_full"]["max_dll"] for p in parts)
        g3.write_arc(args, cfg, src, parts, args.out)
        return
    t0 = time.process_time()
    sd = g3.cached_state(reader, args.cache, tag="qwen25", sha=sha, dequant=dequantized_state)
    print(f"dequantized {len(sd)} tensors in {time.process_time() - t0:.0f} CPU s", flush=True)
    tok, args.tok_path = load_tokenizer(args.data_root)
    os.makedirs(args.out, exist_ok=True)
    if args.what in ("logits", "all"):
        g3.run_logits(args, cfg, sd, tok, args.out)
    if args.what in ("arc", "all"):
        g3.run_arc(args, cfg, sd, tok, args.out)
        if args.arc_range:  # the part's prefix check, for arc-merge's meta
            lo, hi = args.arc_range.split(":")
            path = os.path.join(args.out, f"arc_part_{int(lo)}_{int(hi)}.json")
            with open(path, encoding="utf-8") as f:
                part = json.load(f)
            part["prefix_vs_full"] = {"options": g3.score.n_checked, "max_dll": g3.score.max_dll}
            with open(path, "w", encoding="utf-8") as f:
                json.dump(part, f)


if __name__ == "__main__":
    main()
