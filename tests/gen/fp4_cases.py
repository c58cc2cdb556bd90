#!/usr/bin/env python3
"""Small sage3 attention cases for tests/test_sage3.c, written by the spec's reference emulation
(shared/spec/fp4_attention_ref.py, numpy) in the case-file layout of `hifa4-eval attn --case`.
The C tests never run python: the cases are committed zstd-compressed under tests/data/fp4/.

    HIFA4_TEST_DATA=../shared python3 tests/gen/fp4_cases.py tests/data/fp4   (then zstd -19)
"""
import json
import math
import os
import sys

root = os.environ.get('HIFA4_TEST_DATA', '../shared')
sys.path.insert(0, os.path.join(root, 'spec'))
import numpy as np  # noqa: E402
import fp4_attention_ref as A  # noqa: E402

F32 = np.float32
# name, T, H, Hkv, d, window, generator options: two query groups / tiles (T > 128), GQA, a
# partial last group, a sliding window and a K outlier with offsets (the K-mean's purpose)
CASES = [
    ('sage3-t150-h2-kv1-d64', 150, 2, 1, 64, 0, {'sigma': 1.0, 'v_offset': 1.0}),
    ('sage3-t140-h4-kv2-d32-w50', 140, 4, 2, 32, 50,
     {'sigma': 1.0, 'q_offset': 4.0, 'k_offset': 3.0, 'k_outlier': 20.0, 'v_offset': 2.0}),
]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for idx, (name, T, H, Hkv, d, window, opts) in enumerate(CASES):
        rng = np.random.RandomState(2000 + idx)
        q, k, v, ch = A.make_qkv(rng, T, H, Hkv, d, **opts)
        sm64 = 1.0 / math.sqrt(d)
        sm = F32(sm64)
        t = {'q': q, 'k': k, 'v': v, 'out.f32': A.attention_f64(q, k, v, window=window, sm64=sm64)}
        for suffix, mode, skip in A.OUTPUTS:
            t['out.%s.bc128' % suffix] = A.sage3_attention(q, k, v, window=window, sm=sm,
                                                          preorder=(mode == 'sage3+preorder'), skip=skip)
        params = {'T': T, 'H': H, 'Hkv': Hkv, 'd': d, 'window': window if window else None, 'softcap': None,
                  'sm': sm64, 'sm_binary32_hex': A.R.hex32(sm), 'tiles': [128], 'modes': ['f32', 'sage3', 'sage3+preorder'], 'seed': 2000 + idx,
                  'generator': opts, 'spec': 'shared/spec/fp4.md section 5; tests/gen/fp4_cases.py'}
        A.write_safetensors(os.path.join(out, name + '.safetensors'), t,
                            {'params': json.dumps(params), 'rig': 'fp4-ref-1'})
        print(name, ', '.join('%s %.3g' % (s, A.rel_l2(t['out.%s.bc128' % s], t['out.f32'])) for s, _, _ in A.OUTPUTS))


if __name__ == '__main__':
    main()
