#!/usr/bin/env bash
# test_layers_check.sh: tests/test_layers.sh can fail (a checker nobody tested can pass
# anything). It runs the checker on a copy of src/ as it is (must pass), then plants one
# violation at a time in the copy and expects the checker to fail with that rule's message:
# a function with 8 parameters, a src/model/ file of 500 lines, a mode-switching call
# (model_set_attn, model_attn) outside src/eval/run*.c, an attention context in struct model,
# two bare 0/1 arguments in one call, a function of 121 lines, a .c file of 701 lines
# without a reason at its top, an include the folder's README
# does not allow. Beside each, the nearest legal case (7 parameters, 499 lines, the call inside
# the run module) must still pass, so that the rule is not merely failing on everything.
set -u
cd "$(dirname "$0")/.."
pass=0; fail=0
tmp=${HIFA4_TMP:-build/tmp}/layers_check
rm -rf "$tmp"; mkdir -p "$tmp/tests"
cp -r src "$tmp/src"
cp tests/test_layers.sh tests/layers_*.awk tests/layers_*_allow.txt tests/*.c "$tmp/tests/"; mkdir -p "$tmp/tests/fuzz"; cp tests/fuzz/*.c "$tmp/tests/fuzz/"
orig=$tmp/orig; mkdir -p "$orig"

# run_check NAME WANT(fail|pass) PATTERN: runs the copy's checker; fail wants a non-zero exit and
# a line matching PATTERN, pass wants exit 0.
run_check() {
    local name=$1 want=$2 pat=${3:-} out rc
    out=$(HIFA4_TMP="$tmp/scratch" bash "$tmp/tests/test_layers.sh" 2>&1); rc=$?
    if [ "$want" = pass ]; then
        if [ $rc -eq 0 ]; then pass=$((pass + 1)); else
            echo "FAIL $name: the checker failed on a legal tree:"; echo "$out" | grep '^FAIL' | head -5; fail=$((fail + 1)); fi
    elif [ $rc -ne 0 ] && echo "$out" | grep -qE "$pat"; then pass=$((pass + 1))
    else
        echo "FAIL $name: the checker did not catch it (exit $rc, want a line matching '$pat'):"
        echo "$out" | tail -3; fail=$((fail + 1))
    fi
}
# plant FILE: keeps FILE's original (restore puts it back; a new file is removed)
plant() { local f=$tmp/$1; mkdir -p "$orig/$(dirname "$1")"; if [ -f "$f" ]; then cp "$f" "$orig/$1"; else : > "$orig/$1.new"; fi; }
restore() {
    local f=$tmp/$1
    if [ -f "$orig/$1.new" ]; then rm -f "$f" "$orig/$1.new"; else cp "$orig/$1" "$f"; fi
}
# planted FILE NAME PATTERN: appends stdin to FILE of the copy, wants the checker to fail with
# PATTERN, restores FILE. With a sed script as a fourth argument, edits FILE with it instead.
planted() {
    local f=$1 name=$2 pat=$3
    plant "$f"
    if [ $# -gt 3 ]; then sed -i "$4" "$tmp/$f"; else cat >> "$tmp/$f"; fi
    run_check "$name" fail "$pat"
    restore "$f"
}

run_check "the copy as it is" pass

# the nearest legal cases, planted together: 7 parameters, a src/model/ file of 499 lines, a
# mode switch inside the run module
plant src/base/common.c; plant src/model/planted.c; plant src/eval/run.c
printf '%s\n' 'int planted_seven(int a, int b, int c, int d, int e, int f, int g) { return a + b + c + d + e + f + g; }' \
    >> "$tmp/src/base/common.c"
for i in $(seq 499); do echo "// line $i"; done > "$tmp/src/model/planted.c"
printf '%s\n' 'static void planted(struct model *m) { model_set_attn(m, 0); }' >> "$tmp/src/eval/run.c"
run_check "7 parameters, 499 lines, model_set_attn in src/eval/run.c" pass
restore src/eval/run.c

# one more of each
printf '%s\n' 'int planted_wide(int a, int b, int c, int d,' '                 int e, int f, int g, int h) {' \
    '    return a + b + c + d + e + f + g + h;' '}' >> "$tmp/src/base/common.c"
run_check "8 parameters" fail 'planted_wide \(8 parameters\)'
restore src/base/common.c
echo "// line 500" >> "$tmp/src/model/planted.c"
run_check "src/model/ file of 500 lines" fail 'FAIL src/model/planted.c: 500 lines'
restore src/model/planted.c

# a .c file of 701 lines without a reason fails; 700 lines, or 701 with "// Long file:", pass
plant src/base/planted_size.c
for i in $(seq 700); do echo "// line $i"; done > "$tmp/src/base/planted_size.c"
run_check "a .c file of 700 lines" pass
echo "// line 701" >> "$tmp/src/base/planted_size.c"
run_check "a .c file of 701 lines" fail 'FAIL src/base/planted_size.c: 701 lines'
sed -i '1s|.*|// Long file: a planted reason|' "$tmp/src/base/planted_size.c"
run_check "a .c file of 701 lines with its reason" pass
restore src/base/planted_size.c

# a test function of 121 lines not on the allow-list fails
{ echo 'static void planted_long_test(void) {'; for i in $(seq 119); do echo "    // line $i"; done; echo '}'; } > "$tmp/planted_long.c"
planted tests/test_common.c "a test function of 121 lines" 'planted_long_test \(121 lines\)' < "$tmp/planted_long.c"

# switching a model's mode outside the run module (stdin by redirection, not a pipe: the
# counters must stay in this shell)
for f in src/cli/run.c src/model/forward.c; do
    planted "$f" "model_set_attn in $f" "mode-switching calls outside the run module" \
        <<< 'static void planted(struct model *m) { model_set_attn(m, 0); }'
done
planted src/calib/calib.c "model_attn in src/calib/calib.c" "mode-switching calls outside the run module" \
    <<< 'static void planted(struct model *m) { model_attn (m); }'

# an attention context held by struct model
planted src/model/model_internal.h "attn_ctx in struct model" 'struct model holds an attention context' \
    '/^struct model {/a\    struct attn_ctx *planted;' < /dev/null

# two bare 0/1 arguments in one call of a src/ function
planted src/base/common.c "planted_f(2, 1, 0)" 'calls with two or more bare 0/1 arguments' \
    < <(printf '%s\n' 'static int planted_f(int a, int b, int c) { return a + b + c; }' \
        'int planted_g(void) { return planted_f(2, 1, 0); }')

# a function of 122 lines
planted src/base/common.c "a function of 122 lines" 'FAIL functions over 120 lines' \
    < <(echo 'int planted_long(void) {'; for i in $(seq 119); do echo "    (void)$i;"; done; echo '    return 0;'; echo '}')

# an include the folder's README does not allow (base/ may include nothing of the project)
planted src/base/common.c "base/ including eval/" 'FAIL src/base/common.c includes eval/run.h' \
    '1a#include "eval/run.h"' < /dev/null

rm -rf "$tmp"
echo "test_layers_check: $pass passed, $fail failed"
[ $fail -eq 0 ]
