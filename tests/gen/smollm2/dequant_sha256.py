#!/usr/bin/env python3
"""sha256 of every tensor of SmolLM2-135M-Instruct.Q4_1.gguf dequantized by gguf-py (llama.cpp's
own Python: gguf.quants.dequantize), as little-endian float32 in the file's ggml layout (no Q/K
permutation). tests/test_gguf_import.c dequantizes the same file with io/ggml_quants.c and must
get the same 272 hashes: every weight bit-exact, not only the random blocks of
tests/data/gguf/dequant_ref.json.zst.

Output: tests/data/gguf/smollm2_dequant_sha256.txt  (name <TAB> type <TAB> sha256)

Ran once with Python 3.11.2, numpy 1.24.2, gguf 0.19.0 (python3 -m venv v && v/bin/pip install gguf numpy):
  python tests/gen/smollm2/dequant_sha256.py PATH/SmolLM2-135M-Instruct.Q4_1.gguf > tests/data/gguf/smollm2_dequant_sha256.txt
"""
import hashlib
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

r = GGUFReader(sys.argv[1])
for t in r.tensors:
    a = np.ascontiguousarray(dequantize(t.data, t.tensor_type), dtype="<f4")
    assert a.size == int(np.prod(t.shape)), t.name
    print(f"{t.name}\t{t.tensor_type.name}\t{hashlib.sha256(a.tobytes()).hexdigest()}")
