#!/usr/bin/env bash
# Configures and builds venvtx into build/ (Release; Ninja and ccache when present). With target
# names, builds only those (the demo builds just `venvtx`); without, everything, tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so another clone of the same sources hits it.
export CCACHE_BASEDIR="$PWD"
options=(-DCMAKE_BUILD_TYPE=Release)
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null; then
  options+=(-G Ninja)
fi
if command -v ccache >/dev/null; then
  options+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build "${options[@]}" >/dev/null
targets=()
for target in "$@"; do
  targets+=(--target "$target")
done
cmake --build build -j "$(nproc)" "${targets[@]}"
