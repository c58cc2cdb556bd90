#!/usr/bin/env bash
# test_layers.sh: the layering of src/ (README "Code map") holds: every #include "folder/..." in
# src/<folder>/ names a folder that src/<folder>/README.md lists under "May include" (or the
# folder itself). The READMEs are the rule; this test keeps them true. Also checks that no
# function in src/ is longer than 120 lines (issue: functions stay about a screen long), that no
# function in src/ takes more than 7 parameters (tests/layers_params_allow.txt lists the ones
# still waiting; the list may only shrink), that every file of src/model/ stays under 500 lines, that no .c file of src/ exceeds 700 lines
# without a reason at its top (tests/layers_size_allow.txt: the ones waiting for their split),
# that nothing outside the run module switches a model's attention mode (the run
# owns one context per mode and passes it to model_forward; the model holds none), and that no
# call in src/ passes two or more bare 0/1 arguments (tests/layers_flags.awk; the calls judged
# not to be flags are in tests/layers_flags_allow.txt, which may only shrink).
# tests/test_layers_check.sh plants each of these violations in a copy of src/ and checks that
# this test fails on it (and passes on the nearest legal case).
set -u
cd "$(dirname "$0")/.."
pass=0; fail=0
for readme in src/*/README.md; do
    dir=$(dirname "$readme"); folder=$(basename "$dir")
    allowed=$(grep -m1 '^May include:' "$readme" | sed -e 's/^May include://' -e 's/([^)]*)//g' | tr -d ' .' | tr ',' ' ' | sed 's#/##g')
    if [ -z "$(grep -m1 '^May include:' "$readme")" ]; then
        echo "FAIL $readme: no 'May include:' line"; fail=$((fail + 1)); continue
    fi
    while IFS= read -r line; do
        f=${line%%:*}; inc=$(echo "$line" | sed -E 's/.*#include "([^"]+)".*/\1/')
        case "$inc" in */*) ;; *) continue ;; esac
        target=${inc%%/*}
        ok=0
        [ "$target" = "$folder" ] && ok=1
        [ "$allowed" = "everything" ] && ok=1
        for a in $allowed; do [ "$a" = "$target" ] && ok=1; done
        if [ $ok = 1 ]; then pass=$((pass + 1)); else
            echo "FAIL $f includes $inc: $folder/ may include only: $allowed"; fail=$((fail + 1)); fi
    done < <(grep -rn '#include "' "$dir" --include='*.c' --include='*.h')
done
# every folder of src/ has its README
for d in src/*/; do
    if [ -f "$d/README.md" ]; then pass=$((pass + 1)); else echo "FAIL $d has no README.md"; fail=$((fail + 1)); fi
