#!/bin/sh
# llama_logits.sh: a second, independent check of the Gemma 3 270M logits
# (docs/results/gemma3_refs.md "llama.cpp"): the same Q4_K_M file and the same token ids (the three
# WikiText-2 prompts of tests/data/gemma3/logits.json, 119, 222 and 625 tokens) through llama.cpp
# and through `hifa4-eval logits --attn exact --act f32`, full logits compared at every position
# (scripts/llama_logits.c compare: rel-L2, argmax agreement, max |d|, log-sum-exp).
# llama.cpp variants:
#   q4km-default   the file as llama.cpp runs it by default: F16 KV cache, flash attention auto
#   q4km-f32kv     F32 KV cache, no flash attention: what is left is llama.cpp quantizing the
#                  activations to Q8_0 / Q8_K for every Q4_K/Q5_0/Q6_K/Q8_0 matrix product
#   f32w-f32kv     the file requantized to F32 by llama-quantize (ggml's own dequantizers) and
#                  F32 KV cache, no flash attention: every activation binary32, but GELU by
#                  ggml's fp16 table (GGML_GELU_FP16)
#   f32w-nogelu    as f32w-f32kv with ggml-cpu rebuilt without GGML_GELU_FP16 (NOGELU=1 only;
#                  a patched copy of ggml-cpu compiled into $OUT, ~12 min on one core)
# and `hifa4-eval --act bf16` against `--act f32` (our own activation rounding, for scale).
# Never part of `make test`; needs scripts/llama_build.sh's build, python3 (ids from the JSON).
#   usage: scripts/llama_logits.sh     (env: OUT, default build/llama-logits; NOGELU=1; THREADS=2)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/build/llama-logits}
THREADS=${THREADS:-2}
mkdir -p "$OUT"
BIN=${HIFA4_BIN:-./hifa4-eval}
LBIN=$(sh scripts/llama_build.sh | tail -1)
LB=$(dirname "$LBIN")
LSRC=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$LB/CMakeCache.txt")
GGUF=$(bash scripts/fetch_gemma3.sh | tail -1)

link() { # link OUTPUT CPU_LIB
    cc -O2 -Wall -std=c11 -D_GNU_SOURCE -I"$LSRC/include" -I"$LSRC/ggml/include" scripts/llama_logits.c -o "$1" \
        "$LB/src/libllama.a" "$LB/ggml/src/libggml.a" "$2" "$LB/ggml/src/libggml-base.a" -lstdc++ -fopenmp -lpthread -lm
}
TOOL=$OUT/llama_logits
[ "$TOOL" -nt scripts/llama_logits.c ] || link "$TOOL" "$LB/ggml/src/libggml-cpu.a"

F32=$OUT/gemma3-270m-f32.gguf
[ -f "$F32" ] || "$LBIN/llama-quantize" --allow-requantize "$GGUF" "$F32" F32 >"$OUT/quantize.log" 2>&1

if [ "${NOGELU:-0}" = 1 ] && [ ! -x "$OUT/llama_logits_nogelu" ]; then
    NG=$OUT/nogelu
    rm -rf "$NG" && mkdir -p "$NG" && cp -r "$LSRC/ggml/src/ggml-cpu" "$NG/"
    sed -i 's|^#define GGML_GELU_FP16|// GGML_GELU_FP16 off: binary32 GELU|' "$NG/ggml-cpu/vec.h"
    python3 - "$LB" "$LSRC/ggml/src/ggml-cpu" "$NG" <<'PY'
import json, shlex, subprocess, sys
build, src, ng = sys.argv[1:]
objs = []
for i, x in enumerate(json.load(open(build + "/compile_commands.json"))):
    if "/ggml-cpu/" not in x["file"]:
        continue
    a = shlex.split(x["command"].replace(src, ng + "/ggml-cpu"))
    a[a.index("-o") + 1] = "%s/obj%02d.o" % (ng, i)
    objs.append(a[a.index("-o") + 1])
    subprocess.run(a, cwd=x["directory"], check=True)
subprocess.run(["ar", "rcs", ng + "/libggml-cpu.a"] + objs, check=True)
PY
    link "$OUT/llama_logits_nogelu" "$NG/libggml-cpu.a"
fi

for p in dufu_intro dufu_early boulter_career; do
    python3 - "$p" >"$OUT/ids_$p.txt" <<'PY'
import json, sys
for q in json.load(open("tests/data/gemma3/logits.json"))["prompts"]:
    if q["name"] == sys.argv[1]:
        print(",".join(map(str, q["ids"])))
PY
    ids=$(cat "$OUT/ids_$p.txt")
    for act in f32 bf16; do
        "$BIN" --quiet logits --model "$GGUF" --ids "$ids" --attn exact --act $act --threads "$THREADS" \
            --out "$OUT/ours_${p}_$act.safetensors" >/dev/null
    done
    run() { # run NAME TOOL FILE KV FA
        "$2" run "$3" "$OUT/ids_$p.txt" "$OUT/ll.f32" --kv "$4" --fa "$5" --threads "$THREADS" 2>/dev/null
        printf '%-15s %-14s ' "$p" "$1"
        "$TOOL" compare "$OUT/ours_${p}_f32.safetensors" "$OUT/ll.f32"
    }
    run q4km-default "$TOOL" "$GGUF" f16 auto
    run q4km-f32kv "$TOOL" "$GGUF" f32 off
    run f32w-f32kv "$TOOL" "$F32" f32 off
    [ ! -x "$OUT/llama_logits_nogelu" ] || run f32w-nogelu "$OUT/llama_logits_nogelu" "$F32" f32 off
    printf '%-15s %-14s ' "$p" ours-act-bf16
    "$TOOL" compare "$OUT/ours_${p}_f32.safetensors" "$OUT/ours_${p}_bf16.safetensors"
    rm -f "$OUT/ll.f32"
done
