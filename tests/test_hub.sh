#!/usr/bin/env bash
# test_hub.sh: `--model ORG/NAME` end to end against the loopback Hub imitation
# (tests/http_server.py on 127.0.0.1, serving make-model checkpoints in a hub layout):
#  1. from an empty Hugging Face cache, `hifa4-eval --model org/tiny --task arc_easy --limit 20`
#     asks the API for the commit, downloads into models--org--tiny/snapshots/<commit>/ (the
#     safetensors through the Hub's 302 redirect, verified by X-Linked-Etag), writes refs/main,
#     calibrates Smooth-QK first on the default source (one line: source, samples, estimate) and
#     scores bf16, direct and hifa4; run.json records the commit and the calibration;
#  2. the same command again: zero HTTP requests (the server's own count), no calibration,
#     the scales of step 1, identical samples files;
#  3. a snapshot placed in HF_HUB_CACHE by hand (snapshots/<commit>/ + refs/main) with
#     HF_HUB_OFFLINE=1 and an endpoint that does not answer: used in place, no request;
#     offline and not cached: exit 1 naming what was looked for;
#  4. a gated repository: 401 without HF_TOKEN (exit 1, the message names HF_TOKEN), downloaded
#     with it (the server checks the bearer token);
#  5. ORG/NAME@COMMIT resolves that snapshot; --scales none drops hifa4; an explicit --attn hifa4
#     with no calibration text is an error that names the text and --scales none;
#  6. a name from configs/models is a shortcut for its hub id (found in the cache, no request).
# The task data (20 ARC-style items) and the calibration text are written here (no ../shared).
set -u
cd "$(dirname "$0")/.."
BIN=${HIFA4_BIN:-./hifa4-eval}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
TMP=${HIFA4_TMP:-build/tmp}/hub
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
check() { if eval "$1"; then ok; else bad "$2"; fi; }

if ! command -v python3 >/dev/null || ! command -v zstd >/dev/null; then
    echo "SKIP test_hub: needs python3 (the loopback server) and zstd"
    echo "test_hub: 0 passed, 0 failed, 1 skipped"; exit 0
fi
rm -rf "$TMP"; mkdir -p "$TMP"/doc/org "$TMP"/data/brown "$TMP"/data/arc/genmc/arc_easy/official "$TMP"/work
TMP=$(cd "$TMP" && pwd)
"$BIN" --quiet make-model --arch qwen3 --out "$TMP/doc/org/tiny" >/dev/null
"$BIN" --quiet make-model --arch llama --seed 3 --out "$TMP/doc/org/gated" >/dev/null
echo "s3cret" >"$TMP/doc/org/gated/.gated"
python3 - "$TMP" <<'EOF'
import json, random, sys
T = sys.argv[1]; r = random.Random(5)
w = "the a of sun plant water energy rock moon heat light cell animal food earth air".split()
with open(T + "/data/arc/genmc/arc_easy/official/test.jsonl", "w") as f:
    for i in range(24):
        ch = [{"text": " ".join(r.choice(w) for _ in range(3)), "label": "ABCD"[k]} for k in range(4)]
        f.write(json.dumps({"id": "t%d" % i, "question": {"stem": " ".join(r.choice(w) for _ in range(8)) + "?",
                            "choices": ch}, "answerKey": "ABCD"[i % 4]}) + "\n")
with open(T + "/data/brown/brown.txt", "w") as f:
    for i in range(3000): f.write(" ".join(r.choice(w) for _ in range(12)) + ".\n")
EOF
zstd -q --rm "$TMP/data/brown/brown.txt" -o "$TMP/data/brown/brown.txt.zst"

. tests/hub_server.sh
hub_start "$TMP/doc" "$TMP"
ctl() { hub_ctl "$1"; }
requests() { hub_requests; }
field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2" 2>/dev/null; }

export HF_HUB_CACHE="$TMP/hub" HF_ENDPOINT="http://127.0.0.1:$PORT" HIFA4_DATA="$TMP/data" HIFA4_CACHE="$TMP/cache"
unset HF_TOKEN HF_HUB_OFFLINE HIFA4_OFFLINE HF_HOME http_proxy HTTP_PROXY all_proxy ALL_PROXY
cd "$TMP/work"   # results/ and any older configs/scales/ must not be the repository's

