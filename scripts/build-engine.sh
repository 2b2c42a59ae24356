#!/usr/bin/env bash
# build-engine.sh: assembles engine.wat into build/engine.wasm (threads on; SIMD is on by default in
# wabt 1.0.32) and validates the result. Usage: scripts/build-engine.sh [OUTPUT]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/build/engine.wasm}"
mkdir -p "$(dirname "$out")"
wat2wasm --enable-threads --debug-names "$root/engine.wat" -o "$out"   # names: readable profiles and traces
wasm-validate --enable-threads "$out"
echo "engine: $out ($(wc -c < "$out") bytes)"
