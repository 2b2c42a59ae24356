#!/usr/bin/env bash
# test.sh: builds whatever is missing, then runs every test: the C++ tests (ctest, which first makes
# build/models/), the C++ unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer, and
# the Node tests of the wasm engine.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

bash scripts/build.sh --browser
# playwright-core drives Debian's Chromium in the browser test (it never downloads a browser); ajv
# checks the tool-call tests' arguments against their JSON Schemas.
[ -d node_modules/playwright-core ] && [ -d node_modules/ajv ] || npm install --no-audit --no-fund
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DNEEDLE_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan -L unit --output-on-failure -j"$jobs"

if compgen -G "tests/node/*.test.mjs" >/dev/null; then
  echo "== node tests"
  NEEDLE_BUILD_DIR=build node --test tests/node/
fi
