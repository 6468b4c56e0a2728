#!/usr/bin/env bash
# Builds a venvtx that runs on a machine without our -dev packages (e.g. the GPU machine):
# libstdc++ linked statically, every other non-glibc library copied beside it under lib/,
# found through RPATH $ORIGIN/lib. Output: dist/venvtx and dist/lib/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build-portable -DCMAKE_BUILD_TYPE=Release -DVENVTX_PORTABLE=ON -DBUILD_TESTING=OFF >/dev/null
cmake --build build-portable -j "$(nproc)" --target venvtx
rm -rf dist && mkdir -p dist/lib
cp build-portable/venvtx dist/
ldd dist/venvtx | awk '/=> \// { print $3 }' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" dist/lib/; done
echo "dist/venvtx with $(ls dist/lib | wc -l) libraries in dist/lib"
