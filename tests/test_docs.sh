#!/usr/bin/env bash
# test_docs.sh: docs/README.md links every page of docs/design and docs/results; every results
# page has a "## Reproduce" block whose command lines each name something in this repository
# (scripts/X, a tests/ binary, a Makefile target, a hifa4-eval subcommand with --help); no page
# of docs/ holds a machine path (/work/, /root/, /home/).
set -u
cd "$(dirname "$0")/.."
BIN=${HIFA4_BIN:-./hifa4-eval}
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL test_docs: $*"; fail=$((fail + 1)); }
for f in docs/design/*.md docs/results/*.md; do
    rel=${f#docs/}
    if grep -q "($rel)" docs/README.md; then ok; else bad "docs/README.md does not link $rel"; fi
done
for f in docs/results/*.md; do
    block=$(awk '/^## Reproduce/ { on = 1; next } on && /^```sh/ { code = 1; next } code && /^```/ { exit } code { print }' "$f")
    if [ -z "$block" ]; then bad "$f: no '## Reproduce' block with a sh code block"; continue; fi
    while IFS= read -r line; do
        set -- $line
        case "$1" in
        hifa4-eval) if "$BIN" "$2" --help >/dev/null 2>&1; then ok; else bad "$f: '$line': no subcommand '$2'"; fi ;;
        make) if [ "$2" = bench ] || grep -q "^$2:" Makefile || [ -f "tests/${2#build/tests/}.c" ]; then ok
              else bad "$f: '$line': no make target '$2'"; fi ;;
        python3) if [ -f "$2" ]; then ok; else bad "$f: '$line': no file '$2'"; fi ;;
        ./scripts/*) if [ -x "${1#./}" ]; then ok; else bad "$f: '$line': no executable '${1#./}'"; fi ;;
        ./build/tests/*) if [ -f "tests/${1#./build/tests/}.c" ]; then ok; else bad "$f: '$line': no test '$1'"; fi ;;
        *) bad "$f: '$line': not a command of this repository" ;;
        esac
    done <<< "$(echo "$block" | sed 's/ && /\n/g')"
done
paths=$(grep -rnE '(^|[ `(])/(work|root|home)/' docs | head -20)
if [ -z "$paths" ]; then ok; else bad "machine paths in docs:"; echo "$paths"; fi
echo "test_docs: $pass passed, $fail failed"
[ $fail -eq 0 ]
