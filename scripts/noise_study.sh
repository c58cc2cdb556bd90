#!/usr/bin/env bash
# noise_study.sh [STUDY_DIR] [BIN]: prints report.md's "How much is noise" section of every
# finished task run of the noise study (STUDY_DIR/{arc_easy,arc_challenge,hellaswag}, made by
# the `run --replicas 4` commands of docs/results/noise.md), for that page. A task whose run has not finished is named and skipped.
set -uo pipefail
D=${1:?usage: scripts/noise_study.sh STUDY_DIR [BIN]}
BIN=${2:-./build/hifa4-eval}
for t in arc_easy arc_challenge hellaswag; do
    echo "## $t"
    if ! "$BIN" report "$D/$t" >/dev/null 2>&1 || [ ! -f "$D/$t/report.md" ]; then
        echo "(not finished: $D/$t)"; echo; continue
    fi
    sed -n '/^### How much is noise/,/^## /p' "$D/$t/report.md" | sed '$!b;/^## /d'
    echo
done
