#!/usr/bin/env bash
# build-site.sh [BUILD_DIR]: the page as one self-contained folder, BUILD_DIR/site/ (default
# build/site/), that works from any static file server, one that cannot set headers included (the
# page's service worker, sw.js, adds the isolation headers and reloads once). docs/page.md, "Static
# hosting". It holds:
#
#   index.html app.mjs style.css sw.js toolsets.json models.json ui/ engine/   the page (site/, without
#                                                                              the dev server)
#   engine.wasm toolcall.mjs toolcall.wasm                                     from BUILD_DIR
#   models/NAME.cact                                                           each archive models.json lists
#
# models.json must agree with the archives (scripts/models-json.mjs --check); the folder is written
# under a temporary name and renamed, so a failed build never leaves half a site. NEEDLE_MODELS_DIR
# names another folder of archives (a stand-in while developing).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out="$build/site"
models=${NEEDLE_MODELS_DIR:-models}

for f in engine.wasm toolcall.mjs toolcall.wasm; do
  if [ ! -f "$build/$f" ]; then
    echo "build-site: $build/$f is missing: run bash scripts/build.sh first (npm run build:site does)" >&2
    exit 1
  fi
done
if ! node scripts/models-json.mjs --check --models "$models"; then
  echo "build-site: site/models.json disagrees with the archives above; node scripts/models-json.mjs rewrites it" >&2
  exit 1
fi

tmp="$out.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
rm -rf "$tmp"
mkdir -p "$tmp/models"
(cd site && find . -type f ! -name server.mjs -print0) | while IFS= read -r -d '' f; do
  mkdir -p "$tmp/$(dirname "$f")"
  cp "site/$f" "$tmp/$f"
done
cp "$build/engine.wasm" "$build/toolcall.mjs" "$build/toolcall.wasm" "$tmp/"
node -e 'for (const m of require("./site/models.json")) console.log(m.url.slice("models/".length))' |
  while IFS= read -r name; do cp "$models/$name" "$tmp/models/$name"; done
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "build-site: $out ($(find "$out" -type f | wc -l) files, $(du -sh "$out" | cut -f1)); publish it with any static file server"
