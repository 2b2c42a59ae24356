#!/usr/bin/env bash
# setup.sh [--bench] [--browser]: makes sure the Debian packages that building and testing need are
# installed. As root it installs what is missing with apt-get; otherwise it prints the exact command.
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
for arg in "$@"; do
  case "$arg" in
    --bench) need emscripten /usr/bin/em++ ;;
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
