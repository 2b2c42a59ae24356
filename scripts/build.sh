#!/usr/bin/env bash
# build.sh: installs missing packages, then builds the C++ library, tools and tests into build/
# (executables in build/bin/) and the wasm engine into build/engine.wasm. Incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "$@"
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
if [ -f engine.wat ]; then bash scripts/build-engine.sh; fi
