#!/usr/bin/env python3
"""gemma3_ref.py: independent transformers references for Gemma 3 270M.

Never a dependency of `make test`: it writes the small committed files of tests/data/gemma3/
(format: tests/data/gemma3/README.md) that the C tests compare against.

What it does
  1. Dequantizes every tensor of the Q4_K_M GGUF with gguf-py (`gguf.quants.dequantize`), maps
     llama.cpp's names to Hugging Face's, subtracts 1 from every norm weight (llama.cpp's
     convert_hf_to_gguf.py Gemma3Model writes `w + 1` for every "*norm.weight"; Hugging Face's
     Gemma3RMSNorm stores w and multiplies by 1 + w) and permutes nothing (that converter has no
     Q/K permutation for gemma3, unlike its llama class).
  2. Builds Gemma3ForCausalLM (transformers 4.50.0) from a config written from the GGUF metadata
     (checked field by field below; what the GGUF does not carry is llama.cpp's default for this
     model and is named as such), loads the weights, runs float32, eager attention,
     use_cache=False.
  3. `logits`: three WikiText-2 prompts (whole lines; one > 600 tokens so that the 512-token
     window of the local layers matters), tokenized with Google's tokenizer.json (BOS added).
     Stores ids and per-position argmax / max / logsumexp / top-32 / a seeded 1024-id subset,
     and the rel-L2 of float32 against a float64 run of the same model.
  4. `arc`: ARC-Easy test, first 100 items, lm-eval's arc_easy protocol for HF models.

Environment (Debian torch 1.13 has neither torch.distributed.tensor nor torch.compiler, which
transformers 4.50 imports; both are stubbed below before the import):
  apt-get install -y python3-torch python3-venv
  /usr/bin/python3 -m venv --system-site-packages /work/venv-gref
  /work/venv-gref/bin/pip install transformers==4.50.0 gguf==0.19.0 tokenizers==0.21.4 zstandard
  /work/venv-gref/bin/python scripts/gemma3_ref.py --gguf PATH/gemma-3-270m-q4_k_m.gguf all
"""
import argparse
import hashlib
import json
import math
import os
import sys
import time
import types

import numpy as np


def _stub_torch_for_transformers_450():
    import torch
    if "torch.distributed.tensor" not in sys.modules:
        try:
            import torch.distributed.tensor  # noqa: F401  (present on torch >= 2.5)
        except ImportError:
            m = types.ModuleType("torch.distributed.tensor")

            class DTensor:  # never instantiated: isinstance() checks only
                pass
            m.DTensor = DTensor
            sys.modules["torch.distributed.tensor"] = m
    if not hasattr(torch, "compiler"):
        c = types.ModuleType("torch.compiler")
        c.is_compiling = lambda: False
        c.disable = lambda fn=None, recursive=True: fn if fn is not None else (lambda f: f)
        sys.modules["torch.compiler"] = c
        torch.compiler = c


_stub_torch_for_transformers_450()
import torch  # noqa: E402
import gguf  # noqa: E402
from transformers import Gemma3ForCausalLM, Gemma3TextConfig  # noqa: E402
import transformers  # noqa: E402

GGUF_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
SAMPLE_SEED = 20260222
SAMPLE_N = 1024
TOPK = 32
SAMPLE_STRIDE = 2  # the 1024-id subset is stored at positions 0, 2, 4, ... (size, README)

# (name, first line, last line) of ../shared/datasets/wikitext2/raw/wiki.test.raw, 0-based,
# inclusive; CRLF split, the lines joined with "\n".
PROMPTS = [
    ("dufu_intro", 15, 15),       # 119 tokens, CJK characters (byte fallback)
    ("dufu_early", 20, 22),       # 221 tokens
    ("boulter_career", 4, 8),     # 625 tokens: positions 512.. see the local window
]

NORM_SUFFIXES = ("attn_norm", "attn_q_norm", "attn_k_norm", "post_attention_norm", "ffn_norm",
                 "post_ffw_norm")
