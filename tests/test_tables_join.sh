#!/usr/bin/env bash
# test_tables_join.sh: `tables` reads runs of one configuration split over several directories
# as one run (src/results/pt_join.c) - the ablation's rows A, D, E in one directory and B, C in
# another, and each task in its own pair. On a tiny synthetic model (make-model, calibrate on
# README.md, a 40-item ARC-format file written here and tests/data/tasks/mc_mini.jsonl):
#  - rows split (ade + bc) give byte for byte the tables of one run of all six modes, plus the
#    "Runs read as one" lines naming both directories;
#  - tasks split too (four directories) give one Table 7 whose columns per task are those of
#    the single runs, and Table 5's Delta_avg / Delta_w recomputed over both tasks as summary.c
#    computes them (checked in Python from the single runs' summary.json);
#  - rows A-E for one task beside rows D, E for another: the counts of the modes a task lacks
#    print "-" in Tables 3, 6 and 7 (they printed -2147483648);
#  - not joined: runs with other scales (a Smooth-QK row of another alpha), and two runs that
#    both hold hifa4 for one task;
#  - not joined either: runs that share a task with different --limit; joined: runs of other
#    tasks with another --limit (one Table 7 with the columns of both).
# Table 5's gate label names a forced alpha ("Bypass, alpha 0.5" when calibrate --alpha 0.5
# overrode a Bypass gate) and stays as it was for the gate's own alpha.
set -u
cd "$(dirname "$0")/.."
BIN=${HIFA4_BIN:-./hifa4-eval}
TMP=${HIFA4_TMP:-build/tmp}/tables_join
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL test_tables_join: $*"; fail=$((fail + 1)); }
rm -rf "$TMP"; mkdir -p "$TMP"
M=$TMP/model
ARC=$TMP/arc.jsonl
python3 - "$ARC" <<'EOF'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(40):
        ch = ", ".join('{"text": "%s %d", "label": "%s"}' % (w, (i * 7 + k) % 13, l)
                       for k, (w, l) in enumerate(zip(["red", "blue", "green", "stone"], "ABCD")))
        f.write('{"id": "q%d", "question": {"stem": "Question %d: which colour is item %d?", "choices": [%s]}, '
                '"answerKey": "%s"}\n' % (i, i, i * 3 % 11, ch, "ABCD"[i % 4]))
EOF
ALL=bf16,direct,direct+qmean,direct+qmean+sqk,direct+qmean+preorder,hifa4
ADE=bf16,direct,direct+qmean+preorder,hifa4
BC=bf16,direct+qmean,direct+qmean+sqk
MC=(--task mc_jsonl --task-file tests/data/tasks/mc_mini.jsonl --skip-bad-rows)
AE=(--task arc_easy --task-file "$ARC")
run() { "$BIN" --quiet run --model "$M" --threads 1 "$@" >/dev/null 2>&1; }
if "$BIN" --quiet make-model --arch qwen3 --layers 2 --dim 128 --heads 4 --kv-heads 2 --head-dim 128 --ffn 256 --seed 7 \
       --plant-outlier 0:51:34 --out "$M" >/dev/null &&
   "$BIN" --quiet calibrate --model "$M" --calib README.md --calib-samples 4 --calib-len 64 --threads 1 \
       --out "$TMP/s.safetensors" >/dev/null 2>&1 &&
   "$BIN" --quiet calibrate --model "$M" --calib README.md --calib-samples 4 --calib-len 64 --threads 1 --alpha 0.25 \
       --out "$TMP/s25.safetensors" >/dev/null 2>&1 &&
   run "${AE[@]}" --attn $ALL --scales "$TMP/s.safetensors" --out "$TMP/ae-all" &&
   run "${AE[@]}" --attn $ADE --scales "$TMP/s.safetensors" --out "$TMP/ae-ade" &&
   run "${AE[@]}" --attn $BC --scales "$TMP/s.safetensors" --out "$TMP/ae-bc" &&
   run "${MC[@]}" --attn $ALL --scales "$TMP/s.safetensors" --out "$TMP/mc-all" &&
   run "${MC[@]}" --attn $ADE --scales "$TMP/s.safetensors" --out "$TMP/mc-ade" &&
   run "${MC[@]}" --attn $BC --scales "$TMP/s.safetensors" --out "$TMP/mc-bc" &&
   run "${AE[@]}" --attn $BC --scales "$TMP/s25.safetensors" --out "$TMP/ae-bc25" &&
   run "${AE[@]}" --attn bf16,hifa4 --scales "$TMP/s.safetensors" --out "$TMP/ae-e"; then ok
else bad "make-model / calibrate / the eight runs"; exit 1; fi

