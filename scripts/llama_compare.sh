#!/bin/sh
# llama_compare.sh: hifa4-eval beside llama.cpp's llama-perplexity on the same weights, same
# thread counts, runs alternated (ours, theirs, ours, ...) so both see the same machine load.
# Measures whole-process user+sys CPU seconds and wall seconds (GNU time), model load included.
# Never part of `make test`; llama.cpp is built outside the repo by scripts/llama_build.sh.
#   usage: scripts/llama_compare.sh [REPS]        (default 2; the best of REPS is reported)
#   env:   HIFA4_BIN (./hifa4-eval), DATA_DIR (../shared/datasets), GGUF (the SmolLM2 Q4_1 GGUF,
#          fetched by scripts/fetch_smollm2.sh), OUT (~/.cache/hifa4/compare), THREADS ("1 2"),
#          MODELS ("F32 BF16"), WINDOWS ("512x4 2048x1"), ATTN (bf16), WEIGHTS ("f32 bf16": our
#          --weights modes; bf16 = resident bf16 panels and vdpbf16ps under --act bf16)
# The F32 and BF16 GGUFs are made from the Q4_1 GGUF with llama-quantize --allow-requantize
# (every weight dequantized: F32 exactly, BF16 rounded to nearest even) and imported with
# `hifa4-eval import-gguf --dtype f32|bf16`, so both programs read the same numbers.
# Prints one line per run and a table of best CPU seconds per configuration.
set -eu
REPS=${1:-2}
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=${HIFA4_BIN:-$HERE/hifa4-eval}
DATA=${DATA_DIR:-$HERE/../shared/datasets}
OUT=${OUT:-$HOME/.cache/hifa4/compare}
GGUF=${GGUF:-$("$HERE/scripts/fetch_smollm2.sh" | tail -1)}
LBIN=$("$HERE/scripts/llama_build.sh" | tail -1)
RAW=$DATA/wikitext2/raw/wiki.test.raw
[ -f "$RAW" ] || { echo "llama_compare: $RAW not found (DATA_DIR)" >&2; exit 1; }
mkdir -p "$OUT"
for T in ${MODELS:-F32 BF16}; do
    t=$(echo "$T" | tr 'A-Z' 'a-z')
    [ -f "$OUT/smollm2-135m.$T.gguf" ] ||
        "$LBIN/llama-quantize" --allow-requantize "$GGUF" "$OUT/smollm2-135m.$T.gguf" "$T" >/dev/null 2>&1
    [ -f "$OUT/hifa4-$t/config.json" ] ||
        "$BIN" import-gguf "$OUT/smollm2-135m.$T.gguf" --out "$OUT/hifa4-$t" --dtype "$t" >/dev/null
done
LOG=$OUT/compare.log
: >"$LOG"
# run NAME CMD...: appends "NAME user+sys wall" to the log
run() {
    name=$1
    shift
    /usr/bin/time -f "%U %S %e" -o "$OUT/time.txt" "$@" >"$OUT/last.out" 2>&1 ||
        { tail -5 "$OUT/last.out" >&2; exit 1; }
    read -r u s w <"$OUT/time.txt"
    line=$(awk -v n="$name" -v u="$u" -v s="$s" -v w="$w" 'BEGIN { printf "%s cpu %.2f wall %.2f", n, u + s, w }')
    echo "$line" | tee -a "$LOG"
}
for r in $(seq 1 "$REPS"); do
    for W in ${WINDOWS:-512x4 2048x1}; do
        ctx=${W%x*} n=${W#*x}
        for th in ${THREADS:-1 2}; do
            for T in ${MODELS:-F32 BF16}; do
                t=$(echo "$T" | tr 'A-Z' 'a-z')
                for wm in ${WEIGHTS:-f32 bf16}; do
                    o=$(mktemp -d)
                    run "hifa4-w$wm $T ctx=$ctx n=$n t=$th" "$BIN" run --model "$OUT/hifa4-$t" --task ppl \
                        --ppl-ctx "$ctx" --limit "$n" --attn "${ATTN:-bf16}" --threads "$th" --weights "$wm" \
                        --data-dir "$DATA" --out "$o/r"
                    rm -rf "$o"
                done
                run "llama $T ctx=$ctx n=$n t=$th" "$LBIN/llama-perplexity" -m "$OUT/smollm2-135m.$T.gguf" -f "$RAW" \
                    -c "$ctx" -b "$ctx" --chunks "$n" -t "$th"
            done
        done
    done
done
echo "# best of $REPS (CPU seconds = user + sys of the whole process; load average $(cut -d' ' -f1-3 /proc/loadavg))"
awk '{ k = $1 " " $2 " " $3 " " $4 " " $5; c = $7; if (!(k in b) || c < b[k]) b[k] = c }
     END { for (k in b) print k, b[k] }' "$LOG" | sort -k3,3 -k5,5 -k2,2 -k1,1