LAYER_MAP = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm", "attn_norm": "input_layernorm",
    "post_attention_norm": "post_attention_layernorm", "ffn_norm": "pre_feedforward_layernorm",
    "post_ffw_norm": "post_feedforward_layernorm", "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
}


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


def config_from_gguf(reader):
    """Gemma3TextConfig from the GGUF metadata. Fields the GGUF lacks take llama.cpp's gemma3
    defaults (src/llama-model.cpp: local RoPE base 10,000, window pattern 6 = every 6th layer
    global, attention scale 1/sqrt(key_length) for every size but 27B), which are also the
    values of Google's config.json for gemma-3-270m."""
    arch = field(reader, "general.architecture")
    if arch != "gemma3":
        raise SystemExit(f"general.architecture is {arch!r}, expected 'gemma3'")
    p = "gemma3."
    key_len = int(field(reader, p + "attention.key_length"))
    val_len = int(field(reader, p + "attention.value_length"))
    if key_len != val_len:
        raise SystemExit(f"key_length {key_len} != value_length {val_len}")
    if field(reader, p + "rope.scaling.type") is not None:
        raise SystemExit("rope scaling present: not handled by this script")
    for k in (p + "attn_logit_softcapping", p + "final_logit_softcapping"):
        if field(reader, k) is not None:
            raise SystemExit(f"{k} present: not handled by this script")
    tok = reader.fields["tokenizer.ggml.tokens"]
    vocab = len(tok.data)
    cfg = dict(
        vocab_size=vocab,
        hidden_size=int(field(reader, p + "embedding_length")),
        intermediate_size=int(field(reader, p + "feed_forward_length")),
        num_hidden_layers=int(field(reader, p + "block_count")),
        num_attention_heads=int(field(reader, p + "attention.head_count")),
        num_key_value_heads=int(field(reader, p + "attention.head_count_kv")),
        head_dim=key_len,
        rms_norm_eps=float(field(reader, p + "attention.layer_norm_rms_epsilon")),
        rope_theta=float(field(reader, p + "rope.freq_base")),
        rope_local_base_freq=10000.0,        # not in the GGUF: llama.cpp's default
        sliding_window=int(field(reader, p + "attention.sliding_window")),
        sliding_window_pattern=6,            # not in the GGUF: llama.cpp's default
        query_pre_attn_scalar=key_len,       # llama.cpp: 1/sqrt(n_embd_head_k) below 27B
        max_position_embeddings=int(field(reader, p + "context_length")),
        hidden_activation="gelu_pytorch_tanh",
        final_logit_softcapping=None,
        attn_logit_softcapping=None,
        rope_scaling=None,
        tie_word_embeddings=True,
        bos_token_id=int(field(reader, "tokenizer.ggml.bos_token_id")),
        eos_token_id=int(field(reader, "tokenizer.ggml.eos_token_id")),
        pad_token_id=0,
        attention_bias=False,
    )
    return cfg


def hf_name(gguf_name):
    if gguf_name == "token_embd.weight":
        return "model.embed_tokens.weight"
    if gguf_name == "output_norm.weight":
        return "model.norm.weight"
    parts = gguf_name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[3] == "weight" and parts[2] in LAYER_MAP:
        return f"model.layers.{int(parts[1])}.{LAYER_MAP[parts[2]]}.weight"
    raise SystemExit(f"unknown GGUF tensor {gguf_name!r}")


def is_norm(gguf_name):
    return gguf_name == "output_norm.weight" or gguf_name.split(".")[-2] in NORM_SUFFIXES


def dequantized_state(reader):
    """HF state dict (float32 numpy) of the GGUF, norms as HF stores them (stored - 1)."""
    sd = {}
    for t in reader.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        want = tuple(int(x) for x in reversed(t.shape.tolist()))
        if tuple(a.shape) != want:
            a = a.reshape(want)
        if is_norm(t.name):
            a = a - np.float32(1.0)
        sd[hf_name(t.name)] = np.ascontiguousarray(a)
    return sd


