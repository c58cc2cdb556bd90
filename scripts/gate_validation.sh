#!/usr/bin/env bash
# gate_validation.sh: the alpha sweeps of docs/results/gate.md ("Which rule is the default")
# from the committed run directories: per model and task, row D (Bypass, alpha 0) and row E at
# each swept alpha (0.1, 0.25, 0.5, 0.75, 1; an alpha not run is left out with a line saying
# so), with every E's token-KL ratio to D and alpha 0.5's ratio to each other alpha
# (scripts/formats_study.py: paired bootstrap over items). Run from the repository root; a model
# or task whose runs are not all complete (no summary.json) is skipped with a line saying so.
#   scripts/gate_validation.sh [MODEL ...]     MODEL: smollm2 gemma3 qwen0.5b qwen1.5b (default all)
set -euo pipefail
cd "$(dirname "$0")/.."

# the run holding rows D and E at alpha 0.5, and the directory pattern of the other alphas'
# runs (%t the task, %a the alpha) with their mode
runs() {
    case $1 in
    smollm2) echo "studies/gate/smollm2/%t-d-e0.5 studies/gate/smollm2/%t-e%a" ;;
    gemma3) echo "studies/gate/gemma3/%t-d-e0.5 studies/gate/gemma3/%t-e%a" ;;
    qwen0.5b) echo "studies/qwen25/0.5b/%t-ade studies/qwen25/0.5b/%t-e%a" ;;
    qwen1.5b) echo "studies/qwen25/1.5b/%t-ade studies/qwen25/1.5b/%t-e%a" ;;
    *) echo "gate_validation: unknown model '$1' (smollm2 gemma3 qwen0.5b qwen1.5b)" >&2; exit 2 ;;
    esac
}

one() { # model task
    local m=$1 t=$2 base pat labels=() pairs=() a d
    read -r base pat < <(runs "$m")
    base=${base//%t/$t}
    # the 1.5B's ARC-Challenge rows D and E are in a run of their own (no row A)
    case $base in *-ade) [ -d "$base" ] || base=${base%-ade}-de ;; esac
    if [ ! -f "$base/summary.json" ]; then echo "$m $t: $base not complete, skipped"; return; fi
    labels+=("D=$base:direct+qmean+preorder")
    for a in 0.1 0.25 0.5 0.75 1; do
        if [ "$a" = 0.5 ]; then d=$base; else d=${pat//%t/$t}; d=${d//%a/$a}; fi
        if [ ! -f "$d/summary.json" ]; then echo "$m $t: alpha $a ($d) not complete, left out"; continue; fi
        labels+=("E$a=$d:hifa4")
        pairs+=(--pair "E$a/D")
    done
    for a in 0.1 0.25 0.75 1; do
        case " ${labels[*]} " in *" E$a="*) pairs+=(--pair "E0.5/E$a") ;; esac
    done
    echo "### $m, $t"
    python3 scripts/formats_study.py "${labels[@]}" --tasks "$t" "${pairs[@]}"
    echo
}

models=("$@")
[ ${#models[@]} -gt 0 ] || models=(smollm2 gemma3 qwen0.5b qwen1.5b)
for m in "${models[@]}"; do
    for t in arc_easy arc_challenge; do one "$m" "$t"; done
done