# ---- rows split over two directories = one run of all six modes, byte for byte ----
"$BIN" tables "$TMP/ae-all" >"$TMP/all.md" 2>"$TMP/err" || bad "tables ae-all: $(cat "$TMP/err")"
"$BIN" tables "$TMP/ae-ade" "$TMP/ae-bc" >"$TMP/join.md" 2>"$TMP/err" || bad "tables ae-ade ae-bc: $(cat "$TMP/err")"
if grep -qxF -- "- \`$TMP/ae-ade\` + \`$TMP/ae-bc\`" "$TMP/join.md"; then ok; else bad "no 'Runs read as one' line: $(head -8 "$TMP/join.md")"; fi
sed '/^### Runs read as one$/,/^### Table/{/^### Table/!d}' "$TMP/join.md" >"$TMP/join-tables.md"
if cmp -s "$TMP/join-tables.md" "$TMP/all.md"; then ok; else bad "joined tables differ from one run's: diff $TMP/join-tables.md $TMP/all.md"; fi
if grep -q '^| B. +Q-Mean | - | - | [0-9]' "$TMP/join.md" && grep -q '^| C. +Smooth-QK | ✓ | - | [0-9]' "$TMP/join.md"; then ok
else bad "rows B and C filled from the second directory: $(grep -A7 '^### Table 7' "$TMP/join.md")"; fi
# the order of the inputs does not matter for the tables
"$BIN" tables "$TMP/ae-bc" "$TMP/ae-ade" 2>/dev/null | sed '/^### Runs read as one$/,/^### Table/{/^### Table/!d}' >"$TMP/rev.md"
if cmp -s "$TMP/rev.md" "$TMP/all.md"; then ok; else bad "bc before ade: diff $TMP/rev.md $TMP/all.md"; fi

# t7_columns JOINED FIRST SECOND: JOINED's Table 7 rows A-E are FIRST's task columns then SECOND's
t7_columns() {
    python3 - "$@" <<'EOF'
import sys
def rows(path):  # Table 7's rows A-E: {config: cells after Config, SQK, PRe}
    lines = open(path).read().split("### Table 7:")[1].split("###")[0].splitlines()
    return {l.split(" | ")[0]: [c.strip() for c in l.strip("|").split("|")[3:]] for l in lines if l.startswith("| ") and "Config" not in l}
j, a, b = (rows(p) for p in sys.argv[1:4])
assert len(j) == 5 and all(j[k] == a[k] + b[k] for k in j), (j, a, b)
EOF
}

# ---- tasks split as well: four directories, one run ----
"$BIN" tables "$TMP/mc-ade" "$TMP/mc-bc" "$TMP/ae-ade" "$TMP/ae-bc" >"$TMP/four.md" 2>"$TMP/err" || bad "tables of four: $(cat "$TMP/err")"
"$BIN" tables "$TMP/mc-all" >"$TMP/mc-all.md" 2>/dev/null
if grep -qxF -- "- \`$TMP/mc-ade\` + \`$TMP/mc-bc\` + \`$TMP/ae-ade\` + \`$TMP/ae-bc\`" "$TMP/four.md"; then ok
else bad "four directories not read as one: $(head -8 "$TMP/four.md")"; fi
if t7_columns "$TMP/four.md" "$TMP/mc-all.md" "$TMP/all.md" && python3 - "$TMP" <<'EOF'
import json, sys
t = sys.argv[1]
# Table 5: Delta_avg and Delta_w over both tasks, from the single runs' accuracies
gaps, ns = [], []
for r in ("mc-all", "ae-all"):
    s = json.load(open("%s/%s/summary.json" % (t, r)))
    (name, task), = s["tasks"].items()
    gaps.append(task["modes"]["hifa4"]["acc"] - task["modes"]["bf16"]["acc"]); ns.append(task["n"])
d_avg = sum(gaps) / 2; d_w = sum(g * n for g, n in zip(gaps, ns)) / sum(ns)
want = "| %+.1f pp | %+.1f pp |" % (100 * d_avg, 100 * d_w)
t5 = open(t + "/four.md").read().split("### Table 5:")[1].split("###")[0]
hifa = [l for l in t5.splitlines() if "| HiFA4 |" in l]
assert len(hifa) == 1 and hifa[0].endswith(want), (hifa, want)
EOF
then ok; else bad "four directories: Table 7's columns or Table 5's Delta (see the assertion above)"; fi

# ---- a mode in one task only (rows A-E on one task, D and E on the other): "-", not a number ----
# (a count of a mode the task lacks was (int)NAN, undefined, and printed as -2147483648)
if run "${MC[@]}" --attn bf16,direct+qmean+preorder,hifa4 --scales "$TMP/s.safetensors" --out "$TMP/mc-de" &&
   "$BIN" tables "$TMP/ae-ade" "$TMP/ae-bc" "$TMP/mc-de" >"$TMP/de.md" 2>"$TMP/err"; then ok
