#!/usr/bin/env bash
# setup.sh [--bench] [--browser]: makes sure the Debian packages that building and testing need are
# installed. As root it installs what is missing with apt-get; otherwise it prints the exact command.
#
# Always: the C++ toolchain and libraries, wabt (engine.wat), emscripten (the tool-call library is
# built to wasm for the page), and Debian's Python with PyTorch for tools/train/ (python3-torch runs
# on a generic BLAS unless libopenblas0-pthread is installed: about 3x slower training), and the
# wamerican word list that training values are built from (tools/train/wordlists.py).
set -euo pipefail

packages=()
need() {  # need PACKAGE PATH: PATH shows whether the package is installed
  [ -e "$2" ] || packages+=("$1")
}
need g++ /usr/bin/g++
need cmake /usr/bin/cmake
need catch2 /usr/include/catch2/catch.hpp
need sentencepiece /usr/bin/spm_train
need libsentencepiece-dev /usr/include/sentencepiece_processor.h
need wabt /usr/bin/wat2wasm
need nodejs /usr/bin/node
need emscripten /usr/bin/em++
need python3 /usr/bin/python3
need python3-torch /usr/lib/python3/dist-packages/torch/__init__.py
need python3-numpy /usr/lib/python3/dist-packages/numpy/__init__.py
need python3-sentencepiece /usr/lib/python3/dist-packages/sentencepiece/__init__.py
need python3-matplotlib /usr/lib/python3/dist-packages/matplotlib/__init__.py
need wamerican /usr/share/dict/american-english
need libopenblas0-pthread /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0
for arg in "$@"; do
  case "$arg" in
    --bench) ;;  # emscripten is always installed now
    --browser) need chromium /usr/bin/chromium ;;
  esac
done

[ ${#packages[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "setup: installing ${packages[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}"
else
  echo "setup: missing Debian packages. Run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${packages[*]}" >&2
  exit 1
fi
