#!/usr/bin/env bash
# test_study_tables.sh: the study tables committed in docs/results/tables/ are what
# `scripts/study_tables.sh --check` regenerates from the committed runs under studies/, byte for
# byte (Markdown, LaTeX, CSV, the command): a run added or changed, or a change to `tables`, fails
# here until the script is rerun. Needs no ../shared (the runs are committed). Then the check
# itself, on a copy of the studies' JSON files, the script and the tables (build/tmp): it must
# fail, naming the file (and its first differing line), when a committed table is edited, a
# committed file is removed or added, a run's summary.json changes, a set's input loses its
# summary.json, or an optional input (a run in progress) becomes complete; after rerunning the
# script on that copy it must pass again.
set -u
cd "$(dirname "$0")/.."
BIN=${HIFA4_BIN:-./hifa4-eval}
TMP=${HIFA4_TMP:-build/tmp}/study_tables
pass=0; fail=0; skip=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL test_study_tables: $*"; fail=$((fail + 1)); }
case "$BIN" in /*) ABS=$BIN ;; */*) ABS=$PWD/$BIN ;; *) ABS=$(command -v "$BIN") ;; esac

# ---- the committed tables are current ----
out=$(HIFA4_BIN="$ABS" ./scripts/study_tables.sh --check 2>&1); rc=$?
n_ok=$(printf '%s\n' "$out" | grep -c '^ok ')
if [ $rc = 0 ] && [ "$n_ok" -gt 0 ]; then pass=$((pass + n_ok))
else bad "scripts/study_tables.sh --check (exit $rc): the committed study tables are stale; rerun scripts/study_tables.sh and commit docs/results/tables:"
    printf '%s\n' "$out" | grep -v '^ok \|^note '; fi
while IFS= read -r line; do echo "SKIP test_study_tables: ${line#SKIP }"; skip=$((skip + 1)); done < <(printf '%s\n' "$out" | grep '^SKIP ')

# ---- the check fails on every kind of staleness (on a copy) ----
# The copy's tables are written by the script itself first, so that these cases do not depend on
# whether the repository's own tables are current (the first check above says that).
C=$TMP/repo; P=$TMP/pristine
rm -rf "$P" && mkdir -p "$P/scripts" "$P/docs/results" &&
    cp scripts/study_tables.sh "$P/scripts/" && cp -r docs/results/tables "$P/docs/results/" &&
    find studies -name '*.json' | tar cf - -T - | tar xf - -C "$P" &&
    HIFA4_BIN="$ABS" "$P/scripts/study_tables.sh" >/dev/null 2>&1
prc=$?
fresh() { rm -rf "$C" && cp -r "$P" "$C"; } # the script, the tables, the studies' JSON files
check() { out=$(HIFA4_BIN="$ABS" "$C/scripts/study_tables.sh" --check "$@" 2>&1); rc=$?; }
# expect_fail WHAT PATTERN: the check exits 1 and prints a line matching PATTERN
expect_fail() {
    if [ $rc = 1 ] && printf '%s\n' "$out" | grep -qE -- "$2"; then ok
    else bad "$1: exit $rc, no line matching '$2':"; printf '%s\n' "$out" | head -20; fi
}
T=docs/results/tables
[ $prc = 0 ] && fresh || { bad "copying the studies to $P and writing its tables (exit $prc)"; echo "test_study_tables: $pass passed, $fail failed, $skip skipped"; exit 1; }
check
if [ $rc = 0 ]; then ok; else bad "the tables the script wrote do not pass its --check (exit $rc):"; printf '%s\n' "$out" | head -20; fi
set1=$(ls "$C/$T" | grep '\.md$' | grep -v '^README.md$' | head -1); set1=${set1%.md}

