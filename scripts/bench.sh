#!/usr/bin/env bash
# bench.sh [bench.mjs options]: what `npm run bench` runs. Builds whatever is missing (emscripten is
# installed if needed, the native tools, the Emscripten build of the reference, the wasm engine), packs
# the benchmark archives, then runs scripts/bench.mjs, which prints the speed table (and, with the
# tool-call module and the test models, what the call grammar costs per reply token). A benchmark,
# not a test: it exits 0 whatever the figures are, and non-zero only when the native tools could not be built
# or a run of the C++ reference failed (rows that cannot be built are reported as not built).
#
# NEEDLE_BUILD_DIR (default build) is the native CMake build directory; build-emscripten/ holds the
# Emscripten build. See docs/benchmarks.md for the method and how to read the table.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${NEEDLE_BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)

# The native tools are required; emscripten and the engine are not: a row that cannot be built is
# reported as not built and the others still run. A failed build removes the old output, so that a
# stale program is never timed.
bash scripts/setup.sh
bash scripts/setup.sh --bench || echo "bench: emscripten is not installed; the em++ rows are skipped"

echo "== native tools ($build/bin, CMake Release: -O3)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$jobs" --target needle-ref needle-pack needle-run needle-corpus

echo "== the reference built with Emscripten (build-emscripten/)"
if command -v em++ >/dev/null && JOBS=$jobs bash scripts/build-ref-wasm.sh build-emscripten; then :; else
  echo "bench: the Emscripten build of needle-ref failed; its rows are skipped"
  rm -f build-emscripten/needle-ref.js
fi

echo "== the wasm engine"
if [ -f engine.wat ] && [ -f scripts/build-engine.sh ] && bash scripts/build-engine.sh "$build/engine.wasm"; then :; else
  echo "bench: the engine is not built (engine.wat missing or it did not assemble)"
  rm -f "$build/engine.wasm"
fi

echo "== the tool-call module ($build/toolcall.mjs) and the test models with a tokenizer ($build/models)"
toolcall_args=()
if command -v em++ >/dev/null && JOBS=$jobs bash scripts/build-toolcall-wasm.sh "$build" &&
   bash scripts/make-test-models.sh "$build"; then
  toolcall_args=(--toolcall-archive "$build/models/base.cact")
else
  echo "bench: the tool-call rows are skipped (toolcall.wasm or the test models could not be built)"
fi

# The archives: random weights at the real Needle 2 geometry (base, with the real per-tensor bits), and
# a tiny one for the check that the Emscripten build computes what the native one does. Ids only: the
# benchmark feeds token ids, so no tokenizer is needed. Packed once; the seed makes them reproducible.
mkdir -p "$build/bench"
for geometry in base tiny; do
  archive="$build/bench/$geometry.cact"
  if [ ! -f "$archive" ] || [ "$build/bin/needle-pack" -nt "$archive" ]; then
    "$build/bin/needle-pack" --random --geometry "$geometry" --seed 1 -o "$archive.tmp"
    mv "$archive.tmp" "$archive"
  fi
done

echo "== benchmark"
exec node scripts/bench.mjs --build "$build" --emscripten build-emscripten \
  --archive "$build/bench/base.cact" --tiny "$build/bench/tiny.cact" "${toolcall_args[@]}" "$@"