def _f64_everywhere(model, cfg):
    """transformers computes Gemma3RMSNorm and RoPE in float32 whatever the model dtype; for the
    float64 run both are replaced (on this model's instances only) by the same formulas in
    float64, so that run is float64 end to end."""
    from transformers.models.gemma3.modeling_gemma3 import Gemma3RMSNorm, Gemma3RotaryEmbedding

    def norm_fwd(mod):
        def f(x):
            x = x.double()
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + mod.eps) * (1.0 + mod.weight.double())
        return f

    def rope_fwd(base, dim):
        inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))

        def f(x, position_ids):
            fr = position_ids[:, :, None].double() * inv[None, None, :]
            emb = torch.cat((fr, fr), dim=-1)
            return emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        return f

    for mod in model.modules():
        if isinstance(mod, Gemma3RMSNorm):
            mod.forward = norm_fwd(mod)
    model.model.rotary_emb.forward = rope_fwd(cfg["rope_theta"], cfg["head_dim"])
    model.model.rotary_emb_local.forward = rope_fwd(cfg["rope_local_base_freq"], cfg["head_dim"])
    assert all(isinstance(m, Gemma3RotaryEmbedding) for m in (model.model.rotary_emb, model.model.rotary_emb_local))


def cached_state(reader, cache_dir, tag="gemma3", sha=GGUF_SHA256, dequant=None):
    """dequant(reader) (default dequantized_state), kept as one .npz per GGUF sha256 under
    cache_dir when given (gguf-py's numpy dequantizers take minutes on this model)."""
    dequant = dequant or dequantized_state
    if not cache_dir:
        return dequant(reader)
    path = os.path.join(cache_dir, f"{tag}-{sha[:16]}-hf-f32.npz")
    if os.path.exists(path):
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    sd = dequant(reader)
    os.makedirs(cache_dir, exist_ok=True)
    np.savez(path + ".tmp.npz", **sd)
    os.replace(path + ".tmp.npz", path)
    return sd


