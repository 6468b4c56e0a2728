#!/usr/bin/env bash
# Builds a fully static venvtx (glibc included: it needs no library on the machine it runs on)
# and packs it with its man page, completions and docs into
# dist/venvtx-<version>-linux-x86_64.tar.gz, laid out as a prefix (bin/, share/: unpack it with
# --strip-components=1 into ~/.local or /usr/local), with dist/SHA256SUMS beside it. Prints the
# tarball's path.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so another clone of the same sources hits it.
export CCACHE_BASEDIR="$PWD"
bash scripts/setup.sh >&2
options=()
command -v ninja >/dev/null && [ ! -f build-static/CMakeCache.txt ] && options+=(-G Ninja)
command -v ccache >/dev/null && options+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-static "${options[@]}" -DCMAKE_BUILD_TYPE=Release -DVENVTX_STATIC=ON \
  -DBUILD_TESTING=OFF >/dev/null
cmake --build build-static -j "$(nproc)" --target venvtx venvtx_docs >&2
if readelf -d build-static/venvtx | grep -q NEEDED; then
  echo "release: build-static/venvtx is not fully static" >&2
  exit 1
fi
version=$(build-static/venvtx --version | awk '{ print $2 }')
name="venvtx-$version-linux-x86_64"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name/bin" "$stage/$name/share/man/man1" "$stage/$name/share/bash-completion/completions" \
  "$stage/$name/share/zsh/vendor-completions" "$stage/$name/share/fish/vendor_completions.d" \
  "$stage/$name/share/doc/venvtx"
strip -o "$stage/$name/bin/venvtx" build-static/venvtx
cp build-static/share/venvtx.1 "$stage/$name/share/man/man1/"
cp build-static/share/venvtx.bash "$stage/$name/share/bash-completion/completions/venvtx"
cp build-static/share/_venvtx "$stage/$name/share/zsh/vendor-completions/"
cp build-static/share/venvtx.fish "$stage/$name/share/fish/vendor_completions.d/"
cp README.md LICENSE docs/json.md "$stage/$name/share/doc/venvtx/"
mkdir -p dist
tar -C "$stage" --owner=0 --group=0 --sort=name -czf "dist/$name.tar.gz" "$name"
(cd dist && sha256sum "$name.tar.gz" > SHA256SUMS)
echo "dist/$name.tar.gz"
