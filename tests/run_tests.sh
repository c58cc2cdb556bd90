#!/usr/bin/env bash
# Runs every test binary given on the command line from the repository root, adds up their
# "N passed, M failed" lines and ends with the total line CI reads. A binary that crashes or
# exits non-zero without printing a count counts as one failure. Lines a binary prints as
# "# ..." (TEST_PROGRESS in tests/test.h) are shown while it runs: the long ones report their
# steps instead of staying silent for minutes.
set -u
total_p=0; total_f=0
log=$(mktemp "${TMPDIR:-/tmp}/run_tests.XXXXXX")
trap 'rm -f "$log"' EXIT
for t in "$@"; do
    name=$(basename "$t")
    start=$(date +%s%N)
    { "$t" 2>&1; echo "__exit=$?"; } | tee "$log" | grep --line-buffered '^# ' | sed -u "s/^# /  $name: /"
    rc=$(sed -n 's/^__exit=//p' "$log" | tail -1); rc=${rc:-1}
    out=$(grep -v '^__exit=' "$log")
    dur=$(( ($(date +%s%N) - start) / 1000000 ))
    line=$(printf '%s\n' "$out" | grep -E '^[A-Za-z0-9_]+: [0-9]+ passed, [0-9]+ failed$' | tail -1)
    if [ -n "$line" ]; then
        p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
        f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
    else
        p=0; f=0
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    if [ "$f" -ne 0 ]; then
        printf '%s\n' "$out" | tail -40
        printf '%-28s FAILED (%s passed, %s failed, exit %s, %sms)\n' "$name" "$p" "$f" "$rc" "$dur"
    else
        printf '%-28s ok (%s checks, %sms)\n' "$name" "$p" "$dur"
    fi
    total_p=$((total_p + p)); total_f=$((total_f + f))
done
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
