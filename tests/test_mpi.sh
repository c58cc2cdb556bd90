#!/usr/bin/env bash
# test_mpi.sh: runs under MPI against one process, byte for byte. Needs the MPI
# build (make MPI=1: build-mpi/hifa4-eval, or $HIFA4_MPI_BIN) and mpirun; skipped with the
# reason where either is missing. On a SmolLM2-shaped synthetic model (llama, hidden 576, 9
# heads / 3 KV heads of 64, FFN 1536, 2 layers), two tasks - exam (options share their
# question: the prefix cache) and ppl over GPL-3 - under bf16, direct, hifa4:
#   - mpirun --oversubscribe -n 1/2/3/5: samples files, summary.json, tables/ and plots/ equal
#     one process's; report.md too but for the lines that describe the execution (the created
#     line and the "Forward time per mode" section: seconds and positions the prefix cache
#     computed depend on how items were cut into work units);
#   - a worker rank frozen after a known number of its items (HIFA4_STOP_RANK=1,
#     HIFA4_STOP_AFTER_ITEMS, HIFA4_FREEZE_AT_STOP) and SIGKILLed: the job ends, the directory
#     stays incomplete, and --resume under one plain process, and again under -n 2, ends equal;
#   - calibrate -n 3 on a planted-outlier Qwen3 model: the same scales file bytes and gate table;
#   - a shard of zero items (--shard 0/5 of 3 items) and more ranks than items (-n 5, 3 items);
#   - --replicas 2 under -n 2: every replica's samples file and summary.json equal one process's.
set -u
cd "$(dirname "$0")/.."
BIN=${HIFA4_BIN:-./hifa4-eval}
MBIN=${HIFA4_MPI_BIN:-build-mpi/hifa4-eval}
TMP=${HIFA4_TMP:-build/tmp}/mpi
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
finish() { echo "test_mpi: $pass passed, $fail failed${1:+, $1 skipped}"; [ $fail -eq 0 ]; exit $?; }
skip() { echo "SKIP test_mpi: $*"; finish 1; }

[ -x "$MBIN" ] || skip "no MPI build at $MBIN (make MPI=1; Debian: openmpi-bin libopenmpi-dev)"
command -v mpirun >/dev/null || skip "mpirun is not installed (Debian: openmpi-bin)"
"$MBIN" --version | grep -q 'MPI: yes' && ok || bad "$MBIN --version does not say MPI: yes"
"$BIN" --version | grep -q 'MPI: no' && ok || bad "$BIN --version does not say MPI: no"
[ -d /usr/share/hamexam ] || [ -d /usr/share/fccexam ] || skip "the exam pools (Debian hamexam, fccexam) are not installed"
GPL=/usr/share/common-licenses/GPL-3
[ -f $GPL ] || skip "$GPL is missing"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
MPIRUN="mpirun --oversubscribe"
rm -rf "$TMP"; mkdir -p "$TMP"

"$BIN" --quiet make-model --arch llama --layers 2 --dim 576 --heads 9 --kv-heads 3 --head-dim 64 --ffn 1536 --seed 5 \
    --out "$TMP/model" >/dev/null || bad "make-model"
"$BIN" --quiet calibrate --model "$TMP/model" --calib $GPL --calib-samples 8 --calib-len 128 --threads 1 \
    --out "$TMP/scales.safetensors" >/dev/null || bad "calibrate"
# ppl reads WikiText-2 from a data root: GPL-3 stands in for it there
mkdir -p "$TMP/data/wikitext2/raw" && cp $GPL "$TMP/data/wikitext2/raw/wiki.test.raw"
ARGS="--model $TMP/model --task exam,ppl --data-dir $TMP/data --limit 100 --ppl-ctx 128 --attn bf16,direct,hifa4
      --scales $TMP/scales.safetensors --threads 1"
"$BIN" --quiet run $ARGS --out "$TMP/one" >/dev/null || bad "the single-process run"

