#!/usr/bin/env python3
"""ARC-Easy per-option log-likelihoods with lm-evaluation-harness 0.4.5 (HFLM), first 200 test items.

Outputs (in /work/refs/):
  arc_easy_ref.jsonl.zst  one line per item, in file order:
        {"idx", "id", "gold", "ll": [per option], "is_greedy": [per option],
         "ctx_ids": [...], "cont_ids": [[...] per option]}
      ll / is_greedy are lm-eval's own loglikelihood() results (resps) for the requests that its
      arc_easy task builds; ctx_ids / cont_ids are the token ids HFLM._encode_pair produced.
  arc_easy_ref_summary.json  acc / acc_norm (lm-eval's process_results + mean aggregation, and the
      stderr lm-eval reports), the request-encoding check, the hand cross-check, timing, versions.

Data: /work/shared/datasets/arc/genmc/arc_easy/official/test.jsonl (AI2 format plus 'para', which is
ignored), first 200 lines, converted to the Hugging Face allenai/ai2_arc row format
({"id", "question", "choices": {"text", "label"}, "answerKey"}) in /work/cache/arc_easy_first200_hf.jsonl,
which lm-eval's own arc_easy task config (tasks/arc/arc_easy.yaml: doc_to_text
"Question: {{question}}\\nAnswer:", doc_to_choice "{{choices.text}}",
doc_to_target "{{choices.label.index(answerKey)}}", target_delimiter " " (default)) then loads through
dataset_path "json" (only the dataset location is overridden; no hub access).

Model: SmolLM2-135M-Instruct Q4_1 GGUF via transformers (float32, lm_head tied to the embedding, see
smollm_hf.py), wrapped as lm_eval.models.huggingface.HFLM(pretrained=model, tokenizer=tok,
batch_size=1); add_bos_token is left at its 0.4.5 default (False), so no BOS is prepended
(checked below on the encoded requests).

Ran with (see /work/refs/SOURCES.md):
  Python 3.11.2 (Debian 12 /usr/bin/python3; venv /work/venv --system-site-packages)
  lm-eval 0.4.5, transformers 4.45.2, tokenizers 0.20.3, gguf 0.19.0, datasets 3.0.2,
  torch 1.13.0a0 (Debian python3-torch 1.13.1+dfsg, CPU, 1 thread), numpy 1.24.2 (Debian), zstandard 0.25.0

Run:
  HF_DATASETS_OFFLINE=1 /work/venv/bin/python /work/refs/scripts/arc_easy_ref.py [N_ITEMS]
  (N_ITEMS default 200)
"""
import importlib.metadata as md
import json
import os
import sys
import time

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import zstandard  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smollm_hf  # noqa: E402

SRC = "/work/shared/datasets/arc/genmc/arc_easy/official/test.jsonl"
HF_JSONL = "/work/cache/arc_easy_first200_hf.jsonl"
OUTDIR = "/work/refs"
N = int(sys.argv[1]) if len(sys.argv) > 1 else 200


