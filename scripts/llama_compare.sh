#!/bin/sh
# llama_compare.sh: hifa4-eval beside llama.cpp's llama-perplexity on the same weights, same
# thread counts, runs alternated (ours, theirs, ours, ...) so both see the same machine load.
# Measures whole-process user+sys CPU seconds and wall seconds (GNU time), model load included.
# Never part of `make test`; llama.cpp is built outside the repo by scripts/llama_build.sh.
#   usage: scripts/llama_compare.sh [REPS]        (default 2; the best of REPS is reported)
#   env:   HIFA4_BIN (./hifa4-eval), DATA_DIR (../shared/datasets), OUT (~/.cache/hifa4/compare),
#          MODELS ("smollm2-135m gemma3-270m": the SmolLM2-135M-Instruct Q4_1 GGUF of
#          scripts/fetch_smollm2.sh, the Gemma 3 270M Q4_K_M GGUF of scripts/fetch_gemma3.sh;
#          SMOLLM2_GGUF / GEMMA3_GGUF override them), TYPES ("F32 BF16": the GGUFs compared),
#          THREADS ("1 2"), WINDOWS ("512x4 2048x1"), ATTN (bf16), PPL_SCORE (second-half: what
#          llama-perplexity computes - BOS-led windows, logits and scores for their second half
#          only; "all" scores every token, twice the lm_head work). Our --weights modes per GGUF:
#          F32 -> f32 (resident binary32 panels); BF16 -> f32 and bf16 (the same bf16 numbers in
#          binary32 panels, and in resident bf16 panels run by vdpbf16ps under --act bf16).
# The F32 and BF16 GGUFs are made from the quantized GGUF with llama-quantize --allow-requantize
# (every weight dequantized: F32 exactly, BF16 rounded to nearest even) and imported with
# `hifa4-eval import-gguf --dtype f32|bf16`; scripts/gguf_same_values.py then checks that the
# import holds the GGUF's values (every matrix identical, after import-gguf's documented
# transformations), so both programs compute with the same numbers.
# Prints one line per run and a markdown table of the best CPU seconds per configuration.
set -eu
REPS=${1:-2}
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=${HIFA4_BIN:-$HERE/hifa4-eval}
DATA=${DATA_DIR:-$HERE/../shared/datasets}
OUT=${OUT:-$HOME/.cache/hifa4/compare}
LBIN=$("$HERE/scripts/llama_build.sh" | tail -1)
RAW=$DATA/wikitext2/raw/wiki.test.raw
[ -f "$RAW" ] || { echo "llama_compare: $RAW not found (DATA_DIR)" >&2; exit 1; }
MODELS=${MODELS:-smollm2-135m gemma3-270m}
TYPES=${TYPES:-F32 BF16}
mkdir -p "$OUT"
for M in $MODELS; do
    case $M in
    smollm2-135m) src=${SMOLLM2_GGUF:-$("$HERE/scripts/fetch_smollm2.sh" | tail -1)} ;;
    gemma3-270m) src=${GEMMA3_GGUF:-$("$HERE/scripts/fetch_gemma3.sh" | tail -1)} ;;
    *) echo "llama_compare: unknown model '$M' (smollm2-135m, gemma3-270m)" >&2; exit 1 ;;
    esac
    for T in $TYPES; do
        t=$(echo "$T" | tr 'A-Z' 'a-z')
        [ -f "$OUT/$M.$T.gguf" ] ||
            "$LBIN/llama-quantize" --allow-requantize "$src" "$OUT/$M.$T.gguf" "$T" >/dev/null 2>&1
        [ -f "$OUT/$M-hifa4-$t/config.json" ] ||
            "$BIN" import-gguf "$OUT/$M.$T.gguf" --out "$OUT/$M-hifa4-$t" --dtype "$t" >/dev/null
        sv=$(python3 "$HERE/scripts/gguf_same_values.py" "$OUT/$M.$T.gguf" "$OUT/$M-hifa4-$t") ||
            { echo "llama_compare: $M $T: the import does not hold the GGUF's values: $sv" >&2; exit 1; }
        echo "# same values, $M $T: $(echo "$sv" | tr '\n' ' ')"
    done