# a committed Markdown table edited: one cell of its first table row with a number
row=$(grep -n -m1 '^| .*[0-9]' "$C/$T/$set1.md" | cut -d: -f1)
sed -i "${row:-1}s/|/| x/2" "$C/$T/$set1.md"
check "$set1"
expect_fail "edited $T/$set1.md" "^DIFF $T/$set1.md: differs from the regenerated file at line $row$"
expect_fail "edited $T/$set1.md (the line)" "^  committed: +\| .*\| x"
fresh
# a LaTeX file edited, a CSV file removed, a file added
tex=$(ls "$C/$T/$set1" | grep '\.tex$' | head -1); csv=$(ls "$C/$T/$set1" | grep '\.csv$' | head -1)
echo '% edited' >>"$C/$T/$set1/$tex"
check "$set1"
expect_fail "edited $T/$set1/$tex" "^DIFF $T/$set1/$tex: differs from the regenerated file at line [0-9]+$"
expect_fail "edited $T/$set1/$tex (end of file)" "^  regenerated: \(end of file\)$"
fresh; rm "$C/$T/$set1/$csv"
check "$set1"
expect_fail "removed $T/$set1/$csv" "^MISSING $T/$set1/$csv: regenerated but not committed$"
fresh; echo x >"$C/$T/$set1/table4.tex"; echo x >"$C/$T/gone.md"
check
expect_fail "added $T/$set1/table4.tex" "^EXTRA $T/$set1/table4.tex: committed but no longer regenerated$"
expect_fail "added $T/gone.md" "^EXTRA $T/gone.md: no set of that name"

# a run's summary.json changed: every flip count of its first run input + 1
fresh
run=$(for d in $(cut -d' ' -f3- "$C/$T/$set1/command.txt"); do [ -f "$C/$d/summary.json" ] && echo "$d" && break; done)
if python3 - "$C/$run/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
n = 0
for t in s["tasks"].values():
    for v in t.get("vs_reference", {}).values():
        if isinstance(v, dict) and isinstance(v.get("flips"), (int, float)):
            v["flips"] += 1; n += 1
assert n > 0, "no vs_reference flips"
json.dump(s, open(sys.argv[1], "w"), indent=1)
EOF
then ok; else bad "editing $run/summary.json"; fi
check "$set1"
expect_fail "$run/summary.json changed" "^DIFF $T/$set1.md: differs from the regenerated file at line [0-9]+$"
expect_fail "$run/summary.json changed (the set)" "^FAIL $set1: committed tables are stale"
# ... or gone: the set cannot be regenerated, and its committed files exist
rm "$C/$run/summary.json"
check "$set1"
expect_fail "$run/summary.json removed" "^FAIL $set1: cannot be regenerated, input not complete .*$run"

# an optional input (a run in progress) becomes complete: stale until the script is rerun
fresh
check
note=$(printf '%s\n' "$out" | grep -m1 '^note ')
if [ -z "$note" ]; then
    echo "SKIP test_study_tables: every optional input of scripts/study_tables.sh is complete (no run in progress to land)"
    skip=$((skip + 1))
else
    oset=$(echo "$note" | sed -E 's/^note ([^:]+): .*/\1/'); odir=$(echo "$note" | sed -E 's/^note [^:]+: ([^ ]+) left out.*/\1/')
    src=$(for d in $(cut -d' ' -f3- "$C/$T/$oset/command.txt"); do [ -f "$C/$d/summary.json" ] && echo "$d" && break; done)
    rm -rf "${C:?}/$odir"; mkdir -p "$(dirname "$C/$odir")"; cp -r "$C/$src" "$C/$odir" # a stand-in for the run
    check "$oset"
    expect_fail "$odir completed" "^DIFF $T/$oset/command.txt: differs"
    if HIFA4_BIN="$ABS" "$C/scripts/study_tables.sh" "$oset" >/dev/null 2>&1 && check && [ $rc = 0 ] &&
       grep -q " $odir" "$C/$T/$oset/command.txt"; then ok
    else bad "rerunning the script after $odir completed did not make --check pass: exit $rc"; printf '%s\n' "$out" | head; fi
fi

echo "test_study_tables: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
