#!/bin/sh
# llama_build.sh: builds llama.cpp's command-line tools (llama-perplexity, llama-quantize) from
# the llama.cpp source vendored in the llama-cpp-python sdist on PyPI, for the side-by-side
# speed comparison in docs/results/speed.md (scripts/llama_compare.sh). Never part of `make test`;
# nothing of llama.cpp enters the repository: source and binaries live in the cache dir.
#   usage: scripts/llama_build.sh            (env: LLAMA_CACHE, default ~/.cache/hifa4/llamacpp;
#                                             LLAMA_PY_VERSION, default 0.3.36; JOBS, default 2)
# Prints the bin directory on its last line.
set -eu
CACHE=${LLAMA_CACHE:-$HOME/.cache/hifa4/llamacpp}
VER=${LLAMA_PY_VERSION:-0.3.36}
JOBS=${JOBS:-2}
mkdir -p "$CACHE"
cd "$CACHE"
SDIST=llama_cpp_python-$VER.tar.gz
[ -f "$SDIST" ] || pip download --no-binary :all: --no-deps "llama-cpp-python==$VER" -d .
[ -d "llama_cpp_python-$VER" ] || tar xzf "$SDIST"
SRC=$CACHE/llama_cpp_python-$VER/vendor/llama.cpp
B=$CACHE/build-$VER
if [ ! -x "$B/bin/llama-perplexity" ] || [ ! -x "$B/bin/llama-quantize" ]; then
    cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_OPENMP=ON \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
        -DLLAMA_BUILD_TOOLS=ON -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF >"$B.cmake.log" 2>&1 ||
        { tail -20 "$B.cmake.log"; exit 1; }
    cmake --build "$B" -j "$JOBS" --target llama-perplexity llama-quantize >"$B.build.log" 2>&1 ||
        { tail -20 "$B.build.log"; exit 1; }
fi
echo "$B/bin"
