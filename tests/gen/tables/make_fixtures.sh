#!/usr/bin/env bash
# make_fixtures.sh: regenerates tests/data/tables/ - the inputs of tests/test_tables.sh, made by
# the tool itself on a tiny synthetic model (make-model, Qwen3 shape of the demo with a planted
# K outlier at layer 0 channel 51, its built-in byte-level tokenizer): diagnose, calibrate with
# three aggregators, one run of the rows A-E on four benchmarks, three runs that differ only in
# the scales' aggregator (Table 2), a niah run and a trace (Table 4), `cost --json` (Table 10).
# Needs ../shared/datasets (the texts are not committed: only run.json, summary.json,
# diagnose.json, trace.json and the cost files - our own numbers). Then check the expected
# files by hand (see tests/test_tables.sh) before committing them.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=./hifa4-eval
D=${HIFA4_TEST_DATA:-../shared}/datasets
W=${TMPDIR:-/tmp}/hifa4-table-fixtures
F=tests/data/tables
rm -rf "$W" "$F/inputs"
mkdir -p "$W" "$F/inputs"
M=$W/tiny-outlier
$BIN --quiet make-model --arch qwen3 --layers 2 --dim 128 --heads 4 --kv-heads 2 --head-dim 128 --ffn 256 --seed 7 \
    --plant-outlier 0:51:34 --out "$M" >/dev/null
$BIN --quiet diagnose --model "$M" --calib $D/brown/brown.txt.zst --calib-samples 16 --calib-len 128 --threads 2 \
    --out "$W/diagnose" >/dev/null
for agg in rms mean p99; do
    $BIN --quiet calibrate --model "$M" --calib $D/brown/brown.txt.zst --calib-samples 16 --calib-len 128 --agg $agg \
        --threads 2 --out "$W/scales-$agg.safetensors" >/dev/null
done
$BIN --quiet run --model "$M" --task arc_challenge,truthfulqa_mc1,mmlu,hellaswag --data-dir $D \
    --subjects abstract_algebra,anatomy --limit 40 \
    --attn bf16,direct,direct+qmean,direct+qmean+sqk,direct+qmean+preorder,hifa4 \
    --scales "$W/scales-rms.safetensors" --threads 2 --out "$W/run-ablation" >/dev/null 2>&1
for agg in rms mean p99; do
    $BIN --quiet run --model "$M" --task arc_challenge,hellaswag,ppl --data-dir $D --limit 30 --ppl-ctx 128 \
        --attn bf16,direct,hifa4 --scales "$W/scales-$agg.safetensors" --threads 2 --out "$W/run-agg-$agg" >/dev/null 2>&1
done
$BIN --quiet run --model "$M" --task niah --data-dir $D --niah-lengths 256,512 --niah-per-cell 2 --attn bf16,direct,hifa4 \
    --scales "$W/scales-rms.safetensors" --threads 2 --out "$W/run-niah" >/dev/null 2>&1
$BIN --quiet trace --model "$M" --text $D/wikitext2/raw/wiki.test.raw --ctx 128,256 --limit 1 --attn bf16,direct,hifa4 \
    --scales "$W/scales-rms.safetensors" --threads 2 --out "$W/trace" >/dev/null 2>&1
$BIN cost --model "$M" --seq 4096 --qmean token --json >"$F/inputs/cost-tiny.json"
$BIN cost --shape 36:32:8:128 --seq 40960 --qmean token --json >"$F/inputs/cost-qwen3-8b-shape.json"
cp "$W/diagnose/diagnose.json" "$F/inputs/diagnose.json"
cp "$W/trace/trace.json" "$F/inputs/trace.json"
for r in run-ablation run-agg-rms run-agg-mean run-agg-p99 run-niah; do
    mkdir -p "$F/inputs/$r"
    cp "$W/$r/run.json" "$W/$r/summary.json" "$F/inputs/$r/"
done
du -sh "$F/inputs"
