#!/usr/bin/env bash
# test_demo_identity.sh: the demo's pipeline at a small scale (make-model with the demo's
# planted-outlier Qwen3 shape, calibrate on Debian's GPL-3 text, `run --task exam --limit 60
# --attn all`) must reproduce the committed samples files in tests/data/demo_identity/ byte for
# byte. History of the fixture: first made by the binary of commit fae9478, before the layout
# change that moved src/ into layer folders and made the run module, which reproduced it exactly -
# the evidence that the move changed no bit. Remade once, on purpose, when the linear layers
# moved from OpenBLAS to the deterministic GEMM (model/gemm.h): every product is
# now one fmaf chain per element, a different rounding order (logliks moved by at most one
# bf16 step of these synthetic -100-nat values, 0.5; no prediction changed). Since then the
# bits are the same on every CPU, so this test also catches a machine that computes
# differently. It is a regression check, not a numerics check (those are the golden tests).
# Since then every samples file starts with a stamp frame (results/stamp.h: task, mode, the
# run's configuration key and model hash, a zstd skippable frame); the fixtures were remade with
# it, and each new file was checked to be that frame followed by the old file's bytes exactly.
# Remade again when the configuration key became the run's identity (run.json schema 2,
# docs/design/run_record.md): each new file was checked to hold the old stamp with only config_key
# changed, followed by the old file's item frames byte for byte.
# Remade once more when calibrate began to record the gate rules in the scales file's metadata
# (gate_rule, the measured rule's statistics, the paper rule's decision): the scales' tensors and
# every earlier metadata field are unchanged, only those keys were added; the scales file's new
# sha256 changes each samples file's stamp, and every item frame (zstdcat) is identical.
# Remade once more when the measured gate rule became calibrate's default: on this planted model
# it decides what the paper's rule does (Strong, alpha 0.5), the scales tensor is byte-identical
# and only the metadata's gate_rule changed (paper -> measured); every item frame is identical.
# Remade once more when the measured rule's default candidates became 0.25, 0.5 and 1: on this
# model alpha 0.5 stays the best, the scales tensor is byte-identical and only the metadata's
# measured statistics gained the fourth candidate; every item frame (zstdcat) is identical.
# Skipped when the exam pools (Debian hamexam/fccexam) or the GPL-3 text are not installed.
set -u
cd "$(dirname "$0")/.."
BIN=${HIFA4_BIN:-./hifa4-eval}
TMP=${HIFA4_TMP:-build/tmp}/demo_identity
FIX=tests/data/demo_identity
pass=0; fail=0; skip=0
if [ ! -d /usr/share/hamexam ] && [ ! -d /usr/share/fccexam ]; then
    echo "SKIP test_demo_identity: the exam pools (Debian packages hamexam, fccexam) are not installed"; skip=1
elif [ ! -f /usr/share/common-licenses/GPL-3 ]; then
    echo "SKIP test_demo_identity: /usr/share/common-licenses/GPL-3 is missing"; skip=1
else
    rm -rf "$TMP"; mkdir -p "$TMP"
    if "$BIN" --quiet make-model --arch qwen3 --layers 2 --dim 128 --heads 4 --kv-heads 2 --head-dim 128 --ffn 256 \
            --seed 7 --plant-outlier 0:51:34 --out "$TMP/model" >/dev/null &&
       "$BIN" --quiet calibrate --model "$TMP/model" --calib /usr/share/common-licenses/GPL-3 --calib-samples 32 \
            --calib-len 128 --threads 2 --out "$TMP/scales.safetensors" >/dev/null 2>&1 &&
       "$BIN" --quiet run --model "$TMP/model" --task exam --limit 60 --attn all --scales "$TMP/scales.safetensors" \
            --threads 2 --out "$TMP/run" >/dev/null; then
        pass=$((pass + 1))
    else
        echo "FAIL the demo pipeline did not run (see above)"; fail=$((fail + 1))
    fi
    n_fix=$(ls "$FIX"/samples-*.zst 2>/dev/null | wc -l)
    if [ "$n_fix" -ne 7 ]; then echo "FAIL $FIX holds $n_fix samples files, expected the 7 modes of --attn all"; fail=$((fail + 1)); fi
    for f in "$FIX"/samples-*.zst "$FIX"/scales.safetensors; do
        b=$(basename "$f")
        if [ "$b" = scales.safetensors ]; then got="$TMP/$b"; else got="$TMP/run/$b"; fi
        if cmp -s "$f" "$got"; then pass=$((pass + 1)); else echo "FAIL $got differs from $f"; fail=$((fail + 1)); fi
    done
fi
if [ $skip -gt 0 ]; then echo "test_demo_identity: $pass passed, $fail failed, $skip skipped"
else echo "test_demo_identity: $pass passed, $fail failed"; fi
[ $fail -eq 0 ]