def build_model(cfg, sd, dtype):
    conf = Gemma3TextConfig(**cfg)
    conf._attn_implementation = "eager"
    torch.manual_seed(0)
    model = Gemma3ForCausalLM(conf)
    model.eval()
    state = {k: torch.from_numpy(v).to(dtype) for k, v in sd.items()}
    state["lm_head.weight"] = state["model.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.endswith("rotary_emb.inv_freq")]
    if missing or unexpected:
        raise SystemExit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
    model.to(dtype)
    # tie explicitly (load_state_dict copies; keep one tensor, as HF does for tied heads)
    model.lm_head.weight = model.model.embed_tokens.weight
    if dtype == torch.float64:
        _f64_everywhere(model, cfg)
    return model


def load_tokenizer(data_root):
    import zstandard
    from tokenizers import Tokenizer
    path = os.path.join(data_root, "tokenizers/gemma3/tokenizer.json.zst")
    with open(path, "rb") as f:
        raw = zstandard.ZstdDecompressor().stream_reader(f).read()
    return Tokenizer.from_str(raw.decode("utf-8")), path


def encode(tok, text):
    """ids with BOS, as GemmaTokenizerFast(add_bos_token=True).encode does (the tokenizer.json
    post-processor prepends <bos>)."""
    ids = tok.encode(text, add_special_tokens=True).ids
    if not ids or ids[0] != 2:
        raise SystemExit("tokenizer did not prepend <bos> (2)")
    return ids


@torch.no_grad()
def hidden_states(model, ids):
    x = torch.tensor([ids], dtype=torch.long)
    out = model.model(input_ids=x, use_cache=False, return_dict=True)
    return out.last_hidden_state[0]


@torch.no_grad()
def logits_rows(model, h, chunk=64):
    """Yields (start, logits[chunk, vocab]) in the model's dtype."""
    for s in range(0, h.shape[0], chunk):
        yield s, model.lm_head(h[s:s + chunk])


def sample_ids(vocab):
    rng = np.random.default_rng(SAMPLE_SEED)
    return np.sort(rng.choice(vocab, size=SAMPLE_N, replace=False)).astype(np.int64)


def prompt_text(data_root, first, last):
    path = os.path.join(data_root, "datasets/wikitext2/raw/wiki.test.raw")
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().split("\r\n")
    return "\n".join(lines[first:last + 1]), path


def run_logits(args, cfg, sd, tok, out_dir):
    t0 = time.process_time()
    m32 = build_model(cfg, sd, torch.float32)
    m64 = build_model(cfg, sd, torch.float64) if not args.no_f64 else None
    samp = sample_ids(cfg["vocab_size"])
    samp_t = torch.from_numpy(samp)
    index = {"prompts": [], "sample_ids": samp.tolist(), "sample_seed": SAMPLE_SEED,
             "sample_stride": SAMPLE_STRIDE, "topk": TOPK}
    for name, first, last in PROMPTS:
        text, src = prompt_text(args.data_root, first, last)
        ids = encode(tok, text)
        T = len(ids)
        h32 = hidden_states(m32, ids)
        argmax, mx, lse = [], [], []
        top_rec = np.zeros((T, TOPK), dtype=[("id", "<i4"), ("logit", "<f4")])
        samp_rows = []
        num = den = 0.0
        h64 = hidden_states(m64, ids) if m64 is not None else None
        for s, lg in logits_rows(m32, h32):
            lgd = lg.double()
            mv, am = lg.max(dim=-1)
            argmax += am.tolist()
            mx += mv.tolist()
            lse += torch.logsumexp(lgd, dim=-1).tolist()
            tv, ti = torch.topk(lg, TOPK, dim=-1)
            top_rec["id"][s:s + lg.shape[0]] = ti.numpy()
            top_rec["logit"][s:s + lg.shape[0]] = tv.numpy()
            for r in range(lg.shape[0]):
                if (s + r) % SAMPLE_STRIDE == 0:
                    samp_rows.append(lg[r, samp_t].numpy().astype("<f4"))
            if h64 is not None:
                l64 = m64.lm_head(h64[s:s + lg.shape[0]])
                num += float(((lgd - l64) ** 2).sum())
                den += float((l64 ** 2).sum())
        rel64 = math.sqrt(num / den) if den > 0 else None
        base = os.path.join(out_dir, f"logits_{name}")
        top_rec.tofile(base + ".top32.bin")
        np.stack(samp_rows).astype("<f4").tofile(base + ".sample.f32")
        # the first positions once more through the full HF forward (model(...).logits): the
        # chunked lm_head above must be the same computation
        full = m32(input_ids=torch.tensor([ids[:64]]), use_cache=False).logits[0]
        l0 = m32.lm_head(hidden_states(m32, ids[:64]))
        chk = float((full - l0).abs().max())
        index["prompts"].append({
            "name": name, "source": "datasets/wikitext2/raw/wiki.test.raw",
            "lines": [first, last], "join": "\\n", "n_tokens": T, "ids": ids,
            "argmax": argmax, "max_logit": [float(np.float32(v)) for v in mx],
            "logsumexp": lse, "top32_file": os.path.basename(base) + ".top32.bin",
            "sample_file": os.path.basename(base) + ".sample.f32",
            "n_sample_rows": len(samp_rows),
            "rel_l2_f32_vs_f64": rel64, "full_forward_vs_chunked_maxabs": chk,
        })
        print(f"{name}: T={T} rel-L2(f32 vs f64, full logits)={rel64} "
              f"full-vs-chunked max|d|={chk}", flush=True)
    index["cpu_seconds"] = time.process_time() - t0
    write_json(os.path.join(out_dir, "logits.json"), index, meta(args, cfg, tok_path=args.tok_path))


def meta(args, cfg, tok_path):
    return {
        "script": "scripts/gemma3_ref.py", "gguf": os.path.basename(args.gguf),
        "gguf_sha256": GGUF_SHA256, "tokenizer": os.path.relpath(tok_path, args.data_root),
        "transformers": transformers.__version__, "torch": torch.__version__,
        "gguf_py": getattr(gguf, "__version__", None) or _pkg_version("gguf"),
        "numpy": np.__version__, "dtype": "float32", "attn_implementation": "eager",
        "use_cache": False, "config": cfg,
    }


def _pkg_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return None


def write_json(path, body, m):
    doc = {"meta": m}
    doc.update(body)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"), ensure_ascii=False)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def arc_items(data_root, n):
    path = os.path.join(data_root, "datasets/arc/genmc/arc_easy/official/test.jsonl")
    items = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            items.append(json.loads(line))
            if len(items) == n:
                break
    return items, path


def lmeval_request(tok, context, continuation):
    """lm-eval HFLM._encode_pair: trailing whitespace of the context moves to the continuation;
    whole = enc(context + continuation), ctx = enc(context), cont = whole[len(ctx):]; enc adds
    BOS because HFLM forces add_bos_token=True for gemma models."""
    n_sp = len(context) - len(context.rstrip())
    if n_sp > 0:
        continuation = context[-n_sp:] + continuation
        context = context[:-n_sp]
    whole = encode(tok, context + continuation)
    ctx = encode(tok, context)
    return whole, len(whole) - len(ctx)


@torch.no_grad()
def score(model, whole, n_cont):
    inp = whole[:-1]
    # lm_head on the continuation rows only (the head is 60% of the model's multiply-adds; the
    # rows are the ones model(...).logits would give, see full_forward_vs_chunked_maxabs)
    h = hidden_states(model, inp)
    rows = model.lm_head(h[len(inp) - n_cont:]).double()
    lsm = torch.log_softmax(rows, dim=-1)
    cont = torch.tensor(whole[-n_cont:])
    ll = float(lsm[torch.arange(n_cont), cont].sum())
    greedy = bool((rows.argmax(dim=-1) == cont).all())
    return ll, greedy


def run_arc(args, cfg, sd, tok, out_dir):
    t0 = time.process_time()
    m32 = build_model(cfg, sd, torch.float32)
    items, src = arc_items(args.data_root, args.arc_n)
    lo, hi = (int(x) for x in args.arc_range.split(":")) if args.arc_range else (0, len(items))
    out = []
    for it in items[lo:hi]:
        q = it["question"]
        context = "Question: " + q["stem"] + "\nAnswer:"
        labels = [c["label"] for c in q["choices"]]
        gold = labels.index(it["answerKey"])
        opts = []
        for c in q["choices"]:
            whole, n_cont = lmeval_request(tok, context, " " + c["text"])
            ll, greedy = score(m32, whole, n_cont)
            opts.append({"ll": ll, "is_greedy": greedy, "n_chars": len(c["text"]),
                         "n_bytes": len(c["text"].encode("utf-8")), "ids": whole, "n_cont": n_cont})
        lls = [o["ll"] for o in opts]
        pred = int(np.argmax(lls))
        pred_norm = int(np.argmax([o["ll"] / max(o["n_chars"], 1) for o in opts]))
        out.append({"id": it["id"], "gold": gold, "pred": pred, "pred_norm": pred_norm,
                    "options": opts})
        if len(out) % 10 == 0:
            print(f"arc_easy: {len(out)} items, {time.process_time() - t0:.0f} CPU s", flush=True)
    part = {"range": [lo, hi], "cpu_seconds": time.process_time() - t0, "items": out}
    if args.arc_range:  # one part of a run split over processes: merged by `arc-merge`
        with open(os.path.join(out_dir, f"arc_part_{lo}_{hi}.json"), "w", encoding="utf-8") as f:
            json.dump(part, f)
        return
    write_arc(args, cfg, src, [part], out_dir)


def write_arc(args, cfg, src, parts, out_dir):
    parts = sorted(parts, key=lambda p: p["range"][0])
    for a, b in zip(parts, parts[1:]):
        if a["range"][1] != b["range"][0]:
            raise SystemExit(f"arc parts do not join: {a['range']} then {b['range']}")
    out = [it for p in parts for it in p["items"]]
    if len(out) != args.arc_n or parts[0]["range"][0] != 0:
        raise SystemExit(f"arc parts cover {len(out)} items from {parts[0]['range'][0]}, expected {args.arc_n}")
    acc = sum(it["pred"] == it["gold"] for it in out) / len(out)
    acc_norm = sum(it["pred_norm"] == it["gold"] for it in out) / len(out)
    body = {"task": "arc_easy", "source": os.path.relpath(src, args.data_root),
            "n_items": len(out), "acc": acc, "acc_norm": acc_norm,
            "cpu_seconds": sum(p["cpu_seconds"] for p in parts), "items": out}
    print(f"arc_easy first {len(out)}: acc {acc:.3f} acc_norm {acc_norm:.3f}")
    write_json(os.path.join(out_dir, "arc_easy_100.json"), body, meta(args, cfg, tok_path=args.tok_path))


@torch.no_grad()
def run_window(args, cfg, sd, tok):
    """How much the local window matters on the long prompt: the same model with the window
    switched off (sliding_window = T + 1) against the stored run, before and from position 512."""
    name, first, last = PROMPTS[-1]
    ids = encode(tok, prompt_text(args.data_root, first, last)[0])
    w = cfg["sliding_window"]
    res = {}
    for label, c in (("window", cfg), ("no_window", dict(cfg, sliding_window=len(ids) + 1))):
        m = build_model(c, sd, torch.float32)
        res[label] = m.lm_head(hidden_states(m, ids)).double()
        del m
    a, b = res["window"], res["no_window"]
    for lo, hi in ((0, w), (w, len(ids))):
        d = float(((a[lo:hi] - b[lo:hi]) ** 2).sum().sqrt() / (a[lo:hi] ** 2).sum().sqrt())
        flips = int((a[lo:hi].argmax(-1) != b[lo:hi].argmax(-1)).sum())
        print(f"{name} positions {lo}..{hi - 1}: rel-L2(window {w} vs none) = {d:.3e}, "
              f"argmax differs at {flips} of {hi - lo}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["logits", "arc", "arc-merge", "all", "config", "window"])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--data-root", default=os.path.join(os.path.dirname(__file__), "../../shared"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "../tests/data/gemma3"))
    ap.add_argument("--arc-n", type=int, default=100)
    ap.add_argument("--arc-range", help="LO:HI: score items LO..HI-1 only, into arc_part_LO_HI.json")
    ap.add_argument("--parts", nargs="*", default=[], help="arc-merge: the arc_part_*.json files")
    ap.add_argument("--no-f64", action="store_true", help="skip the float64 run")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache", help="directory for the dequantized weights (.npz, ~1.1 GB)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    got = sha256_file(args.gguf)
    if got != GGUF_SHA256:
        raise SystemExit(f"{args.gguf}: sha256 {got}, expected {GGUF_SHA256}")
    reader = gguf.GGUFReader(args.gguf)
    cfg = config_from_gguf(reader)
    if args.what == "config":
        print(json.dumps(cfg, indent=1))
        return
    if args.what == "arc-merge":
        args.tok_path = os.path.join(args.data_root, "tokenizers/gemma3/tokenizer.json.zst")
        parts = []
        for p in args.parts:
            with open(p, encoding="utf-8") as f:
                parts.append(json.load(f))
        src = os.path.join(args.data_root, "datasets/arc/genmc/arc_easy/official/test.jsonl")
        write_arc(args, cfg, src, parts, args.out)
        return
    sd = cached_state(reader, args.cache)
    tok, args.tok_path = load_tokenizer(args.data_root)
    os.makedirs(args.out, exist_ok=True)
    if args.what == "window":
        run_window(args, cfg, sd, tok)
    if args.what in ("logits", "all"):
        run_logits(args, cfg, sd, tok, args.out)
    if args.what in ("arc", "all"):
        run_arc(args, cfg, sd, tok, args.out)


if __name__ == "__main__":
    main()
