#!/usr/bin/env python3
"""Dump every metadata key and every tensor of a GGUF file, plus a conversion summary.

Output: /work/refs/gguf_meta.txt (plain text).

Ran with (see /work/refs/SOURCES.md for how the venv was built):
  Python 3.11.2 (Debian 12 /usr/bin/python3, venv /work/venv with --system-site-packages)
  torch 1.13.0a0 (Debian python3-torch 1.13.1+dfsg; not used here), numpy 1.24.2 (Debian),
  transformers 4.45.2 (not used here), gguf 0.19.0, lm-eval 0.4.5 (not used here)

Run:
  /work/venv/bin/python /work/refs/scripts/gguf_meta.py [GGUF] [OUT]
  defaults: GGUF=/work/cache/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf  OUT=/work/refs/gguf_meta.txt

Format of the dump:
  KV lines:     KEY <TAB> TYPE <TAB> VALUE
                TYPE is the GGUF value type (UINT32, FLOAT32, STRING, BOOL, ...);
                arrays are ARRAY[ELEMTYPE] and VALUE is "len=N first=[...]" (first 8 elements).
                Strings are printed with Python repr (escapes visible); long strings are cut at
                400 characters with the full length given.
  Tensor lines: INDEX NAME TYPE ne=[ne0, ne1, ...] rel_offset=N abs_offset=N n_bytes=N
                ne is ggml's dimension order (ne0 = innermost, contiguous); the numpy/PyTorch
                shape is the reverse. rel_offset is the offset stored in the tensor-info record
                (relative to the start of the aligned data section), abs_offset the file offset.
"""
import collections
import hashlib
import importlib.metadata as md
import os
import sys

import numpy as np
import gguf
from gguf import GGUFReader, GGUFValueType

GGUF_PATH = sys.argv[1] if len(sys.argv) > 1 else "/work/cache/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = sys.argv[2] if len(sys.argv) > 2 else "/work/refs/gguf_meta.txt"


def scalar(field, i):
    """Decode element i of a field (index into field.data)."""
    part = field.parts[field.data[i]]
    t = field.types[-1]
    if t == GGUFValueType.STRING:
        return bytes(part).decode("utf-8", errors="backslashreplace")
    if t == GGUFValueType.BOOL:
        return bool(part[0])
    if t in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
        return float(part[0])
    return int(part[0])


def fmt_val(v):
    if isinstance(v, str):
        s = repr(v)
        if len(s) > 400:
            return s[:400] + f"...<cut; {len(v)} chars total>"
        return s
    if isinstance(v, float):
        return repr(v) + f" (float32 hex {np.float32(v).view(np.uint32):#010x})"
    return repr(v)


