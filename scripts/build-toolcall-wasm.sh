#!/usr/bin/env bash
# build-toolcall-wasm.sh [OUT_DIR]: builds the tool-call library (host/toolcall/, its C API capi.h) with
# Emscripten into OUT_DIR (default build/): toolcall.mjs (an ES module whose default export makes an
# instance) + toolcall.wasm. The page and tools/needle-wasm.mjs load it beside engine.wasm: the driver
# Worker runs the one tool-call session (host/toolcall/session.cpp) with engine.wasm as its backend
# (docs/engine.md, "Tool calls"; host/wasm/toolcall_module.cpp is the glue).
#
# The sources are CMakeLists.txt's TOOLCALL_CAPI_SOURCES (read from there: the same list as
# libneedle_toolcall.so, docs/toolcall.md "The C API") plus the glue, host/wasm/toolcall_module.cpp.
# scripts/em-objects.sh (shared with scripts/build-ref-wasm.sh) compiles the objects: each is rebuilt
# only when its source, a header it includes, or the flags changed.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build}
jobs=${JOBS:-2}

if ! command -v em++ >/dev/null; then
  echo "build-toolcall-wasm: em++ not found; run: bash scripts/setup.sh" >&2
  exit 1
fi
# Debian's emscripten runs its JavaScript tools under Node, which must find Debian's acorn & co.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}

read -r -a library_sources <<<"$(sed -n '/^set(TOOLCALL_CAPI_SOURCES/,/)/p' CMakeLists.txt |
                                  sed -e 's/^set(TOOLCALL_CAPI_SOURCES//' -e 's/)//' | tr '\n' ' ')"
if [ ${#library_sources[@]} -eq 0 ]; then
  echo "build-toolcall-wasm: no TOOLCALL_CAPI_SOURCES list in CMakeLists.txt" >&2
  exit 1
fi
program_sources=(host/wasm/toolcall_module.cpp)
sources=("${library_sources[@]}" "${program_sources[@]}")
for f in "${sources[@]}"; do
  [ -f "$f" ] || { echo "build-toolcall-wasm: $f is missing" >&2; exit 1; }
done

# Exceptions: the library reports bad input by throwing needle::Error, and capi.cpp catches everything
# at its extern "C" functions. Catching is enabled everywhere (-fexceptions, Emscripten's
# JavaScript-based exceptions; 3.1.6 has no prebuilt libc++abi for wasm exceptions), so that a throw
# runs the destructors of every frame it leaves. Allowing catches only in the C API functions
# (EXCEPTION_CATCHING_ALLOWED) skips them instead: measured, 1.4 KB leaked per refused tools check
# (55 MB after 40,000 checks; the page checks as the visitor types), for a constraint 5% cheaper
# (0.43 against 0.45 ms per token on micro.cact) and a module of 259 KB instead of 361 KB.
compile_flags=(-std=c++20 -O3 -ffp-contract=off -DNDEBUG -Ihost -fexceptions)
# MODULARIZE + EXPORT_ES6: `import create from './toolcall.mjs'; const m = await create({...})`.
# ENVIRONMENT web,worker only: the driver hands the module its compiled bytes (instantiateWasm), so it
# reads no file; 3.1.6's Node branch uses __dirname and require, which an ES module does not have, and
# would install process-wide handlers. The web/worker code runs unchanged under Node (tested).
# No file system, memory that grows (the token table and masks are a few MB), EM_JS imports for the
# backend (no function table to grow).
exported_runtime='[UTF8ToString,stringToUTF8,lengthBytesUTF8]'
link_flags=(-O3 -fexceptions
            -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createToolcallModule -sENVIRONMENT=web,worker
            -sFILESYSTEM=0 -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=2GB
            "-sEXPORTED_RUNTIME_METHODS=$exported_runtime"
            "-sINCOMING_MODULE_JS_API=[instantiateWasm,print,printErr]")

obj_dir="$out/toolcall-obj"
# shellcheck source=scripts/em-objects.sh
source scripts/em-objects.sh
em_compile_objects build-toolcall-wasm "$obj_dir" "${sources[@]}"
objects=("${em_objects[@]}")

relink=0
[ -f "$out/toolcall.mjs" ] && [ -f "$out/toolcall.wasm" ] || relink=1
for f in "${objects[@]}" "$0" "$em_stamp"; do [ "$f" -nt "$out/toolcall.mjs" ] && relink=1; done
if [ $relink = 1 ]; then
  echo "em++ -o $out/toolcall.mjs"
  # linked under temporary names and renamed, so that a reader never sees half a module
  em++ "${link_flags[@]}" "${objects[@]}" -o "$obj_dir/toolcall.mjs"
  mv "$obj_dir/toolcall.wasm" "$out/toolcall.wasm"
  mv "$obj_dir/toolcall.mjs" "$out/toolcall.mjs"
fi
echo "build-toolcall-wasm: $out/toolcall.mjs + toolcall.wasm ($(stat -c %s "$out/toolcall.wasm") bytes of wasm)"
