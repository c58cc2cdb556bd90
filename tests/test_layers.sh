#!/usr/bin/env bash
# test_layers.sh: the layering of src/ (README "Code map") holds: every #include "folder/..." in
# src/<folder>/ names a folder that src/<folder>/README.md lists under "May include" (or the
# folder itself). The READMEs are the rule; this test keeps them true. Also checks that no
# function in src/ is longer than 120 lines (issue: functions stay about a screen long).
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
echo "test_layers: $pass passed, $fail failed"
[ $fail -eq 0 ]
