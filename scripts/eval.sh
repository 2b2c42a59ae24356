#!/usr/bin/env bash
# eval.sh [evaluate.py options]: `npm run eval`, exact-match accuracy of our trained model on the
# held-out splits A, B and C in every engine (docs/evaluation.md).
#
# Builds what the evaluation runs, in the build directory (NEEDLE_BUILD_DIR, default build): needle-run,
# libneedle_toolcall.so (the float model's session), engine.wasm and the tool-call module
# (toolcall.mjs + toolcall.wasm); then runs tools/train/evaluate.py, whose defaults are what
# scripts/train.sh makes (build/train/needlework-tools.cact, build/train/checkpoint.pt,
# build/train/data, build/train/tokenizer/tokenizer.model). Results: build/eval/results.json and
# build/eval/mismatches.md. Options go to evaluate.py: `npm run eval -- --count 100`.
#
# --shipped (first): the shipped archive (the first of site/models.json, the page's default:
# models/needlework-tools.cact) in needle-run and wasm, asked as the page asks it (evaluate.py takes its no-call bias from site/models.json), on the recipe's held-out
# splits (made by `train.sh --data-only` when missing, about a minute); no training needed. Its float
# checkpoint is not shipped: add --checkpoint and --engines to evaluate one.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${NEEDLE_BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)

bash scripts/setup.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$jobs" --target needle-run needle_toolcall
bash scripts/build-engine.sh "$build/engine.wasm"
JOBS=$jobs bash scripts/build-toolcall-wasm.sh "$build"
if [ "${1:-}" = --shipped ]; then
  shift
  NEEDLE_BUILD_DIR=$build bash scripts/train.sh --data-only
  shipped=$(node -e 'console.log(require("./site/models.json")[0].url)')
  exec /usr/bin/python3 tools/train/evaluate.py --build "$build" --archive "$shipped" \
    --data "${NEEDLE_TRAIN_DIR:-build/train}/data" --engines needle-run,wasm "$@"
fi
exec /usr/bin/python3 tools/train/evaluate.py --build "$build" "$@"