# 1. a clean cache: download, calibrate, score bf16, direct, hifa4
ctl "_ctl?reset=1" >/dev/null
"$BIN" --model org/tiny --task arc_easy --limit 20 --threads 2 --out r1 >r1.out 2>r1.err
check '[ $? -eq 0 ]' "first run failed: $(tail -3 r1.err)"
SNAP=$(ls -d "$TMP"/hub/models--org--tiny/snapshots/*/ 2>/dev/null | head -1)
COMMIT=$(basename "$SNAP")
check '[ ${#COMMIT} -eq 40 ] && [ -f "$SNAP/config.json" ] && [ -f "$SNAP/model.safetensors" ] && [ -f "$SNAP/tokenizer.json" ]' \
    "no HF-layout snapshot: $(find "$TMP/hub" | head)"
check '[ "$(cat "$TMP/hub/models--org--tiny/refs/main")" = "$COMMIT" ]' "refs/main does not hold the commit $COMMIT"
check 'cmp -s "$SNAP/model.safetensors" "$TMP/doc/org/tiny/model.safetensors"' "downloaded weights differ"
n1=$(requests)
check '[ "$n1" -ge 5 ]' "first run made $n1 requests, expected API + 3 files + the 302"
check '[ "$(grep -c "calibrating first on brown" r1.err)" -eq 1 ] && grep -q "64 samples x 512 tokens, about [0-9]* CPU-s" r1.err' \
    "no one-line calibration notice: $(grep -i calib r1.err)"
check '[ "$(field r1/run.json "\",\".join(j[\"modes\"])")" = "bf16,direct,hifa4" ]' \
    "modes: $(field r1/run.json "j[\"modes\"]")"
check '[ "$(field r1/run.json "j[\"model\"][\"source\"][\"commit\"]")" = "$COMMIT" ]' "run.json lacks the commit"
check '[ "$(field r1/run.json "j[\"calibration\"][\"source\"]+str(j[\"calibration\"][\"samples\"])")" = brown64 ]' \
    "run.json lacks the calibration record"
check '[ -f r1/samples-arc_easy-hifa4.jsonl.zst ] && [ "$(field r1/run.json "j[\"complete\"]")" = True ]' "hifa4 not scored"

check '[ -e "$HF_HUB_CACHE/models--org--tiny/.no_exist/$COMMIT/tokenizer_config.json" ]' \
    "the download did not record that the commit has no tokenizer_config.json"
# 2. again: no network, no calibration, same samples
ctl "_ctl?reset=1" >/dev/null
"$BIN" --model org/tiny --task arc_easy --limit 20 --threads 2 --out r2 >r2.out 2>r2.err
check '[ $? -eq 0 ]' "second run failed: $(tail -3 r2.err)"
check '[ "$(requests)" -eq 0 ]' "second run made $(requests) requests"
check '! grep -q "calibrating" r2.err && grep -q "using Smooth-QK scales" r2.err' "second run calibrated again"
check '[ "$(field r2/run.json "j[\"scales\"][\"sha256\"]")" = "$(field r1/run.json "j[\"scales\"][\"sha256\"]")" ]' \
    "second run used other scales"
check '[ "$(field r2/run.json "\"calibration\" in j")" = False ]' "second run records a calibration"
for m in bf16 direct hifa4; do
    check 'cmp -s r1/samples-arc_easy-$m.jsonl.zst r2/samples-arc_easy-$m.jsonl.zst' "samples of $m differ between runs"
done

# 2b. a snapshot without its tokenizer.json (what AutoModel alone leaves) is completed online
rm "$SNAP/tokenizer.json"
ctl "_ctl?reset=1" >/dev/null
"$BIN" --model org/tiny --task arc_easy --limit 20 --threads 2 --out r2b >/dev/null 2>r2b.err
rc=$?
check '[ $rc -eq 0 ] && [ -f "$SNAP/tokenizer.json" ] && [ "$(requests)" -gt 0 ] && grep -q "tokenizer.json is missing" r2b.err' \
    "snapshot without tokenizer.json not completed: $(tail -2 r2b.err)"
check 'cmp -s <(zstd -dcq r1/samples-arc_easy-bf16.jsonl.zst) <(zstd -dcq r2b/samples-arc_easy-bf16.jsonl.zst)' \
    "completed snapshot scores differently"

# 3. a snapshot placed by hand, HF_HUB_OFFLINE=1, an endpoint that does not answer
HAND="$TMP/hand"; HC=0123456789abcdef0123456789abcdef01234567
mkdir -p "$HAND/models--someorg--handmade/snapshots/$HC" "$HAND/models--someorg--handmade/refs"
cp "$TMP"/doc/org/tiny/* "$HAND/models--someorg--handmade/snapshots/$HC/"
printf %s "$HC" >"$HAND/models--someorg--handmade/refs/main"
# the checkpoint has no tokenizer_config.json: without huggingface_hub's record that the commit
# has none, the snapshot may be one AutoModel alone left (tokenizer defaults would differ), so
# offline it is refused naming the file; with the record (.no_exist/<commit>/FILE) it is used
HF_HUB_CACHE="$HAND" HF_HUB_OFFLINE=1 HF_ENDPOINT=http://127.0.0.1:1 \
    "$BIN" --model someorg/handmade --task arc_easy --limit 20 --threads 2 --out r3n >/dev/null 2>r3n.err
rc=$?
check '[ $rc -eq 1 ] && grep -q "tokenizer_config.json is missing" r3n.err && [ ! -e r3n/run.json ]' \
    "snapshot without tokenizer_config.json, offline: $(tail -1 r3n.err)"
mkdir -p "$HAND/models--someorg--handmade/.no_exist/$HC" && : >"$HAND/models--someorg--handmade/.no_exist/$HC/tokenizer_config.json"
ctl "_ctl?reset=1" >/dev/null
HF_HUB_CACHE="$HAND" HF_HUB_OFFLINE=1 HF_ENDPOINT=http://127.0.0.1:1 \
    "$BIN" --model someorg/handmade --task arc_easy --limit 20 --threads 2 --out r3 >r3.out 2>r3.err
check '[ $? -eq 0 ] && [ "$(field r3/run.json "j[\"model\"][\"source\"][\"commit\"]")" = $HC ]' \
    "hand-placed snapshot offline: $(tail -2 r3.err)"
check '[ "$(field r3/run.json "j[\"model\"][\"path\"]")" = "$HAND/models--someorg--handmade/snapshots/$HC" ]' \
    "hand-placed snapshot not used in place"
# the items, not the stamp frame (it names each run's configuration key, which differs)
check 'cmp -s <(zstd -dcq r1/samples-arc_easy-bf16.jsonl.zst) <(zstd -dcq r3/samples-arc_easy-bf16.jsonl.zst)' "hand-placed copy scores differently"
check '[ "$(requests)" -eq 0 ]' "offline run made requests"
HF_HUB_CACHE="$HAND" HF_HUB_OFFLINE=1 "$BIN" --model someorg/absent --task arc_easy --limit 2 --out r3b >/dev/null 2>r3b.err
rc=$?
check '[ $rc -eq 1 ] && grep -q "offline: model someorg/absent@main is not in the Hugging Face cache" r3b.err && grep -q "models--someorg--absent/refs/main" r3b.err' \
    "offline and absent: exit $rc: $(cat r3b.err)"

# 4. a gated repository: 401 without the token, fine with it
"$BIN" --model org/gated --task arc_easy --limit 2 --attn bf16 --out r4a >/dev/null 2>r4a.err
rc=$?
check '[ $rc -eq 1 ] && grep -q 401 r4a.err && grep -q HF_TOKEN r4a.err' "gated without token: exit $rc: $(cat r4a.err)"
HF_TOKEN=s3cret "$BIN" --model org/gated --task arc_easy --limit 2 --attn bf16 --out r4b >/dev/null 2>r4b.err
check '[ $? -eq 0 ] && [ -f "$(ls -d "$TMP"/hub/models--org--gated/snapshots/*/)model.safetensors" ]' \
    "gated with token: $(tail -2 r4b.err)"
