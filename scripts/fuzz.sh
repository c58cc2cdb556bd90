#!/usr/bin/env bash
# fuzz.sh: runs libFuzzer targets (built by `make fuzz`) for a bounded time each and reports
# executions and findings. Usage: scripts/fuzz.sh build-fuzz/fuzz/fuzz_<name>...
# Environment: FUZZ_SECONDS (per target and invocation, default 20), FUZZ_NICE (default 19: the
# machine is shared), FUZZ_BUILD (default build-fuzz), HIFA4_BIN (to make synthetic seeds).
#
# Seeds come from the target's source: lines `// fuzz-seeds: GLOB...` (paths from the
# repository root: ../shared, tests/data, datasets/, and build/fuzz-seeds/<kind>/ made here
# with hifa4-eval from ../shared's stories260K) are copied into $FUZZ_BUILD/seeds/<name>/ (never
# committed: some are third-party), .zst files decompressed, each cut to the target's
# `// fuzz-max-len: N` at a line boundary. The committed regression inputs tests/data/fuzz/<name>/
# are a seed directory too. The corpus $FUZZ_BUILD/corpus/<name>/ persists, so repeated runs
# continue a campaign; every run appends a line to $FUZZ_BUILD/stats/<name>.tsv (date, seconds,
# executions, corpus size, findings) and the summary shows this run and the total.
# A finding is saved as $FUZZ_BUILD/crashes/<name>/{crash,leak,timeout,oom}-<sha1>; minimize it
# (the target binary with -minimize_crash=1 -runs=10000 FILE), commit it under
# tests/data/fuzz/<name>/ once fixed: `make test` replays it from then on.
set -u
cd "$(dirname "$0")/.."
SECONDS_PER=${FUZZ_SECONDS:-20}
NICE=${FUZZ_NICE:-19}
FB=${FUZZ_BUILD:-build-fuzz}
BIN=${HIFA4_BIN:-./hifa4-eval}
mkdir -p "$FB/seeds" "$FB/corpus" "$FB/crashes" "$FB/stats" "$FB/logs"

# ---- synthetic seeds made with our own tool (checkpoint, tokenizer, scales, samples) ----
make_seeds() {
    local s=build/fuzz-seeds
    [ -f "$s/.done" ] && return 0
    [ -x "$BIN" ] || { echo "fuzz.sh: $BIN not built; synthetic seeds skipped" >&2; return 0; }
    rm -rf "$s"; mkdir -p "$s"/{safetensors,scales,config,tokenizer,samples}
    local m="$s/model" sh=../shared/models/stories260K
    "$BIN" --quiet make-model --arch qwen3 --layers 1 --dim 32 --heads 2 --kv-heads 1 --head-dim 16 --ffn 64 \
        --vocab 300 --out "$m" >/dev/null 2>&1 || "$BIN" --quiet make-model --arch qwen3 --layers 1 --dim 32 --heads 2 \
        --kv-heads 1 --ffn 64 --out "$m" >/dev/null 2>&1
    for a in llama gemma2 phi3 mistral qwen2; do
        "$BIN" --quiet make-model --arch $a --config-only --out "$s/cfg-$a" >/dev/null 2>&1 &&
            cp "$s/cfg-$a/config.json" "$s/config/$a.json"
    done
    if [ -f "$m/model.safetensors" ]; then
        cp "$m/config.json" "$s/config/qwen3.json"
        cp "$m/model.safetensors" "$s/safetensors/tiny.safetensors"
        [ -f "$m/tokenizer.json" ] && cp "$m/tokenizer.json" "$s/tokenizer/make-model.json"
        printf 'Some text to calibrate on. The quick brown fox jumps over the lazy dog.\n%.0s' $(seq 40) >"$s/calib.txt"
        "$BIN" --quiet calibrate --model "$m" --calib "$s/calib.txt" --calib-samples 2 --calib-len 32 --threads 1 \
            --out "$s/scales/tiny.safetensors" >/dev/null 2>&1
        printf '{"question": "Pick one.", "choices": ["a", "b", "c"], "answer": 1}\n%.0s' $(seq 70) >"$s/mc.jsonl"
        "$BIN" --quiet run --model "$m" --task mc_jsonl --task-file "$s/mc.jsonl" --attn f32,bf16 --threads 1 \
            --out "$s/run" >/dev/null 2>&1
        for f in "$s"/run/samples-*.zst; do [ -f "$f" ] && cp "$f" "$s/samples/" && zstd -qdc "$f" >"$s/samples/$(basename "$f" .zst)"; done
    fi
    if [ -f "$sh/stories260K.bin" ]; then
        "$BIN" --quiet import-llama2c "$sh/stories260K.bin" "$sh/tok512.bin" --out "$s/s260k" >/dev/null 2>&1 &&
            cp "$s/s260k/tokenizer.json" "$s/tokenizer/stories260K.json" &&
            cp "$s/s260k/config.json" "$s/config/stories260K.json"
    fi
    touch "$s/.done"
}

