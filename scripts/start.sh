#!/usr/bin/env bash
# start.sh [--dev] [--quiet]: builds whatever is missing (library, tools, engine, tool-call module) and
# serves the page on http://127.0.0.1:${PORT:-8080}/ with the shipped model of models/ (docs/page.md,
# "The dev server"). --dev also makes the test models of build/models/ and offers them; --quiet
# logs no requests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
if [[ " $* " == *" --dev "* ]]; then bash scripts/make-test-models.sh build; fi
if ! node scripts/models-json.mjs --check; then
  echo "start: site/models.json disagrees with models/ (above): the page will refuse that download" >&2
fi
exec node site/server.mjs --port "${PORT:-8080}" --build build "$@"
