#!/usr/bin/env bash
# paper_tables_smollm2.sh: the real runs behind docs/results/paper_tables.md - SmolLM2-135M-Instruct
# (the demo's GGUF, scripts/fetch_smollm2.sh) through diagnose, calibrate, one run of the
# paper's rows A, B, D, E on four of its benchmarks (small: LIMIT items per task, MMLU's
# "miscellaneous" subject), and the cost model at the paper's shape; then `tables` over it.
# Row C (direct+qmean+sqk) is left out by default: the gate says Bypass for this model, its
# scales are all 1 and C computes what B computes (MODES adds it back).
# Needs ../shared/datasets (ARC, TruthfulQA, MMLU, HellaSwag, Brown). Knobs: OUT, LIMIT, THREADS.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/paper_tables}
LIMIT=${LIMIT:-25}
THREADS=${THREADS:-2}
BIN=${BIN:-./hifa4-eval}
D=../shared/datasets
gguf=$(./scripts/fetch_smollm2.sh)
model=$OUT/SmolLM2-135M-Instruct # the directory name is the model name in run.json and diagnose.json
mkdir -p "$OUT"
[ -f "$model/model.safetensors" ] || $BIN import-gguf "$gguf" --out "$model"
[ -f "$OUT/diagnose/diagnose.json" ] ||
    $BIN diagnose --model "$model" --calib $D/brown/brown.txt.zst --calib-samples 64 --calib-len 256 \
        --threads "$THREADS" --out "$OUT/diagnose" >"$OUT/diagnose.txt"
[ -f "$OUT/scales.safetensors" ] ||
    $BIN calibrate --model "$model" --calib $D/brown/brown.txt.zst --calib-samples 32 --calib-len 256 \
        --threads "$THREADS" --out "$OUT/scales.safetensors" >"$OUT/calibrate.txt"
[ -f "$OUT/run/summary.json" ] ||
    $BIN run --model "$model" --task arc_challenge,truthfulqa_mc1,mmlu,hellaswag --data-dir $D \
        --subjects miscellaneous --limit "$LIMIT" \
        --attn ${MODES:-bf16,direct,direct+qmean,direct+qmean+preorder,hifa4} \
        --scales "$OUT/scales.safetensors" --threads "$THREADS" --out "$OUT/run"
# Table 10 at the paper's shape (Qwen3-8B: 36 layers, 32 query / 8 KV heads of 128) and T = 40,960
$BIN cost --shape 36:32:8:128 --seq 40960 --qmean token --json >"$OUT/cost-qwen3-8b-shape.json"
$BIN cost --model "$model" --seq 8192 --qmean token --json >"$OUT/cost-smollm2.json"
$BIN tables "$OUT/diagnose" "$OUT/run" "$OUT/cost-qwen3-8b-shape.json" "$OUT/cost-smollm2.json" --csv "$OUT/csv" \
    --latex "$OUT/tex" >"$OUT/tables.md"
$BIN tables "$OUT/diagnose" "$OUT/run" --paper --paper-model LLaMA3.1-8B >"$OUT/tables-paper.md"
# Tables 3, 5, 6 at 60 items per task (bf16, direct, hifa4 only)
[ -f "$OUT/run60/summary.json" ] ||
    $BIN run --model "$model" --task arc_challenge,truthfulqa_mc1,mmlu,hellaswag --data-dir $D --subjects miscellaneous \
        --limit 60 --attn bf16,direct,hifa4 --scales "$OUT/scales.safetensors" --threads "$THREADS" --out "$OUT/run60"
$BIN tables "$OUT/run60" >"$OUT/tables-60.md"
