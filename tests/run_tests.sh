#!/usr/bin/env bash
# Runs every test binary given on the command line from the repository root, adds up their
# "N passed, M failed" lines and ends with the total line CI reads. A binary that crashes or
# exits non-zero without printing a count counts as one failure.
set -u
total_p=0; total_f=0
for t in "$@"; do
    name=$(basename "$t")
    start=$(date +%s%N)
    out=$("$t" 2>&1); rc=$?
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
