#!/usr/bin/env bash
# Regenerates the committed fixtures of our own numerics (tests/data/spec, tests/data/goldens)
# from the data root ($HIFA4_TEST_DATA, default ../shared): each file zstd -19 compressed at
# tests/data/<rel>.zst, and tests/data/SHA256SUMS with the sha256 of every original, so that
# `cd ../shared && sha256sum -c <repo>/tests/data/SHA256SUMS` checks a data root against them
# and tests/test_fixtures.c checks the committed copies. Third-party data (tokenizers,
# datasets, stories260K) is never listed here. See tests/data/README.md for the choice of files.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=${HIFA4_TEST_DATA:-../shared}
files=(
    spec/hif4_vectors.jsonl
    spec/hif4_vectors_special.jsonl
    spec/fp4_vectors.jsonl
    spec/fp4_vectors_special.jsonl
    goldens/attention/attn-t200-h4-kv2-d128.safetensors
    goldens/attention/attn-t77-h2-kv1-d64-w32.safetensors
    goldens/attention/attn-t130-h4-kv2-d32-cap10.safetensors
    goldens/models/qwen3-tiny/config.json
    goldens/models/qwen3-tiny/model.safetensors
    goldens/logits/qwen3-tiny.safetensors
)
# Ours, with no original in the data root: made by tests/gen/gemma3_tiny.py (transformers
# 4.50.0 in float64, see tests/data/README.md); kept as they are, their SHA256SUMS lines carried over.
own=(
    goldens/models/gemma3-tiny/config.json
    goldens/models/gemma3-tiny/model.safetensors
    goldens/logits/gemma3-tiny.safetensors
)
kept=$(grep -F "$(printf '  %s\n' "${own[@]}")" tests/data/SHA256SUMS || true)
rm -f $(printf 'tests/data/%s.zst ' "${files[@]}")
: > tests/data/SHA256SUMS
for f in "${files[@]}"; do
    mkdir -p "tests/data/$(dirname "$f")"
    zstd -19 -q -f --no-progress "$root/$f" -o "tests/data/$f.zst"
    (cd "$root" && sha256sum "$f") >> tests/data/SHA256SUMS
done
[ -z "$kept" ] || printf '%s\n' "$kept" >> tests/data/SHA256SUMS
chmod 644 $(printf 'tests/data/%s.zst ' "${files[@]}")
du -ch $(printf 'tests/data/%s.zst ' "${files[@]}" "${own[@]}") | tail -1
