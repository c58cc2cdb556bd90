#!/usr/bin/env bash
# test_build_rev.sh: a binary names the commit it was built from wherever it is copied to.
#   - scripts/build_rev.sh in a throw-away git repository: the commit's hash; "-dirty" after an
#     edit of a tracked file (an untracked file leaves it clean); "" outside git; the header is
#     not rewritten when its text is unchanged (make then rebuilds nothing);
#   - the program copied out of the checkout and run from a directory without .git: --version
#     and a run's run.json give this checkout's HEAD (with "-dirty" as git says), not "unknown"
#     (the run-time lookup it had before only saw a .git beside the binary or in the working
#     directory). Skipped with the reason where the checkout is not a git repository.
set -u
cd "$(dirname "$0")/.."
BIN=${HIFA4_BIN:-./hifa4-eval}
TMP=${HIFA4_TMP:-build/tmp}/build_rev
pass=0; fail=0; skipped=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
rm -rf "$TMP"; mkdir -p "$TMP"
TMP=$(cd "$TMP" && pwd)
command -v git >/dev/null || { echo "SKIP test_build_rev: git is not installed"; echo "test_build_rev: 0 passed, 0 failed, 1 skipped"; exit 0; }

# the script in a repository of its own
# (GIT_CEILING_DIRECTORIES: the checkout around build/tmp is not this repository's parent)
export GIT_CEILING_DIRECTORIES=$TMP
repo=$TMP/repo; mkdir -p "$repo/scripts"; cp scripts/build_rev.sh "$repo/scripts/"
hdr() { grep -o '"[^"]*"' "$1" | tr -d '"'; }
"$repo/scripts/build_rev.sh" "$TMP/h0"
[ -f "$TMP/h0" ] && [ -z "$(hdr "$TMP/h0")" ] && ok || bad "outside git: $(cat "$TMP/h0" 2>/dev/null)"
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
(cd "$repo" && git init -q . && git add scripts && git commit -q -m one) || bad "git init"
head=$(git -C "$repo" rev-parse HEAD)
"$repo/scripts/build_rev.sh" "$TMP/h1"
[ "$(hdr "$TMP/h1")" = "$head" ] && ok || bad "clean: $(hdr "$TMP/h1"), expected $head"
touch -d '2000-01-01' "$TMP/h1"
"$repo/scripts/build_rev.sh" "$TMP/h1"
[ "$(stat -c %Y "$TMP/h1")" = "$(date -d '2000-01-01' +%s)" ] && ok || bad "an unchanged header was rewritten"
echo x > "$repo/untracked"
"$repo/scripts/build_rev.sh" "$TMP/h1"
[ "$(hdr "$TMP/h1")" = "$head" ] && ok || bad "an untracked file made it $(hdr "$TMP/h1")"
echo "# edit" >> "$repo/scripts/build_rev.sh"
"$repo/scripts/build_rev.sh" "$TMP/h1"
[ "$(hdr "$TMP/h1")" = "$head-dirty" ] && ok || bad "edited: $(hdr "$TMP/h1"), expected $head-dirty"

# the program, copied out of the checkout
unset GIT_CEILING_DIRECTORIES
if ! want=$(git rev-parse --verify -q HEAD 2>/dev/null); then
    echo "SKIP test_build_rev: this checkout is not a git repository (nothing to compare the binary's revision with)"
    skipped=1
else
    git update-index -q --refresh >/dev/null 2>&1
    git diff-index --quiet HEAD -- || want="$want-dirty"
    mkdir -p "$TMP/away/bin"; cp "$BIN" "$TMP/away/bin/hifa4-eval"
    "$BIN" --quiet make-model --arch llama --layers 1 --dim 64 --heads 2 --kv-heads 1 --head-dim 32 --ffn 128 \
        --seed 5 --out "$TMP/model" >/dev/null || bad "make-model"
    cp tests/data/tasks/mc_mini.jsonl "$TMP/away/"
    v=$(cd "$TMP/away" && ./bin/hifa4-eval --version)
    case "$v" in *"(git $want,"*) ok ;; *) bad "--version of the copy: $v (expected git $want; rebuilt since the last commit?)" ;; esac
    (cd "$TMP/away" && ./bin/hifa4-eval --quiet run --model "$TMP/model" --task mc_jsonl --task-file mc_mini.jsonl \
        --skip-bad-rows --attn bf16 --threads 1 --out run >/dev/null 2>&1) || bad "a run of the copy"
    grep -q "\"git_revision\":[[:space:]]*\"$want\"" "$TMP/away/run/run.json" && ok ||
        bad "run.json of the copy: $(grep git_revision "$TMP/away/run/run.json" 2>/dev/null)"
fi
if [ $skipped -gt 0 ]; then echo "test_build_rev: $pass passed, $fail failed, $skipped skipped"
else echo "test_build_rev: $pass passed, $fail failed"; fi
[ $fail -eq 0 ]
