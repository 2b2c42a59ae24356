#!/usr/bin/env bash
# start.sh: builds whatever is missing (library, tools, engine, the offline models in build/models/)
# and serves the page on http://127.0.0.1:${PORT:-8080}/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bash scripts/make-test-models.sh build
exec node site/server.mjs --port "${PORT:-8080}" --build build