done
# our_ppl SUMMARY.json: the perplexity of the run's (first) mode, 4 decimals
our_ppl() {
    python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tasks"]["ppl"]["modes"]; print("%.4f" % next(iter(t.values()))["ppl"])' "$1"
}
# the definition check: under PPL_SCORE=second-half, binary32 activations and attention, our
# perplexity of the same bytes (--task-file: llama-perplexity reads the file as it is) must be
# llama-perplexity's within float rounding (printed; 4 x 512 windows, both GGUFs)
if [ "${PPL_SCORE:-second-half}" = second-half ]; then
    for M in $MODELS; do
        for T in $TYPES; do
            t=$(echo "$T" | tr 'A-Z' 'a-z')
            o=$(mktemp -d)
            "$BIN" run --model "$OUT/$M-hifa4-$t" --task ppl --task-file "$RAW" --ppl-ctx 512 --limit 4 --attn f32 --act f32 \
                --ppl-score second-half --threads 2 --out "$o/r" >/dev/null 2>&1
            ours=$(our_ppl "$o/r/summary.json")
            theirs=$("$LBIN/llama-perplexity" -m "$OUT/$M.$T.gguf" -f "$RAW" -c 512 -b 512 --chunks 4 -t 2 2>&1 |
                sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p')
            echo "# definition check, $M $T, 4 x 512, --attn f32 --act f32: hifa4 ppl $ours, llama-perplexity $theirs"
            rm -rf "$o"
        done
    done
fi
LOG=$OUT/compare.log
: >"$LOG"
# run NAME CMD...: appends "NAME user+sys wall" to the log
run() {
    name=$1
    shift
    /usr/bin/time -f "%U %S %e" -o "$OUT/time.txt" "$@" >"$OUT/last.out" 2>&1 ||
        { tail -5 "$OUT/last.out" >&2; exit 1; }
    read -r u s w <"$OUT/time.txt"
    # the perplexity each program reports (the same definition under PPL_SCORE=second-half)
    ppl=$(sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p' "$OUT/last.out")
    [ -n "$ppl" ] || ppl=$(our_ppl "$SUMMARY" 2>/dev/null || echo "?")
    line=$(awk -v n="$name" -v u="$u" -v s="$s" -v w="$w" -v p="$ppl" 'BEGIN { printf "%s cpu %.2f wall %.2f ppl %s", n, u + s, w, p }')
    echo "$line" | tee -a "$LOG"
}
for r in $(seq 1 "$REPS"); do
    for M in $MODELS; do
        for W in ${WINDOWS:-512x4 2048x1}; do
            ctx=${W%x*} n=${W#*x}
            for th in ${THREADS:-1 2}; do
                for T in $TYPES; do
                    t=$(echo "$T" | tr 'A-Z' 'a-z')
                    wms=f32
                    [ "$T" = BF16 ] && wms="f32 bf16"
                    for wm in $wms; do
                        o=$(mktemp -d)
                        SUMMARY=$o/r/summary.json
                        run "hifa4-w$wm $M $T ctx=$ctx n=$n t=$th" "$BIN" run --model "$OUT/$M-hifa4-$t" --task ppl \
                            --ppl-ctx "$ctx" --limit "$n" --attn "${ATTN:-bf16}" --threads "$th" --weights "$wm" \
                            --ppl-score "${PPL_SCORE:-second-half}" --task-file "$RAW" --out "$o/r"
                        rm -rf "$o"
                    done
                    SUMMARY=/nonexistent
                    run "llama $M $T ctx=$ctx n=$n t=$th" "$LBIN/llama-perplexity" -m "$OUT/$M.$T.gguf" -f "$RAW" \
                        -c "$ctx" -b "$ctx" --chunks "$n" -t "$th"
                done
            done
        done
    done
done
echo "# best of $REPS (CPU seconds = user + sys of the whole process; load average $(cut -d' ' -f1-3 /proc/loadavg))"
# the table: one row per model, GGUF, window and thread count; ours / llama.cpp BF16 where it exists
echo "| model | GGUF | window | threads | hifa4 --weights f32 | hifa4 --weights bf16 | llama.cpp | f32 / llama | bf16 / llama | ppl hifa4 f32 / llama |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---|"
awk '{ k = $2 " " $3 " " $4 " " $5 " " $6; c = $8; p = $1
       if (!((p, k) in b) || c < b[p, k]) b[p, k] = c; keys[k] = 1; q[p, k] = $12 }
     END {
       for (k in keys) {
         split(k, f, " "); sub("ctx=", "", f[3]); sub("n=", "", f[4]); sub("t=", "", f[5])
         a = b["hifa4-wf32", k]; d = (("hifa4-wbf16", k) in b) ? b["hifa4-wbf16", k] : ""; l = b["llama", k]
         printf "| %s | %s | %d x %s | %s | %.2f | %s | %.2f | %.2f | %s | %s / %s |\n", f[1], f[2], f[4], f[3], f[5], a,
                d == "" ? "-" : sprintf("%.2f", d), l, a / l, d == "" ? "-" : sprintf("%.2f", d / l), q["hifa4-wf32", k], q["llama", k]
       }
     }' "$LOG" | sort
