#!/usr/bin/env bash
# build.sh: installs missing packages, then builds the C++ library, tools and tests into build/
# (executables in build/bin/), the wasm engine into build/engine.wasm and the tool-call library with
# Emscripten into build/toolcall.mjs + toolcall.wasm (the page and needle-wasm load both). Incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "$@"
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
if [ -f engine.wat ]; then bash scripts/build-engine.sh; fi
JOBS=$jobs bash scripts/build-toolcall-wasm.sh build
