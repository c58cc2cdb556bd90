#!/usr/bin/env bash
# test_readme.sh: README.md is a manual whose commands run as written, whose links resolve, and
# which stays short. Three checks:
#
# 1. Commands. Convention of README.md: every line of a ```sh fenced block is one command a user
#    types (a trailing "  # comment" is not part of it); output is shown in ```text blocks. A
#    fence with another or no language is a failure, so that no command hides in an unmarked
#    block. A command line starts with `hifa4-eval ` or `make `; any other line must be listed in
#    SKIPPED below. The lines are run in README order, each with `bash -c`, in one scratch
#    directory ($TMP/work: results/ land there, so later lines read what
#    earlier ones wrote) with this build first on PATH as `hifa4-eval`; each must exit 0. A line
#    listed in SKIPPED is not run and is reported as "SKIP readme_commands: <line>: <reason>";
#    a listed line the README no longer has is a failure (the list may only hold README lines).
#    What makes the lines runnable here without changing them - the environment:
#      - Qwen/Qwen3-8B (any ORG/NAME of the README): a `make-model --arch qwen3` checkpoint
#        placed by hand in a Hugging Face cache, HF_HUB_CACHE=$TMP/hub with
#        models--ORG--NAME/snapshots/<commit>/ and refs/main, HF_HUB_OFFLINE=1 (no network;
#        tests/test_hub.sh tests the download path against a loopback hub);
#      - task data: arc_easy and arc_challenge (24 generated questions each, in the layout of
#        datasets/*.json; arc_challenge's two files hold the same items) and the Brown corpus (generated sentences) under HIFA4_DATA=$TMP/data;
#        HIFA4_CACHE=$TMP/cache (automatic scales, GGUF imports), never the user's cache.
#    and the placeholders (upper-case file names) substituted:
#      - FILE.gguf -> tests/data/fuzz/seeds/gguf/tiny-llama-gpt2.gguf (a valid 1-layer GGUF).
# 2. Links. Every [text](target) of README.md and docs/*.md outside code: a relative target must
#    exist (relative to the page), and a #anchor must be a heading of the target page under
#    GitHub's rule (lower case; characters other than letters, digits, space, - and _ dropped;
#    spaces become -). http(s) targets are not fetched. PENDING lists pages that other helpers of
#    the session write and that are not merged yet: while such a page is absent, links to it are
#    reported as skips, once it exists they are checked like any other.
# 3. Length: README.md has at most 300 lines.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${HIFA4_BIN:-./hifa4-eval}
case "$BIN" in /*) ;; *) BIN="$ROOT/$BIN" ;; esac
TMP=${HIFA4_TMP:-build/tmp}/readme
pass=0; fail=0; skip=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL test_readme: $*"; fail=$((fail + 1)); }
skipped() { echo "SKIP $1: $2"; skip=$((skip + 1)); }

# README lines that cannot run here, and why (exact text of the line, comment stripped).
SKIPPED=(
    "make demo|minutes of both cores and a download from PyPI; its pipeline is tests/test_demo_identity.sh"
    "make test|this test is part of make test"
)
# Pages linked before they exist: written by other helpers of this session, not merged yet.
PENDING=()

# ---- 3. length ----
n=$(wc -l <README.md)
if [ "$n" -le 300 ]; then ok; else bad "README.md has $n lines, at most 300 (move reports to docs/)"; fi

# ---- the sh lines of README.md ----
# fence languages: only sh and text
badfence=$(awk '/^```/ { if (!open) { lang = substr($0, 4); if (lang != "sh" && lang != "text") print NR ": ```" lang; open = 1 } else open = 0 }' README.md)
if [ -z "$badfence" ]; then ok; else bad "README.md fences must be \`\`\`sh (commands) or \`\`\`text (output): $badfence"; fi
mapfile -t LINES < <(awk '/^```/ { if (!open) { insh = ($0 == "```sh"); open = 1 } else { open = 0; insh = 0 }; next }
                           insh && NF { sub(/[ \t]+#.*$/, ""); sub(/^[ \t]+/, ""); print }' README.md)
if [ "${#LINES[@]}" -ge 5 ]; then ok; else bad "only ${#LINES[@]} command lines found in README.md's sh blocks"; fi

reason_of() {   # the SKIPPED reason of a line, or nothing
    local e
    for e in "${SKIPPED[@]}"; do [ "${e%%|*}" = "$1" ] && { printf '%s\n' "${e#*|}"; return; }; done
}
for e in "${SKIPPED[@]}"; do   # the list holds README lines only
    found=0; for l in "${LINES[@]}"; do [ "$l" = "${e%%|*}" ] && found=1; done
    if [ $found = 1 ]; then ok; else bad "SKIPPED lists '${e%%|*}', which README.md's sh blocks do not have"; fi
done

# ---- the environment the lines run in ----
if ! command -v python3 >/dev/null || ! command -v zstd >/dev/null; then
    skipped readme_commands "needs python3 (data generation, link check) and zstd"
    echo "test_readme: $pass passed, $fail failed, $skip skipped"; [ $fail -eq 0 ]; exit
fi
rm -rf "$TMP"; mkdir -p "$TMP"/bin "$TMP"/work "$TMP"/data/brown "$TMP"/hub "$TMP"/cache
TMP=$(cd "$TMP" && pwd)
ln -s "$BIN" "$TMP/bin/hifa4-eval"
python3 - "$TMP/data" <<'EOF'
import json, os, random, sys
D = sys.argv[1]; r = random.Random(24)
w = "the a of sun plant water energy rock moon heat light cell animal food earth air".split()
for task in ("arc_easy", "arc_challenge"):
    d = os.path.join(D, "arc/genmc", task, "official"); os.makedirs(d)
    with open(os.path.join(d, "test.jsonl"), "w") as f:
        for i in range(24):
            ch = [{"text": " ".join(r.choice(w) for _ in range(3)), "label": "ABCD"[k]} for k in range(4)]
            f.write(json.dumps({"id": "%s-%d" % (task, i), "question": {"stem": " ".join(r.choice(w) for _ in range(8)) + "?",
                                "choices": ch}, "answerKey": "ABCD"[i % 4]}) + "\n")
    if task == "arc_challenge":   # its second file (arc.c): the same items, no digit-key ones to add
        os.makedirs(os.path.join(D, "arc/ai2-subset"))
        with open(os.path.join(d, "test.jsonl")) as f, open(os.path.join(D, "arc/ai2-subset/ARC-Challenge-Test.jsonl"), "w") as g:
            g.write(f.read())
with open(os.path.join(D, "brown/brown.txt"), "w") as f:
    for i in range(3000): f.write(" ".join(r.choice(w) for _ in range(12)) + ".\n")
EOF
zstd -q --rm "$TMP/data/brown/brown.txt" -o "$TMP/data/brown/brown.txt.zst"
# every ORG/NAME the sh lines name, as a hand-placed snapshot of a tiny model
mapfile -t REPOS < <(printf '%s\n' "${LINES[@]}" | grep -oE -- '--model [A-Za-z0-9._-]+/[A-Za-z0-9._-]+' | sed 's/^--model //' | sort -u)
"$BIN" --quiet make-model --arch qwen3 --out "$TMP/tiny" >/dev/null 2>"$TMP/mm.err" || bad "make-model: $(cat "$TMP/mm.err")"
COMMIT=0000000000000000000000000000000000000024
for repo in "${REPOS[@]}"; do
    d="$TMP/hub/models--${repo%%/*}--${repo#*/}"
    mkdir -p "$d/snapshots/$COMMIT" "$d/refs"
    cp "$TMP"/tiny/* "$d/snapshots/$COMMIT/" && printf %s "$COMMIT" >"$d/refs/main"
    # a hub snapshot always has tokenizer_config.json (make-model writes none; one without it is
    # refused offline as incomplete)
    [ -f "$d/snapshots/$COMMIT/tokenizer_config.json" ] || echo '{}' >"$d/snapshots/$COMMIT/tokenizer_config.json"
done
GGUF=$ROOT/tests/data/fuzz/seeds/gguf/tiny-llama-gpt2.gguf

# ---- 1. run every line ----
i=0
for line in "${LINES[@]}"; do
    i=$((i + 1))
    why=$(reason_of "$line")
    if [ -n "$why" ]; then skipped readme_commands "$line: $why"; continue; fi
    case "$line" in
        "hifa4-eval "*|"make "*) ;;
        *) bad "README line '$line' is neither a hifa4-eval/make command nor listed in SKIPPED"; continue ;;
    esac
    cmd=${line//FILE.gguf/$GGUF}
    (cd "$TMP/work" && env -u HF_HOME -u HF_TOKEN -u HIFA4_HOME PATH="$TMP/bin:$PATH" HF_HUB_CACHE="$TMP/hub" HF_HUB_OFFLINE=1 \
         HF_ENDPOINT=http://127.0.0.1:1 HIFA4_DATA="$TMP/data" HIFA4_CACHE="$TMP/cache" bash -c "$cmd" >"$TMP/cmd$i.out" 2>"$TMP/cmd$i.err")
    rc=$?
    if [ $rc -eq 0 ]; then ok; else bad "README line '$line' exit $rc: $(tail -3 "$TMP/cmd$i.err" | tr '\n' ' ')"; fi
done

# ---- 2. links of README.md and docs/*.md ----
pend=$(printf '%s\n' "${PENDING[@]}")
python3 - "$pend" README.md docs/*.md <<'EOF' >"$TMP/links.out"
import os, re, sys
pending = set(sys.argv[1].split()); pages = sys.argv[2:]
def slug(h):
    h = re.sub(r'[^\w\- ]', '', h.strip().lower().replace('`', ''))
    return h.replace(' ', '-')
def anchors(path):
    a = set()
    for line in re.sub(r'^```.*?^```', '', open(path, encoding='utf-8').read(), flags=re.M | re.S).split('\n'):
        m = re.match(r'#{1,6} (.*)', line)
        if m: a.add(slug(m.group(1)))
    return a
for page in pages:
    raw = open(page, encoding='utf-8').read()
    body = re.sub(r'^```.*?^```', '', raw, flags=re.M | re.S)    # fenced code
    body = re.sub(r'`[^`\n]*`', '', body)                          # inline code; [`x`](t) keeps its (t)
    for m in re.finditer(r'\]\(([^)\s]+)\)', body):
        t = m.group(1)
        if re.match(r'[a-z]+:', t): continue
        f, _, anchor = t.partition('#')
        target = os.path.normpath(os.path.join(os.path.dirname(page), f)) if f else page
        if not os.path.exists(target):
            print('PENDING ' + target if target in pending else 'BAD %s: link %s: no file %s' % (page, t, target)); continue
        if anchor:
            if os.path.isdir(target) or anchor not in anchors(target):
                print('BAD %s: link %s: no heading #%s in %s' % (page, t, anchor, target)); continue
        print('OK %s %s' % (page, t))
EOF
while IFS= read -r l; do
    case "$l" in
        OK*) ok ;;
        PENDING*) skipped readme_links "links to ${l#PENDING }: the page is written by another helper, not merged yet" ;;
        *) bad "${l#BAD }" ;;
    esac
done < <(sort -u "$TMP/links.out")
nlinks=$(grep -c . "$TMP/links.out")
if [ "$nlinks" -ge 20 ]; then ok; else bad "only $nlinks links found in README.md and docs/*.md"; fi

echo "test_readme: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
