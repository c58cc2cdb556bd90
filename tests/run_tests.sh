#!/usr/bin/env bash
# Runs every test binary given on the command line from the repository root, adds up their
# "N passed, M failed[, K skipped]" lines and ends with the total line CI reads:
# "N passed, M failed, K skipped". A binary that crashes or exits non-zero without printing a
# count counts as one failure. Each binary's "SKIP <function>: <reason>" lines (test.h) are
# listed under its result, one line per distinct reason (missing files grouped by data root).
# Each test is named when it starts (several run for a minute or more), and lines a binary
# prints as "# ..." (TEST_PROGRESS in tests/test.h) are shown while it runs: the long ones
# report their steps instead of staying silent for minutes.
set -u
total_p=0; total_f=0; total_s=0
re='^[A-Za-z0-9_]+: [0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$'
log=$(mktemp "${TMPDIR:-/tmp}/run_tests.XXXXXX")
trap 'rm -f "$log"' EXIT
for t in "$@"; do
    name=$(basename "$t")
    start=$(date +%s%N)
    printf '%-28s started %s\n' "$name" "$(date +%H:%M:%S)" # a long test is named while it runs, not only at its end
    { "$t" 2>&1; echo "__exit=$?"; } | tee "$log" | grep --line-buffered '^# ' | sed -u "s/^# /  $name: /"
    rc=$(sed -n 's/^__exit=//p' "$log" | tail -1); rc=${rc:-1}
    out=$(grep -v '^__exit=' "$log")
    dur=$(( ($(date +%s%N) - start) / 1000000 ))
    line=$(printf '%s\n' "$out" | grep -E "$re" | tail -1)
    p=0; f=0; s=0
    if [ -n "$line" ]; then
        p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, .*/\1/')
        f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
        case "$line" in *skipped) s=$(echo "$line" | sed -E 's/.* ([0-9]+) skipped$/\1/') ;; esac
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    sk=""; [ "$s" -ne 0 ] && sk=", $s skipped"
    if [ "$f" -ne 0 ]; then
        printf '%s\n' "$out" | tail -40
        printf '%-28s FAILED (%s passed, %s failed%s, exit %s, %sms)\n' "$name" "$p" "$f" "$sk" "$rc" "$dur"
    else
        printf '%-28s ok (%s checks%s, %sms)\n' "$name" "$p" "$sk" "$dur"
    fi
    printf '%s\n' "$out" | awk '
        /^SKIP [^ :]+: / {
            fn = $2; sub(/:$/, "", fn); r = $0; sub(/^SKIP [^ :]+: /, "", r)
            if (!(r in who)) { who[r] = fn; order[++n] = r }
            else if (index(", " who[r] ", ", ", " fn ", ") == 0) who[r] = who[r] ", " fn
        }
        END {
            # TEST_NEED reasons ("<rel>: no such file under HIFA4_TEST_DATA=<root>") grouped by root
            for (i = 1; i <= n; i++) {
                r = order[i]; k = index(r, ": no such file under ")
                if (k) {
                    root = substr(r, k + 21)
                    if (!(root in seen)) { seen[root] = 1; printf "    skipped, no such file under %s:\n", root }
                    printf "      %s [%s]\n", substr(r, 1, k - 1), who[r]
                }
            }
            for (i = 1; i <= n; i++)
                if (!index(order[i], ": no such file under ")) printf "    skipped: %s [%s]\n", order[i], who[order[i]]
        }'
    total_p=$((total_p + p)); total_f=$((total_f + f)); total_s=$((total_s + s))
done
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
