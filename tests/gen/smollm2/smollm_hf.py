"""Shared loader: SmolLM2-135M-Instruct GGUF -> transformers LlamaForCausalLM (float32), lm_head tied.

Imported by logits_ref.py and arc_easy_ref.py (same directory). Not a script.

Ran with: Python 3.11.2 (Debian), torch 1.13.0a0 (Debian python3-torch 1.13.1+dfsg), numpy 1.24.2,
transformers 4.45.2, tokenizers 0.20.3, gguf 0.19.0 (venv /work/venv, see /work/refs/SOURCES.md).

Why the tie: transformers 4.45.2's GGUF loader maps token_embd.weight -> model.embed_tokens.weight
and output.weight -> lm_head.weight; this GGUF has no output.weight (tied embeddings) and the
config it builds has tie_word_embeddings=False, so lm_head.weight is left randomly initialised
("newly initialized: ['lm_head.weight']"). We copy embed_tokens.weight into lm_head.weight.
"""
import os
import time

import torch

GGUF_DIR = os.environ.get("SMOLLM2_GGUF_DIR", "/work/cache/smollm2")
GGUF_FILE = os.environ.get("SMOLLM2_GGUF_FILE", "SmolLM2-135M-Instruct.Q4_1.gguf")

ENGLISH_CHECK = ("The history of the United States began with the arrival of the first people in the "
                 "Americas thousands of years ago. Many indigenous cultures formed, and many saw "
                 "transformations in the 16th century away from more densely populated lifestyles and "
                 "towards reorganized polities elsewhere.")


def perplexity(model, tok, text):
    ids = tok(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = model(ids).logits[0].double()
    lp = torch.log_softmax(logits[:-1], -1).gather(1, ids[0, 1:, None]).squeeze(1)
    return float(torch.exp(-lp.mean()))


def load(threads=None):
    """Returns (tokenizer, model, info dict). Threads: SMOLLM2_THREADS (default 1: on this shared,
    2-core machine OpenMP with 2 threads was 4-5x slower than 1 thread under load)."""
    if threads is None:
        threads = int(os.environ.get("SMOLLM2_THREADS", "1"))
    torch.set_num_threads(threads)
    from transformers import AutoTokenizer, AutoModelForCausalLM
    t0 = time.time()
    tok = AutoTokenizer.from_pretrained(GGUF_DIR, gguf_file=GGUF_FILE)
    t1 = time.time()
    model = AutoModelForCausalLM.from_pretrained(GGUF_DIR, gguf_file=GGUF_FILE, torch_dtype=torch.float32)
    model.eval()
    t2 = time.time()
    emb = model.model.embed_tokens.weight
    head = model.lm_head.weight
    info = {"torch_threads": torch.get_num_threads(), "load_tokenizer_s": round(t1 - t0, 2), "load_model_s": round(t2 - t1, 2),
            "tie_word_embeddings_config": bool(model.config.tie_word_embeddings),
            "lm_head_shares_storage_before_tie": emb.data_ptr() == head.data_ptr(),
            "attn_implementation": getattr(model.config, "_attn_implementation", None)}
    info["lm_head_maxabs_diff_before_tie"] = float((emb - head).abs().max())
    info["ppl_english_check_before_tie"] = perplexity(model, tok, ENGLISH_CHECK)
    with torch.no_grad():
        model.lm_head.weight.copy_(model.model.embed_tokens.weight)
    info["ppl_english_check_after_tie"] = perplexity(model, tok, ENGLISH_CHECK)
    assert info["ppl_english_check_after_tie"] < 100, info
    return tok, model, info
