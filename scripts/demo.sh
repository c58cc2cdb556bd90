#!/usr/bin/env bash
# demo.sh (`make demo`): from a clean clone, install what is missing (Debian packages, only when
# root), build, create the embedded default model in build/demo/ (a make-model Qwen3 checkpoint
# with head_dim 128, a planted K outlier at layer 0 channel 51 (gamma 34) and its own
# tokenizer), calibrate Smooth-QK scales when `hifa4-eval calibrate` exists, and score real
# licence-exam questions (Debian hamexam/fccexam; MMLU from ../shared/datasets if those are
# missing) under every available attention mode. Prints where the report is and its headline
# table. Knobs: DEMO_LIMIT (items, default 300), DEMO_THREADS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

LIMIT=${DEMO_LIMIT:-300}
THREADS=${DEMO_THREADS:-2}
DEMO=build/demo
BIN=./hifa4-eval
say() { printf '\n== %s\n' "$*" >&2; }

# ---- 1. packages ----
pkgs=(make gcc libopenblas-dev libcjson-dev libzstd-dev libcurl4-openssl-dev libpcre2-dev libutf8proc-dev hamexam fccexam)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        say "installing ${missing[*]}"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        say "missing Debian packages: ${missing[*]} (not root: install them with apt-get; continuing)"
    fi
fi

# ---- 2. build ----
say "building"
make -j"$THREADS" >/dev/null

# ---- 3. the embedded default model ----
mkdir -p "$DEMO"
if [ ! -f "$DEMO/model/model.safetensors" ]; then
    say "make-model: Qwen3, 2 layers, head_dim 128, K outlier 0:51:34 -> $DEMO/model"
    $BIN make-model --arch qwen3 --layers 2 --dim 128 --heads 4 --kv-heads 2 --head-dim 128 --ffn 256 \
        --seed 7 --plant-outlier 0:51:34 --out "$DEMO/model" >/dev/null
fi

# ---- 4. Smooth-QK scales ----
scales=()
if $BIN calibrate --help >/dev/null 2>&1; then
    # calibration text: the Brown corpus from ../shared, else any English text Debian ships
    calib=../shared/datasets/brown/brown.txt.zst
    [ -f "$calib" ] || calib=/usr/share/common-licenses/GPL-3
    if [ ! -f "$DEMO/scales.safetensors" ]; then
        say "calibrate: Smooth-QK scales from $calib -> $DEMO/scales.safetensors"
        $BIN calibrate --model "$DEMO/model" --calib "$calib" --calib-samples 128 --calib-len 256 \
            --threads "$THREADS" --out "$DEMO/scales.safetensors" >&2 ||
            say "calibration failed: modes that need Smooth-QK scales are skipped"
    fi
    if [ -f "$DEMO/scales.safetensors" ]; then scales=(--scales "$DEMO/scales.safetensors"); fi
else
    say "no 'calibrate' command in this build: modes that need Smooth-QK scales are skipped"
fi

# ---- 5. the main job ----
if [ -d /usr/share/hamexam ] || [ -d /usr/share/fccexam ]; then
    task=(--task exam)
else
    say "hamexam/fccexam pools not installed: using MMLU from ../shared/datasets instead"
    task=(--task mmlu --data-dir ../shared/datasets)
fi
OUT="$DEMO/run"
rm -rf "$OUT"
say "run: ${task[*]} --limit $LIMIT --attn all"
start=$(date +%s)
$BIN run --model "$DEMO/model" "${task[@]}" --limit "$LIMIT" --attn all "${scales[@]}" \
    --threads "$THREADS" --out "$OUT"
say "done in $(( $(date +%s) - start ))s; full report: $OUT/report.md (tables/*.csv, plots/*.svg)"
