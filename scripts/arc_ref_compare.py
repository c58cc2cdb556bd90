#!/usr/bin/env python3
"""arc_ref_compare.py RUN_DIR REF_JSON [--mode exact]: a run's ARC-Easy samples against a
transformers reference (tests/data/*/arc_easy_100.json, written by scripts/gemma3_ref.py or
scripts/qwen25_ref.py): per option |our loglik - the reference's|, predictions (acc and
acc_norm), is_greedy, matched by item id. Python standard library plus the `zstd` command.

  hifa4-eval run --model DIR --task arc_easy --limit 100 --attn exact --act f32 --out RUN_DIR
  python3 scripts/arc_ref_compare.py RUN_DIR tests/data/qwen25/0.5b/arc_easy_100.json
"""
import argparse
import json
import os
import subprocess
import sys


def samples(run_dir, mode):
    path = os.path.join(run_dir, f"samples-arc_easy-{mode}.jsonl.zst")
    raw = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    return {r["id"]: r for r in (json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("ref_json")
    ap.add_argument("--mode", default="exact")
    args = ap.parse_args()
    ours = samples(args.run_dir, args.mode)
    with open(args.ref_json, encoding="utf-8") as f:
        ref = json.load(f)
    n_opt = pred_diff = norm_diff = greedy_same = missing = 0
    max_d, worst = 0.0, None
    for it in ref["items"]:
        s = ours.get(it["id"])
        if s is None:
            missing += 1
            continue
        if len(s["logliks"]) != len(it["options"]):
            sys.exit(f"{it['id']}: {len(s['logliks'])} options in the run, {len(it['options'])} in the reference")
        for k, o in enumerate(it["options"]):
            d = abs(s["logliks"][k] - o["ll"])
            if d > max_d:
                max_d, worst = d, f"{it['id']} option {k}"
            greedy_same += bool(s["is_greedy"][k]) == bool(o["is_greedy"])
            n_opt += 1
        pred_diff += s["pred"] != it["pred"]
        norm_diff += s["pred_norm"] != it["pred_norm"]
    n = len(ref["items"]) - missing
    print(f"{n} items ({missing} missing from the run), {n_opt} options: max |dLL| {max_d:.2e} ({worst}), "
          f"pred differences {pred_diff}, pred_norm differences {norm_diff}, is_greedy equal {greedy_same}/{n_opt}")
    ok = missing == 0 and max_d <= 1e-3 and pred_diff == 0 and norm_diff == 0 and greedy_same == n_opt
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