done
# function length (definition line to closing brace, top-level functions)
long=$(awk 'FNR == 1 { start = 0 }
    /^[A-Za-z_].*\(/ && !/;[[:space:]]*$/ && !/^(typedef|struct [a-z_]+ \{|enum|#)/ { start = FNR; name = $0 }
    /^\}/ && start { n = FNR - start + 1; if (n > 120) printf "%s:%d: %d lines: %s\n", FILENAME, start, n, name; start = 0 }' \
    $(find src -name '*.c'))
if [ -n "$long" ]; then echo "FAIL functions over 120 lines:"; echo "$long"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
# test code follows the function-length rule too: a function of tests/*.c over 120 lines must be
# in tests/layers_test_length_allow.txt ("FILE FUNCTION"; the ones too long today, split as they
# are touched: the list may only shrink)
tlong=$(awk 'FNR == 1 { start = 0 }
    /^[A-Za-z_].*\(/ && !/;[[:space:]]*$/ && !/^(typedef|struct [a-z_]+ \{|enum|#)/ { start = FNR; name = $0 }
    /^\}/ && start { n = FNR - start + 1; if (n > 120) { sub(/\(.*/, "", name); k = split(name, w, /[ *]+/)
        printf "%s %s %d\n", FILENAME, w[k], n } start = 0 }' $(ls tests/*.c tests/fuzz/*.c | sort))
tallow=tests/layers_test_length_allow.txt
new=$(echo "$tlong" | awk 'NF' | while read -r f n k; do grep -qx "$f $n" "$tallow" || echo "$f: $n ($k lines)"; done)
if [ -n "$new" ]; then echo "FAIL test functions over 120 lines (split them into named checks):"; echo "$new"
    fail=$((fail + 1)); else pass=$((pass + 1)); fi
gone=$(awk 'NF && !/^#/' "$tallow" | while read -r f n; do echo "$tlong" | grep -q "^$f $n " || echo "$f $n"; done)
if [ -n "$gone" ]; then echo "FAIL $tallow lists test functions that are no longer over 120 lines (remove them):"; echo "$gone"
    fail=$((fail + 1)); else pass=$((pass + 1)); fi
# parameters: top-level definitions in src/ (.c and .h), counted at parenthesis depth 1
wide=$(awk -f tests/layers_params.awk $(find src -name '*.c' -o -name '*.h' | sort))
allow=tests/layers_params_allow.txt
new=$(echo "$wide" | awk 'NF' | while read -r f n k; do grep -qx "$f $n" "$allow" || echo "$f $n ($k parameters)"; done)
if [ -n "$new" ]; then echo "FAIL functions with more than 7 parameters (use a struct or split the function):"; echo "$new"
    fail=$((fail + 1)); else pass=$((pass + 1)); fi
gone=$(awk 'NF && !/^#/' "$allow" | while read -r f n; do echo "$wide" | grep -q "^$f $n " || echo "$f $n"; done)
if [ -n "$gone" ]; then echo "FAIL $allow lists functions that no longer exceed 7 parameters (remove them):"; echo "$gone"
    fail=$((fail + 1)); else pass=$((pass + 1)); fi
# src/model/: one concern per file, each under 500 lines
for f in src/model/*.c src/model/*.h; do
    n=$(wc -l < "$f")
    if [ "$n" -lt 500 ]; then pass=$((pass + 1)); else echo "FAIL $f: $n lines (src/model/ files stay under 500)"; fail=$((fail + 1)); fi
done
# file size: a .c file of src/ over 700 lines says why at its top (a line "// Long file: REASON"
# in its first 5 lines), or is listed in tests/layers_size_allow.txt (files waiting for their
# split; the list may only shrink)
sallow=tests/layers_size_allow.txt
for f in $(find src -name '*.c' | sort); do
    n=$(wc -l < "$f")
    [ "$n" -le 700 ] && continue
    if head -5 "$f" | grep -q '^// Long file: ..*' || grep -qx "$f" "$sallow"; then pass=$((pass + 1)); else
        echo "FAIL $f: $n lines (over 700: split it by concern, or say why at its top with '// Long file: REASON')"
        fail=$((fail + 1)); fi
done
gone=$(awk 'NF && !/^#/' "$sallow" | while read -r f; do [ -f "$f" ] && [ "$(wc -l < "$f")" -gt 700 ] || echo "$f"; done)
if [ -n "$gone" ]; then echo "FAIL $sallow lists files that are no longer over 700 lines (remove them):"; echo "$gone"
    fail=$((fail + 1)); else pass=$((pass + 1)); fi
# the attention mode: no call that switches a model's mode anywhere, no context inside struct model
switch=$(grep -rnE '\bmodel_(set_attn|attn|attn_align|forward_kv)[[:space:]]*\(' src tests --include='*.c' --include='*.h' |
    grep -v '^src/eval/run[a-z_]*\.c:')
if [ -n "$switch" ]; then echo "FAIL mode-switching calls outside the run module (pass a context to model_forward):"
    echo "$switch"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
held=$(awk '/^struct model \{/ { on = 1 } on && /attn_ctx/ { print FILENAME ":" FNR ": " $0 } on && /^\};/ { on = 0 }' \
    src/model/*.h src/model/*.c)
if [ -n "$held" ]; then echo "FAIL struct model holds an attention context (the run owns one per mode):"; echo "$held"
    fail=$((fail + 1)); else pass=$((pass + 1)); fi
# bare flags: calls of src/ functions with two or more arguments that are the literal 0 or 1
# (tests/layers_flags.awk says what it sees and what not; tests/layers_flags_allow.txt lists
# the calls judged not to be flags, and may only shrink). First, that the check can fail: a
# probe with f(x, 1, 0) is caught, and counts, strings and comments are not.
probe=${HIFA4_TMP:-build/tmp}/layers_flags_probe.c
mkdir -p "$(dirname "$probe")"
printf '%s\n' 'int f(int x, int a, int b);' 'void g(void) {' '    f(2, 1, 0); /* f(2, 0, 0) */' \
    '    f(5, 10, 0); // f(1, 1, 1)' '    puts("f(1, 1, 1)");' '    f(3, (1), 1);' '}' > "$probe"
got=$(awk -f tests/layers_flags.awk "$probe" | awk '{print $2 ":" $3}' | tr '\n' ' ')
if [ "$got" = "f:3 " ]; then pass=$((pass + 1)); else
    echo "FAIL layers_flags.awk on its probe: got '$got', want 'f:3 '"; fail=$((fail + 1)); fi
flags=$(awk -f tests/layers_flags.awk $(find src -name '*.c' -o -name '*.h' | sort))
fallow=tests/layers_flags_allow.txt
new=$(echo "$flags" | awk 'NF' | while read -r f n l; do grep -qx "$f $n" "$fallow" || echo "$f:$l: $n"; done)
if [ -n "$new" ]; then echo "FAIL calls with two or more bare 0/1 arguments (name them: an enum or a second function):"
    echo "$new"; fail=$((fail + 1)); else pass=$((pass + 1)); fi
gone=$(awk 'NF && !/^#/' "$fallow" | while read -r f n; do echo "$flags" | grep -q "^$f $n " || echo "$f $n"; done)
if [ -n "$gone" ]; then echo "FAIL $fallow lists calls that no longer pass bare 0/1 flags (remove them):"; echo "$gone"
    fail=$((fail + 1)); else pass=$((pass + 1)); fi
echo "test_layers: $pass passed, $fail failed"
[ $fail -eq 0 ]