def main():
    r = GGUFReader(GGUF_PATH)
    lines = []
    sha = hashlib.sha256(open(GGUF_PATH, "rb").read()).hexdigest()
    lines.append(f"# GGUF dump of {os.path.basename(GGUF_PATH)}")
    lines.append(f"# size {os.path.getsize(GGUF_PATH)} bytes, sha256 {sha}")
    lines.append(f"# made by refs/scripts/gguf_meta.py with gguf {md.version('gguf')}, numpy {np.__version__}")
    lines.append(f"# data section starts at file offset {r.data_offset}; alignment {r.alignment}")
    lines.append("")
    lines.append(f"## Metadata ({len(r.fields)} fields; the first 3 are the header: version, tensor_count, kv_count)")
    vals = {}
    for k, f in r.fields.items():
        tnames = [GGUFValueType(t).name for t in f.types]
        if f.types[0] == GGUFValueType.ARRAY:
            typ = f"ARRAY[{tnames[1] if len(tnames) > 1 else '?'}]"
            n = len(f.data)
            first = [scalar(f, i) for i in range(min(8, n))]
            vals[k] = [scalar(f, i) for i in range(n)] if n <= 100000 else None
            s = f"len={n} first=[" + ", ".join(fmt_val(x) for x in first) + (", ..." if n > 8 else "") + "]"
        else:
            typ = tnames[0]
            v = scalar(f, 0)
            vals[k] = v
            s = fmt_val(v)
        lines.append(f"{k}\t{typ}\t{s}")

    # extra detail about tokenizer arrays
    lines.append("")
    lines.append("## Tokenizer detail")
    toks = vals.get("tokenizer.ggml.tokens")
    ttype = vals.get("tokenizer.ggml.token_type")
    if ttype is not None:
        c = collections.Counter(ttype)
        names = {1: "NORMAL", 2: "UNKNOWN", 3: "CONTROL", 4: "USER_DEFINED", 5: "UNUSED", 6: "BYTE"}
        lines.append("token_type counts: " + ", ".join(f"{t}({names.get(t, '?')})={n}" for t, n in sorted(c.items())))
        nonnormal = [(i, toks[i], t) for i, t in enumerate(ttype) if t != 1]
        lines.append(f"non-NORMAL tokens ({len(nonnormal)}): " + ", ".join(f"{i}:{toks[i]!r}:{t}" for i, _, t in nonnormal[:64]))
    for key in ("bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id"):
        k = "tokenizer.ggml." + key
        if k in vals:
            lines.append(f"{k} = {vals[k]} -> {toks[vals[k]]!r}")
    merges = vals.get("tokenizer.ggml.merges")
    if merges is not None:
        lines.append(f"merges: {len(merges)}; first 5 {merges[:5]!r}; last 3 {merges[-3:]!r}")
    if toks is not None:
        lines.append(f"tokens 0..20: {toks[:21]!r}")
        lines.append(f"last 3 tokens: {toks[-3:]!r}")
        digs = [t for t in toks if t.strip("Ġ").isdigit() and len(t.strip("Ġ")) > 1]
        lines.append(f"vocab entries that are multi-digit numbers (with or without a leading 'Ġ'): {len(digs)} {digs[:10]!r}")
        lines.append(f"'Ġ1' in vocab: {'Ġ1' in toks}; 'Ġ' in vocab: {'Ġ' in toks}")
    if "tokenizer.chat_template" in vals:
        lines.append("chat_template (full): " + repr(vals["tokenizer.chat_template"]))

    lines.append("")
    lines.append(f"## Tensors ({len(r.tensors)})")
    types = collections.Counter()
    for i, t in enumerate(r.tensors):
        rel = int(t.field.parts[-1][0])
        types[t.tensor_type.name] += 1
        lines.append(f"{i}\t{t.name}\t{t.tensor_type.name}\tne={[int(x) for x in t.shape]}\trel_offset={rel}\tabs_offset={t.data_offset}\tn_bytes={t.n_bytes}")
    lines.append("tensor types: " + ", ".join(f"{k} x{v}" for k, v in sorted(types.items())))
    names = {t.name for t in r.tensors}
    lines.append(f"output.weight present: {'output.weight' in names}")
    per_type = collections.defaultdict(set)
    for t in r.tensors:
        base = t.name.split(".", 2)[-1] if t.name.startswith("blk.") else t.name
        per_type[base].add(t.tensor_type.name)
    lines.append("type per tensor role: " + "; ".join(f"{k}: {'/'.join(sorted(v))}" for k, v in sorted(per_type.items())))
    lines.append("")
    v = vals
    lines.append("## Conversion summary (GGUF -> Hugging Face Llama checkpoint)")
    summary = (
        f"Architecture '{v['general.architecture']}': {v['llama.block_count']} layers, hidden "
        f"{v['llama.embedding_length']}, FFN {v['llama.feed_forward_length']} (SwiGLU: ffn_gate/ffn_up/ffn_down), "
        f"{v['llama.attention.head_count']} query heads and {v['llama.attention.head_count_kv']} KV heads of "
        f"{v['llama.embedding_length'] // v['llama.attention.head_count']} (rope.dimension_count "
        f"{v['llama.rope.dimension_count']}), vocab {v['llama.vocab_size']}, context_length "
        f"{v['llama.context_length']}, rope.freq_base {v['llama.rope.freq_base']} (no rope scaling keys), "
        f"layer_norm_rms_epsilon float32 {v['llama.attention.layer_norm_rms_epsilon']!r} (= 1e-5 rounded to "
        f"float32; HF config rms_norm_eps 1e-05). Tokenizer: tokenizer.ggml.model='{v['tokenizer.ggml.model']}' "
        f"(byte-level BPE, tokens in GPT-2 byte-to-unicode form, 'Ġ' = space), tokenizer.ggml.pre="
        f"'{v['tokenizer.ggml.pre']}' (llama.cpp: split every \\p{{N}} character, then the GPT-2 regex; in HF "
        f"terms Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=false, use_regex=true)]), "
        f"{len(v['tokenizer.ggml.merges'])} merges ('left right', rank = index), {len(toks)} tokens of which the "
        f"first 17 (0..16) are CONTROL (token_type 3) and all others NORMAL (1); no BYTE tokens, and 21 byte "
        f"values have no byte-level token at all (0x04 0x06 0x13 0x14 0x16 0x1D 0xC0 0xC1 0xF1 0xF2 0xF5..0xFF). "
        f"Special ids: bos {v['tokenizer.ggml.bos_token_id']} {toks[v['tokenizer.ggml.bos_token_id']]!r}, eos "
        f"{v['tokenizer.ggml.eos_token_id']} {toks[v['tokenizer.ggml.eos_token_id']]!r}, unknown "
        f"{v['tokenizer.ggml.unknown_token_id']} {toks[v['tokenizer.ggml.unknown_token_id']]!r}, padding "
        f"{v['tokenizer.ggml.padding_token_id']} {toks[v['tokenizer.ggml.padding_token_id']]!r}; "
        f"tokenizer.ggml.add_bos_token={v.get('tokenizer.ggml.add_bos_token')} and "
        f"tokenizer.ggml.add_space_prefix={v.get('tokenizer.ggml.add_space_prefix')}; there is no "
        f"tokenizer.ggml.add_eos_token key (so: no BOS/EOS added to plain text). A ChatML chat_template is "
        f"stored. Tensors: {', '.join(f'{k} x{n}' for k, n in sorted(types.items()))}: token_embd.weight is "
        f"Q8_0, every attention/FFN matrix Q4_1, the RMSNorm weights F32; output.weight is "
        f"{'present' if 'output.weight' in names else 'ABSENT (tied embeddings: lm_head = token_embd)'}. "
        f"Names map token_embd->model.embed_tokens, blk.N.attn_q/k/v/output->model.layers.N.self_attn."
        f"q/k/v/o_proj, ffn_gate/up/down->mlp.gate/up/down_proj, attn_norm->input_layernorm, ffn_norm->"
        f"post_attention_layernorm, output_norm->model.norm; a GGUF tensor with ne=[cols, rows] is the "
        f"row-major [rows, cols] PyTorch weight. attn_q and attn_k rows are in llama.cpp's permuted order "
        f"(convert_hf_to_gguf permutes them for rotary pairs (2i, 2i+1)); to get HF's rotate_half layout "
        f"un-permute per head: w.reshape(n_head, head_dim/2, 2, cols).swapaxes(1, 2).reshape(rows, cols) "
        f"with n_head = {v['llama.attention.head_count']} for attn_q and {v['llama.attention.head_count_kv']} "
        f"for attn_k (what transformers' reverse_permute_weights does).")
    lines.append(summary)
    lines.append("")
    with open(OUT, "w") as fo:
        fo.write("\n".join(lines))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