else bad "run mc-de / tables ae-ade ae-bc mc-de: $(cat "$TMP/err")"; fi
if grep -qxF -- "- \`$TMP/ae-ade\` + \`$TMP/ae-bc\` + \`$TMP/mc-de\`" "$TMP/de.md"; then ok
else bad "ae-ade, ae-bc and mc-de not read as one: $(head -8 "$TMP/de.md")"; fi
if ! grep -qiE -- '-2147483648|nan' "$TMP/de.md"; then ok; else bad "a missing count printed as a number: $(grep -iE -- '-2147483648|nan' "$TMP/de.md" | head -3)"; fi
t3=$(sed -n '/^### Table 3:/,/^### Table 5:/p' "$TMP/de.md" | grep '^| mc_jsonl')
if echo "$t3" | grep -qE '^\| mc_jsonl \([0-9]+\) \| - \| [0-9.]+%\([0-9]+\) \| - \| [0-9]+ \|$'; then ok; else bad "Table 3 without Direct: '$t3'"; fi
t7=$(sed -n '/^### Table 7:/,/^### /p' "$TMP/de.md" | grep -c '^| [ABC]\. .* | - | - |$')
if [ "$t7" = 3 ]; then ok; else bad "Table 7 rows A-C without the task: $(sed -n '/^### Table 7:/,/^### Table [89A]/p' "$TMP/de.md")"; fi

# ---- not joined ----
"$BIN" tables "$TMP/ae-ade" "$TMP/ae-bc25" >"$TMP/other.md" 2>/dev/null
if ! grep -q '^### Runs read as one' "$TMP/other.md" && grep -q '^| B. +Q-Mean | - | - | - | - |$' "$TMP/other.md"; then ok
else bad "runs with other scales joined: $(head -12 "$TMP/other.md")"; fi
"$BIN" tables "$TMP/ae-ade" "$TMP/ae-e" >"$TMP/twice.md" 2>/dev/null
if ! grep -q '^### Runs read as one' "$TMP/twice.md"; then ok; else bad "two runs holding hifa4 for one task joined"; fi

# ---- --limit: runs sharing a task with different limits are not one run ----
if run "${AE[@]}" --attn $ADE --scales "$TMP/s.safetensors" --limit 20 --out "$TMP/ae-ade20"; then ok
else bad "run with --limit 20"; fi
"$BIN" tables "$TMP/ae-ade20" "$TMP/ae-bc" >"$TMP/lim2.md" 2>/dev/null
if ! grep -q '^### Runs read as one' "$TMP/lim2.md"; then ok; else bad "arc_easy runs of --limit 20 and none joined: $(head -6 "$TMP/lim2.md")"; fi

# ---- --limit on tasks the other run does not hold: one run (MMLU's 10 per subject beside ARC's first 500) ----
if run "${MC[@]}" --attn $ALL --scales "$TMP/s.safetensors" --limit 3 --out "$TMP/mc-all3" &&
   "$BIN" tables "$TMP/ae-all" "$TMP/mc-all3" >"$TMP/lim-other.md" 2>"$TMP/err" &&
   "$BIN" tables "$TMP/mc-all3" >"$TMP/mc-all3.md" 2>/dev/null; then ok
else bad "run mc --limit 3 / tables ae-all mc-all3: $(cat "$TMP/err")"; fi
if grep -qxF -- "- \`$TMP/ae-all\` + \`$TMP/mc-all3\`" "$TMP/lim-other.md" && ! grep -q '\[limit' "$TMP/lim-other.md"; then ok
else bad "runs of other tasks and --limit not read as one: $(head -8 "$TMP/lim-other.md")"; fi
if t7_columns "$TMP/lim-other.md" "$TMP/all.md" "$TMP/mc-all3.md"; then ok
else bad "Table 7 of the joined runs is not the two runs' columns (see the assertion above)"; fi

# ---- Table 5's gate label with a forced alpha ----
gate=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['scales_calibration']['gate'])" "$TMP/ae-bc25/run.json")
if [ "$gate" = strong ] || [ "$gate" = mild ] || [ "$gate" = bypass ]; then ok; else bad "scales_calibration.gate: $gate"; fi
"$BIN" tables "$TMP/ae-bc25" >/dev/null 2>&1 # no hifa4: no Table 5; the label is read from a run with hifa4 below
"$BIN" --quiet calibrate --model "$M" --calib README.md --calib-samples 4 --calib-len 64 --threads 1 --alpha 0.75 \
    --out "$TMP/s75.safetensors" >/dev/null 2>&1 && run "${AE[@]}" --attn bf16,hifa4 --scales "$TMP/s75.safetensors" --out "$TMP/ae-e75"
G=${gate^}
if "$BIN" tables "$TMP/ae-e75" 2>/dev/null | grep -q "^| model ($G, alpha 0.75) | BF16 |"; then ok
else bad "forced alpha 0.75 not in Table 5's label: $("$BIN" tables "$TMP/ae-e75" 2>&1 | grep -m1 '^| model (')"; fi
own=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['scales_calibration']['alpha'])" "$TMP/ae-all/run.json")
if "$BIN" tables "$TMP/ae-all" 2>/dev/null | grep -q "^| model ($G) | BF16 |"; then ok
else bad "gate's own alpha ($own) labelled: $(grep -m1 '^| model (' "$TMP/all.md")"; fi

echo "test_tables_join: $pass passed, $fail failed, 0 skipped"
[ $fail -eq 0 ]