# report.md without the lines that describe the execution
strip_report() { awk '/^- created /{next} /^### /{skip = ($0 ~ /^### Forward time per mode/)} !skip' "$1"; }
same_run() { # DIR: every result file equal to the single-process run's
    local d=$1 n=0 f
    # plots/ only where the report draws one (the margins plot needs 30 items every mode answers
    # correctly): the same set of files on both sides, each equal
    [ "$(ls "$TMP/one/plots" 2>/dev/null)" = "$(ls "$d/plots" 2>/dev/null)" ] || { bad "$d/plots holds other files"; return; }
    for f in "$TMP"/one/samples-* "$TMP"/one/summary.json "$TMP"/one/tables/* "$TMP"/one/plots/*; do
        [ -e "$f" ] || continue
        local g=$d/${f#"$TMP"/one/}
        cmp -s "$f" "$g" || { bad "$g differs from $f"; return; }
        n=$((n + 1))
    done
    cmp -s <(strip_report "$TMP/one/report.md") <(strip_report "$d/report.md") || { bad "$d/report.md differs"; return; }
    grep -Eq '"complete":[[:space:]]+true' "$d/run.json" || { bad "$d/run.json is not complete"; return; }
    ok
}

for n in 1 2 3 5; do
    $MPIRUN -n $n "$MBIN" --quiet run $ARGS --out "$TMP/n$n" >/dev/null 2>"$TMP/n$n.log" || bad "mpirun -n $n (see $TMP/n$n.log)"
    same_run "$TMP/n$n"
done
grep -Eq '"ranks":[[:space:]]+3,' "$TMP/n3/run.json" && ok || bad "run.json of -n 3 does not record 3 ranks"

# a worker SIGKILLed at a known point: freeze it where HIFA4_STOP_AFTER_ITEMS would end it
kill_run() { # DIR: a -n 3 job whose rank 1 is killed after 30 of its items
    HIFA4_STOP_RANK=1 HIFA4_STOP_AFTER_ITEMS=30 HIFA4_FREEZE_AT_STOP=1 \
        $MPIRUN -n 3 "$MBIN" --quiet run $ARGS --out "$1" >/dev/null 2>"$1.log" &
    local job=$! pid="" i
    for i in $(seq 600); do
        pid=$(ps -eo pid=,stat=,args= | awk -v d="$1" '$2 ~ /^T/ && index($0, d) {print $1; exit}')
        [ -n "$pid" ] && break
        sleep 0.1
    done
    [ -n "$pid" ] || { bad "rank 1 never froze (see $1.log)"; kill -9 $job 2>/dev/null; wait $job 2>/dev/null; return 1; }
    kill -9 "$pid"
    wait $job && bad "the job whose rank died exited 0" || ok
    grep -Eq '"complete":[[:space:]]+false' "$1/run.json" && ok || bad "$1/run.json is not marked incomplete after the kill"
}
if kill_run "$TMP/k1"; then
    "$BIN" --quiet run $ARGS --out "$TMP/k1" --resume >/dev/null 2>>"$TMP/k1.log" || bad "--resume in one process"
    same_run "$TMP/k1"
fi
if kill_run "$TMP/k2"; then
    $MPIRUN -n 2 "$MBIN" --quiet run $ARGS --out "$TMP/k2" --resume >/dev/null 2>>"$TMP/k2.log" || bad "--resume under -n 2"
    same_run "$TMP/k2"
fi

# calibrate over 3 ranks: the same scales bytes and gate table (a planted K outlier: Strong)
"$BIN" --quiet make-model --arch qwen3 --layers 2 --dim 128 --heads 4 --kv-heads 2 --head-dim 128 --ffn 256 --seed 7 \
    --plant-outlier 0:51:34 --out "$TMP/qwen" >/dev/null || bad "make-model qwen3"
CAL="calibrate --model $TMP/qwen --calib $GPL --calib-samples 24 --calib-len 128 --batch-tokens 512 --threads 1"
"$BIN" --quiet $CAL --out "$TMP/cal1.safetensors" >"$TMP/cal1.txt" || bad "calibrate, one process"
$MPIRUN -n 3 "$MBIN" --quiet $CAL --out "$TMP/cal3.safetensors" >"$TMP/cal3.txt" 2>"$TMP/cal3.log" || bad "calibrate -n 3"
cmp -s "$TMP/cal1.safetensors" "$TMP/cal3.safetensors" && ok || bad "calibrate -n 3 wrote other scales"
cmp -s <(grep -v '^scales:' "$TMP/cal1.txt") <(grep -v '^scales:' "$TMP/cal3.txt") && ok || bad "calibrate -n 3 printed another gate table"
grep -q strong "$TMP/cal1.txt" && ok || bad "the planted outlier did not give a Strong layer (the check would be trivial)"

# a shard of zero items, and more ranks than items
SMALL="--model $TMP/model --task exam --limit 3 --attn bf16,direct --threads 1"
"$BIN" --quiet run $SMALL --shard 0/5 --out "$TMP/z1" >/dev/null || bad "an empty shard, one process"
$MPIRUN -n 2 "$MBIN" --quiet run $SMALL --shard 0/5 --out "$TMP/z2" >/dev/null 2>&1 || bad "an empty shard, -n 2"
for f in "$TMP"/z1/samples-* "$TMP"/z1/summary.json; do cmp -s "$f" "$TMP/z2/${f#"$TMP"/z1/}" && ok || bad "empty shard: $f differs"; done
"$BIN" --quiet run $SMALL --out "$TMP/f1" >/dev/null || bad "3 items, one process"
$MPIRUN -n 5 "$MBIN" --quiet run $SMALL --out "$TMP/f5" >/dev/null 2>&1 || bad "3 items, -n 5"
for f in "$TMP"/f1/samples-* "$TMP"/f1/summary.json; do cmp -s "$f" "$TMP/f5/${f#"$TMP"/f1/}" && ok || bad "-n 5: $f differs"; done

# --replicas under MPI: every replica is one distributed pass; every replica's
# samples file and summary.json's noise statistics equal the single-process run's
REP="--model $TMP/model --task exam --limit 40 --attn bf16,direct --replicas 2 --threads 1"
"$BIN" --quiet run $REP --out "$TMP/r1" >/dev/null || bad "--replicas 2, one process"
$MPIRUN -n 2 "$MBIN" --quiet run $REP --out "$TMP/r2" >/dev/null 2>"$TMP/r2.log" || bad "--replicas 2, -n 2 (see $TMP/r2.log)"
nrep=$(ls "$TMP"/r1/samples-*_r[12].jsonl.zst 2>/dev/null | wc -l)
[ "$nrep" = 4 ] && ok || bad "--replicas 2 wrote $nrep replica files, not 4 (2 modes x 2 replicas)"
for f in "$TMP"/r1/samples-* "$TMP"/r1/summary.json; do cmp -s "$f" "$TMP/r2/${f#"$TMP"/r1/}" && ok || bad "--replicas under -n 2: $f differs"; done

# a usage error is reported once, by rank 0, and every rank ends normally
out=$($MPIRUN -n 3 "$MBIN" run $SMALL --batch-tokens 1 2>&1)
[ "$(printf '%s\n' "$out" | grep -c -- '--batch-tokens 1')" = 1 ] && ok || bad "a usage error under -n 3 printed: $out"
printf '%s\n' "$out" | grep -q MPI_ABORT && bad "a usage error aborted the job" || ok
finish