check '[ "$(ctl _stats | sed -E "s/.*auth=//")" = Bearer_s3cret ]' "token not sent as a bearer"

# 5. @COMMIT, --scales none, an explicit hifa4 with no calibration text
"$BIN" --model "org/tiny@$COMMIT" --task arc_easy --limit 20 --scales none --threads 2 --out r5 >/dev/null 2>r5.err
check '[ $? -eq 0 ] && [ "$(field r5/run.json "\",\".join(j[\"modes\"])")" = bf16,direct ]' \
    "@commit --scales none: $(tail -2 r5.err)"
check 'cmp -s <(zstd -dcq r1/samples-arc_easy-direct.jsonl.zst) <(zstd -dcq r5/samples-arc_easy-direct.jsonl.zst)' "@commit scores another model"
mkdir -p "$TMP/arc_only" && cp -r "$TMP/data/arc" "$TMP/arc_only/"
HIFA4_DATA="$TMP/nodata" "$BIN" --model "$TMP/doc/org/gated" --task arc_easy --data-dir "$TMP/arc_only" --limit 2 \
    --attn bf16,hifa4 --out r5b >/dev/null 2>r5b.err
rc=$?
check '[ $rc -ne 0 ] && grep -q "brown" r5b.err && grep -q "scales none" r5b.err' "hifa4 without text: exit $rc: $(cat r5b.err)"

# 6. a registry name is a shortcut for its hub id: found in the Hugging Face cache, no request
mkdir -p "$TMP/home/configs/models"
echo '{"name": "tinyname", "repo": "org/tiny", "revision": "main", "files": ["config.json"]}' \
    >"$TMP/home/configs/models/tinyname.json"
ctl "_ctl?reset=1" >/dev/null
HIFA4_HOME="$TMP/home" "$BIN" --model tinyname --task arc_easy --limit 20 --scales none --threads 2 --out r6 >/dev/null 2>r6.err
check '[ $? -eq 0 ] && [ "$(field r6/run.json "j[\"model\"][\"name\"]+\" \"+j[\"model\"][\"source\"][\"commit\"]")" = "tinyname $COMMIT" ]' \
    "named model via the hub cache: $(tail -2 r6.err)"
check '[ "$(requests)" -eq 0 ]' "named model in the cache made requests"

echo "test_hub: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
