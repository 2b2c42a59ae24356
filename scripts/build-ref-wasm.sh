#!/usr/bin/env bash
# build-ref-wasm.sh [OUT_DIR]: builds the C++ reference `needle-ref` with Emscripten (em++ -O3
# -msimd128) into OUT_DIR (default build-emscripten/): needle-ref.js + needle-ref.wasm, run under Node,
# and a `needle-ref` shell wrapper that does that. This is the benchmark's "the same C++ compiled to
# wasm by a compiler" baseline; the hand-written engine is measured against it.
#
# It compiles host/*.cpp into a static library, like the CMake project's `needle`, and links it with
# tools/cli.cpp + tools/needle-ref.cpp, so only the objects needle-ref uses end up in the program. Each
# object is rebuilt only when its source, a header it includes, or the flags changed
# (scripts/em-objects.sh, shared with scripts/build-toolcall-wasm.sh). The CMake project
# is not used because it needs the host's libsentencepiece and Catch2, which an Emscripten build cannot
# link. Left out, because needle-ref does not use them and they do not build here:
#   host/spm_import.cpp   libsentencepiece (importing a .model when packing)
#   host/safetensors.cpp  float std::from_chars, which emscripten 3.1.6's libc++ (clang 14) lacks
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-emscripten}
jobs=${JOBS:-2}

if ! command -v em++ >/dev/null; then
  echo "build-ref-wasm: em++ not found; run: bash scripts/setup.sh --bench" >&2
  exit 1
fi
# Debian's emscripten runs its JavaScript tools under Node, which must find Debian's acorn & co.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}

library_sources=()
for f in host/*.cpp; do
  case "$(basename "$f")" in
    spm_import.cpp|safetensors.cpp) ;;
    *) library_sources+=("$f") ;;
  esac
done
program_sources=(tools/cli.cpp tools/needle-ref.cpp)
sources=("${library_sources[@]}" "${program_sources[@]}")
for f in "${sources[@]}"; do
  [ -f "$f" ] || { echo "build-ref-wasm: $f is missing" >&2; exit 1; }
done

# Exceptions: Emscripten's default turns every C++ throw into an abort with no message. Catching them
# everywhere (-fexceptions) would wrap every call that may throw in a JavaScript trampoline, which is
# not the plain `em++ -O3 -msimd128` program we want to measure. So only the one catch that matters is
# kept: the try/catch in needle::cli::run that prints "needle-ref: <message>" and exits 1. The list
# takes the mangled name of that function (checked below, after compiling tools/cli.cpp).
cli_run='_ZN6needle3cli3runEPKcS2_iPPcRKNSt3__28functionIFiRNS0_4ArgsEEEE'
compile_flags=(-std=c++20 -O3 -msimd128 -ffp-contract=off -DNDEBUG -Ihost -Itools
               "-sEXCEPTION_CATCHING_ALLOWED=[$cli_run]")
# NODERAWFS: the program sees the real file system through Node (it reads --archive FILE from disk).
# WASM_ASYNC_COMPILATION=0: Node 20's fetch would otherwise be tried on a file path.
# Memory grows as the archive and the state need it (a base archive is tens of MB).
link_flags=(-O3 -msimd128 "-sEXCEPTION_CATCHING_ALLOWED=[$cli_run]"
            -sENVIRONMENT=node -sNODERAWFS=1 -sWASM_ASYNC_COMPILATION=0 -sEXIT_RUNTIME=1
            -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB)

# shellcheck source=scripts/em-objects.sh
source scripts/em-objects.sh
em_compile_objects build-ref-wasm "$out/obj" "${sources[@]}"
library_objects=("${em_objects[@]:0:${#library_sources[@]}}")
program_objects=("${em_objects[@]:${#library_sources[@]}}")
# If cli::run's signature changed, its mangled name did too, and errors would abort without a message.
# (the symbol table is read whole first: grep -q closing the pipe early would fail the pipeline)
symbols=$(emnm "$out/obj/tools_cli.o" 2>/dev/null || true)
if ! grep -q " T $cli_run\$" <<<"$symbols"; then
  echo "build-ref-wasm: warning: $cli_run is not defined in tools/cli.cpp any more;" \
       "update cli_run in this script, or error messages are lost" >&2
fi

# The library is rebuilt from scratch whenever an object is newer (a removed source leaves nothing).
library="$out/obj/libneedle.a"
for obj in "${library_objects[@]}"; do
  if [ ! -f "$library" ] || [ "$obj" -nt "$library" ]; then
    rm -f "$library"
    emar rcs "$library" "${library_objects[@]}"
    break
  fi
done
relink=0
[ -f "$out/needle-ref.js" ] && [ -f "$out/needle-ref.wasm" ] || relink=1
for f in "${program_objects[@]}" "$library"; do [ "$f" -nt "$out/needle-ref.js" ] && relink=1; done
if [ $relink = 1 ]; then
  echo "em++ -o $out/needle-ref.js"
  em++ "${link_flags[@]}" "${program_objects[@]}" "$library" -o "$out/needle-ref.js"
fi

# The repository's package.json says "type": "module"; Emscripten's loader is a CommonJS script.
printf '{ "type": "commonjs" }\n' > "$out/package.json"
cat > "$out/needle-ref" <<'EOF'
#!/bin/sh
# needle-ref compiled by Emscripten: the same command line as the native one, run under Node.
exec node "$(dirname "$0")/needle-ref.js" "$@"
EOF
chmod +x "$out/needle-ref"
echo "build-ref-wasm: $out/needle-ref ($(stat -c %s "$out/needle-ref.wasm") bytes of wasm)"
