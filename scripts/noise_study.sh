#!/usr/bin/env bash
# noise_study.sh [STUDY_DIR] [BIN]: prints report.md's "How much is noise" section of every
# finished task run of the issue-21 study (default /work/study/noise/{arc_easy,arc_challenge,
# hellaswag}), for docs/results/noise.md. A task whose run has not finished is named and skipped.
set -uo pipefail
D=${1:-/work/study/noise}
BIN=${2:-./build/hifa4-eval}
for t in arc_easy arc_challenge hellaswag; do
    echo "## $t"
    if ! "$BIN" report "$D/$t" >/dev/null 2>&1 || [ ! -f "$D/$t/report.md" ]; then
        echo "(not finished: $D/$t)"; echo; continue
    fi
    sed -n '/^### How much is noise/,/^## /p' "$D/$t/report.md" | sed '$!b;/^## /d'
    echo
done