def convert():
    rows = []
    with open(SRC, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= N:
                break
            d = json.loads(line)
            rows.append({"id": d["id"], "question": d["question"]["stem"],
                         "choices": {"text": [c["text"] for c in d["question"]["choices"]],
                                     "label": [c["label"] for c in d["question"]["choices"]]},
                         "answerKey": d["answerKey"]})
    os.makedirs(os.path.dirname(HF_JSONL), exist_ok=True)
    with open(HF_JSONL, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return rows


def hand_ll(model, tok, context, continuation):
    """Independent check: ctx = tok(context), whole = tok(context+continuation), cont = whole[len(ctx):].
    Returns the sum of float64 log-softmax over the continuation positions (forward on `whole`), the
    same in float32 on the input lm-eval feeds (whole[:-1]), greedy flag, ctx ids, cont ids."""
    ctx = tok(context, add_special_tokens=False)["input_ids"]
    whole = tok(context + continuation, add_special_tokens=False)["input_ids"]
    cont = whole[len(ctx):]
    with torch.no_grad():
        logits = model(torch.tensor([whole])).logits[0]
        logits32 = model(torch.tensor([whole[:-1]])).logits[0]
    lp = torch.log_softmax(logits.double(), -1)
    ll = sum(float(lp[len(ctx) - 1 + j, t]) for j, t in enumerate(cont))
    lp32 = torch.log_softmax(logits32, -1)
    ll32 = float(torch.stack([lp32[len(ctx) - 1 + j, t] for j, t in enumerate(cont)]).sum())
    greedy = all(int(lp[len(ctx) - 1 + j].argmax()) == t for j, t in enumerate(cont))
    return ll, ll32, greedy, ctx, cont


def main():
    import lm_eval
    from lm_eval import evaluator, utils
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import get_task_dict

    rows = convert()
    tok, model, info = smollm_hf.load()
    print("load info:", info)

    yaml_path = os.path.join(os.path.dirname(lm_eval.__file__), "tasks", "arc", "arc_easy.yaml")
    cfg = utils.load_yaml_config(yaml_path)
    cfg_used = dict(cfg)
    cfg_used.update({"dataset_path": "json", "dataset_name": None,
                     "dataset_kwargs": {"data_files": {"test": HF_JSONL}}})
    for k in ("training_split", "validation_split", "tag"):
        cfg_used.pop(k, None)
    task = ConfigurableTask(config=cfg_used)
    docs = list(task.test_docs())
    assert len(docs) == len(rows) and all(d["id"] == r["id"] for d, r in zip(docs, rows))

    lm = HFLM(pretrained=model, tokenizer=tok, batch_size=1, max_length=2048)
    assert lm.add_bos_token is False

    # Check the encoding of one request: no BOS (id 1) and no other special token in front.
    d0 = docs[0]
    ctx0 = task.doc_to_text(d0)
    ch0 = task.doc_to_choice(d0)
    cont0 = task.config.target_delimiter + ch0[0]
    ctx_enc, cont_enc = lm._encode_pair(ctx0, cont0)
    enc_check = {"context": ctx0, "continuation": cont0, "context_ids": ctx_enc, "continuation_ids": cont_enc,
                 "context_tokens": tok.convert_ids_to_tokens(ctx_enc),
                 "continuation_tokens": tok.convert_ids_to_tokens(cont_enc),
                 "first_id_is_bos": bool(ctx_enc and ctx_enc[0] == tok.bos_token_id),
                 "tok_bos_token_id": tok.bos_token_id}
    print("request 0 encoding:", json.dumps(enc_check, ensure_ascii=False))
    assert ctx_enc[0] not in (0, 1, 2), "a special token was prepended"
    assert ctx_enc == tok(ctx0, add_special_tokens=False)["input_ids"]

    t0 = time.time()
    res = evaluator.evaluate(lm=lm, task_dict=get_task_dict([task]), log_samples=True, bootstrap_iters=100000)
    t_eval = time.time() - t0
    tname = list(res["results"].keys())[0]
    r = res["results"][tname]
    samples = sorted(res["samples"][tname], key=lambda s: s["doc_id"])
    assert len(samples) == len(rows)

    lines, recs = [], []
    for s, row in zip(samples, rows):
        doc = s["doc"]
        assert doc["id"] == row["id"]
        resps = [x[0] for x in s["resps"]]  # per option: (ll, is_greedy)
        ctx = task.doc_to_text(doc)
        chs = task.doc_to_choice(doc)
        enc = [lm._encode_pair(ctx, task.config.target_delimiter + c) for c in chs]
        assert all(e[0] == enc[0][0] for e in enc)
        rec = {"idx": s["doc_id"], "id": doc["id"], "gold": int(s["target"]),
               "ll": [float(a) for a, _ in resps], "is_greedy": [bool(b) for _, b in resps],
               "ctx_ids": enc[0][0], "cont_ids": [e[1] for e in enc]}
        rec["_acc"] = s["acc"]
        rec["_acc_norm"] = s["acc_norm"]
        recs.append(rec)
        lines.append(json.dumps({k: v for k, v in rec.items() if not k.startswith("_")}, ensure_ascii=False))
    data = ("\n".join(lines) + "\n").encode()
    with open(os.path.join(OUTDIR, "arc_easy_ref.jsonl.zst"), "wb") as f:
        f.write(zstandard.ZstdCompressor(level=19).compress(data))

    # Recompute acc / acc_norm from the stored ll (as lm-eval's process_results does).
    acc = np.mean([float(np.argmax(x["ll"]) == x["gold"]) for x in recs])
    acc_norm = np.mean([float(np.argmax(np.array(x["ll"]) / np.array([float(len(c)) for c in doc_ch])) == x["gold"])
                        for x, doc_ch in zip(recs, [task.doc_to_choice(s["doc"]) for s in samples])])

    # Hand cross-check on a few items (all options).
    hand = []
    t1 = time.time()
    for i in sorted({i for i in (0, 1, 2, 57, 199) if i < len(recs)} | {len(recs) - 1}):
        doc = samples[i]["doc"]
        ctx = task.doc_to_text(doc)
        for j, c in enumerate(task.doc_to_choice(doc)):
            ll, ll32, g, cids, conts = hand_ll(model, tok, ctx, " " + c)
            hand.append({"idx": i, "option": j, "ll_hand_f64": ll, "ll_hand_f32": ll32, "ll_lmeval": recs[i]["ll"][j],
                         "abs_diff": abs(ll - recs[i]["ll"][j]), "abs_diff_f32": abs(ll32 - recs[i]["ll"][j]),
                         "greedy_hand": g,
                         "greedy_lmeval": recs[i]["is_greedy"][j],
                         "ids_equal": cids == recs[i]["ctx_ids"] and conts == recs[i]["cont_ids"][j]})
    t_hand = time.time() - t1
    max_diff = max(h["abs_diff"] for h in hand)
    max_diff32 = max(h["abs_diff_f32"] for h in hand)
    print(f"hand check: {len(hand)} options, max |ll diff| f64 {max_diff:.3e} f32 {max_diff32:.3e}, "
          f"ids equal {all(h['ids_equal'] for h in hand)}, greedy equal {all(h['greedy_hand'] == h['greedy_lmeval'] for h in hand)}")

    summary = {
        "task": "arc_easy (lm-eval 0.4.5 tasks/arc/arc_easy.yaml, dataset location overridden)",
        "data": {"source": SRC, "items": len(recs), "selection": f"first {len(recs)} lines, file order",
                 "converted_to": HF_JSONL},
        "config_used": {k: v for k, v in cfg_used.items() if k != "metric_list"},
        "lm_eval_results": {k: v for k, v in r.items()},
        "acc": float(r["acc,none"]), "acc_norm": float(r["acc_norm,none"]),
        "acc_stderr": float(r.get("acc_stderr,none", float("nan"))),
        "acc_norm_stderr": float(r.get("acc_norm_stderr,none", float("nan"))),
        "acc_recomputed_from_ll": float(acc), "acc_norm_recomputed_from_ll": float(acc_norm),
        "acc_norm_definition": "argmax_i(ll_i / len(choice_text_i in characters, without the leading space)) == gold",
        "request_encoding_check": enc_check,
        "hflm": {"add_bos_token": lm.add_bos_token, "batch_size": 1, "max_length": lm.max_length,
                 "prefix_token_id": lm.prefix_token_id, "pad_token_id": tok.pad_token_id,
                 "note": "prefix_token_id is only used for an empty context, which ARC never has"},
        "hand_cross_check": {"n_options": len(hand), "max_abs_diff_f64": max_diff, "max_abs_diff_f32": max_diff32,
                             "method": "ctx=tok(context), whole=tok(context+' '+choice), cont=whole[len(ctx):]; "
                                       "ll_hand_f64: forward on whole, float64 log_softmax of the float32 logits, "
                                       "summed over the continuation positions; ll_hand_f32: forward on whole[:-1] "
                                       "(what lm-eval feeds), float32 log_softmax and float32 sum (as lm-eval)",
                             "rows": hand},
        "model_load_info": info,
        "timing_s": {"lm_eval_evaluate": round(t_eval, 1), "hand_check": round(t_hand, 1)},
        "versions": {"python": sys.version.split()[0], "lm_eval": md.version("lm_eval"),
                     "transformers": md.version("transformers"), "tokenizers": md.version("tokenizers"),
                     "gguf": md.version("gguf"), "datasets": md.version("datasets"), "torch": torch.__version__,
                     "numpy": np.__version__, "threads": torch.get_num_threads()},
    }
    with open(os.path.join(OUTDIR, "arc_easy_ref_summary.json"), "w") as f:
        json.dump(summary, f, indent=1, ensure_ascii=False)
    print(f"acc={summary['acc']:.4f} acc_norm={summary['acc_norm']:.4f} (recomputed {acc:.4f} {acc_norm:.4f}) "
          f"eval {t_eval:.0f}s")


if __name__ == "__main__":
    main()