# ---- seeds of one target ----
prep_seeds() { # name src maxlen
    local name=$1 src=$2 maxlen=$3 dir="$FB/seeds/$1" i=0
    rm -rf "$dir"; mkdir -p "$dir"
    local globs
    globs=$(sed -n 's#^// fuzz-seeds:##p' "$src")
    for g in $globs; do
        for f in $g; do
            [ -f "$f" ] || continue
            i=$((i + 1))
            local base
            base=$(basename "$f"); base=${base//[^A-Za-z0-9._-]/_}
            local out="$dir/seed-$i-$base"
            case "$f" in
                *.zst) [ -n "$(sed -n 's#^// fuzz-keep-zst##p' "$src")" ] && cp "$f" "$out" || zstd -qdc "$f" >"$out" ;;
                *) cp "$f" "$out" ;;
            esac
            # cut at the last newline before maxlen (libFuzzer would cut anywhere)
            if [ "$(stat -c %s "$out")" -gt "$maxlen" ]; then
                head -c "$maxlen" "$out" >"$out.cut"
                if grep -q . "$out.cut" && [ "$(tail -c 1 "$out.cut" | od -An -c | tr -d ' ')" != '\n' ]; then
                    awk -v RS='\n' 'BEGIN{ORS="\n"} {l[NR]=$0} END{for(k=1;k<NR;k++) print l[k]}' "$out.cut" >"$out" 2>/dev/null ||
                        mv "$out.cut" "$out"
                else
                    mv "$out.cut" "$out"
                fi
                rm -f "$out.cut"
            fi
        done
    done
    echo "$i"
}

make_seeds
printf '%-20s %8s %12s %12s %8s %9s  %s\n' target seconds "execs(run)" "execs(total)" corpus findings "new findings"
total_new=0
for bin in "$@"; do
    name=$(basename "$bin"); name=${name#fuzz_}
    src="tests/fuzz/fuzz_$name.c"
    [ -x "$bin" ] || { echo "fuzz.sh: $bin not built" >&2; total_new=$((total_new + 1)); continue; }
    maxlen=$(sed -n 's#^// fuzz-max-len: *##p' "$src" | head -1); maxlen=${maxlen:-16384}
    nseeds=$(prep_seeds "$name" "$src" "$maxlen")
    mkdir -p "$FB/corpus/$name" "$FB/crashes/$name"
    dict=(); [ -f "tests/fuzz/fuzz_$name.dict" ] && dict=(-dict="tests/fuzz/fuzz_$name.dict")
    regress=(); [ -d "tests/data/fuzz/$name" ] && regress=("tests/data/fuzz/$name")
    before=$(ls "$FB/crashes/$name" | wc -l)
    log="$FB/logs/$name.log"
    start=$(date +%s)
    # -fork=0, one process: the shared machine's cores stay mostly free; -timeout: a slow input is
    # a finding (a hostile file must not hang a command); -rss_limit_mb: so is a 2 GB allocation
    # the targets' scratch files (fuzz.h) go under a directory removed after the run, even when
    # the target ended on a crash (atexit does not run then)
    scratch=$( [ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}" )/hifa4-fuzz-run-$$-$name
    mkdir -p "$scratch"
    FUZZ_TMP=$scratch \
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        nice -n "$NICE" "$bin" -max_total_time="$SECONDS_PER" -max_len="$maxlen" -timeout=25 -rss_limit_mb=2048 \
        -print_final_stats=1 -ignore_crashes=0 -artifact_prefix="$FB/crashes/$name/" "${dict[@]}" \
        "$FB/corpus/$name" "$FB/seeds/$name" "${regress[@]}" >"$log" 2>&1
    rm -rf "$scratch"
    took=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1); execs=${execs:-0}
    corpus=$(ls "$FB/corpus/$name" | wc -l)
    after=$(ls "$FB/crashes/$name" | wc -l)
    new=$((after - before))
    printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$took" "$execs" "$corpus" "$new" >>"$FB/stats/$name.tsv"
    total=$(awk -F'\t' '{s += $3} END {print s + 0}' "$FB/stats/$name.tsv")
    printf '%-20s %8s %12s %12s %8s %9s  %s\n' "$name" "$took" "$execs" "$total" "$corpus" "$after" \
        "$( [ $new -gt 0 ] && ls -t "$FB/crashes/$name" | head -"$new" | tr '\n' ' ' )"
    [ $new -gt 0 ] && grep -m3 -E 'ERROR|SUMMARY|runtime error' "$log" | sed 's/^/    /'
    total_new=$((total_new + new))
    : "$nseeds"
done
echo "fuzz: $total_new new findings (logs in $FB/logs/, inputs in $FB/crashes/<target>/)"
[ "$total_new" -eq 0 ]
