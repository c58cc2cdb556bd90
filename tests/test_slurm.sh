#!/usr/bin/env bash
# test_slurm.sh: a real Slurm (Debian's slurm-wlm + munge), not a mock: scripts/slurm_local.sh
# starts munged, slurmctld and slurmd on localhost as a one-node cluster under $HIFA4_TMP, then
#   - a 3-task array job (sbatch --wait --array=0-2) of `run --shard auto` and a `merge` of its
#     three directories, and
#   - an MPI job `srun --mpi=pmix -n 3` of the MPI build (make MPI=1)
# must each give the samples files and summary.json of the single-process run byte for byte.
# Skipped with the reason where Slurm cannot start here (not root, slurm-wlm or munge missing,
# a daemon that does not come up); the srun part also needs the MPI build.
set -u
cd "$(dirname "$0")/.."
BIN=$(realpath "${HIFA4_BIN:-./hifa4-eval}")
MBIN=${HIFA4_MPI_BIN:-build-mpi/hifa4-eval}
TMP=$(mkdir -p "${HIFA4_TMP:-build/tmp}/slurm" && realpath "${HIFA4_TMP:-build/tmp}/slurm")
pass=0; fail=0; skipped=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
finish() {
    scripts/slurm_local.sh stop "$TMP/cluster" >/dev/null 2>&1
    local sk=""; [ $skipped -gt 0 ] && sk=", $skipped skipped"
    echo "test_slurm: $pass passed, $fail failed$sk"; [ $fail -eq 0 ]; exit $?
}
skip() { echo "SKIP test_slurm: $*"; skipped=$((skipped + 1)); finish; }
[ -d /usr/share/hamexam ] || [ -d /usr/share/fccexam ] || skip "the exam pools (Debian hamexam, fccexam) are not installed"
rm -rf "$TMP"/run* "$TMP"/model
"$BIN" --quiet make-model --arch llama --layers 2 --dim 192 --heads 3 --kv-heads 1 --head-dim 64 --ffn 512 --seed 11 \
    --out "$TMP/model" >/dev/null || bad "make-model"
ARGS="--model $TMP/model --task exam --limit 90 --attn bf16,direct --threads 1"
"$BIN" --quiet run $ARGS --out "$TMP/run-one" >/dev/null || bad "the single-process run"

conf=$(scripts/slurm_local.sh start "$TMP/cluster" 2>"$TMP/start.err") || skip "Slurm cannot start here: $(cat "$TMP/start.err")"
export SLURM_CONF=$conf
same() { # DIR: samples and summary equal to the single-process run's
    local f n=0
    for f in "$TMP"/run-one/samples-* "$TMP"/run-one/summary.json; do
        cmp -s "$f" "$1/$(basename "$f")" || { bad "$1/$(basename "$f") differs from $f"; return; }
        n=$((n + 1))
    done
    [ $n -ge 3 ] && ok || bad "only $n files compared"
}

# an array job: each task scores its shard (--shard auto), then merge
cat > "$TMP/array.sh" <<EOF
#!/bin/bash
exec "$BIN" --quiet run $ARGS --shard auto --out "$TMP/run-shard-\$SLURM_ARRAY_TASK_ID"
EOF
chmod +x "$TMP/array.sh"
if timeout 600 sbatch --wait --quiet --array=0-2 -o "$TMP/array-%a.log" "$TMP/array.sh" >/dev/null; then
    ok
    "$BIN" --quiet merge "$TMP"/run-shard-0 "$TMP"/run-shard-1 "$TMP"/run-shard-2 --out "$TMP/run-merged" >/dev/null \
        && same "$TMP/run-merged" || bad "merge of the array's shards"
    tr -d ' \t\n' < "$TMP/run-shard-1/run.json" | grep -q '"shard":{"k":1,"n":3}' && ok ||
        bad "array task 1 did not take shard 1/3"
else
    bad "the array job failed: $(cat "$TMP"/array-*.log 2>/dev/null | tail -5)"
fi
# --shard auto outside an array job names what is missing
out=$(env -u SLURM_ARRAY_TASK_ID "$BIN" run $ARGS --shard auto --out "$TMP/run-x" 2>&1)
case "$out" in *SLURM_ARRAY_TASK_ID*) ok ;; *) bad "--shard auto without Slurm said: $out" ;; esac

# an MPI job through srun (pmix)
if [ -x "$MBIN" ]; then
    if timeout 600 srun --mpi=pmix -n 3 "$MBIN" --quiet run $ARGS --out "$TMP/run-srun" >/dev/null 2>"$TMP/srun.log"; then
        same "$TMP/run-srun"
        grep -Eq '"ranks":[[:space:]]+3,' "$TMP/run-srun/run.json" && ok || bad "run.json of the srun job does not record 3 ranks"
    else
        bad "srun -n 3 failed: $(tail -5 "$TMP/srun.log")"
    fi
else
    echo "SKIP test_slurm: no MPI build at $MBIN (make MPI=1): the srun job is not run"
    skipped=$((skipped + 1))
fi
finish
