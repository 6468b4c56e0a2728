#!/usr/bin/env bash
# Builds dist/venvtx-<version>-py3-none-<tags>.whl offline, from the fully static binary that
# scripts/release.sh builds: the binary as venvtx-<version>.data/scripts/venvtx, and a tiny
# `venvtx` package so that `python -m venvtx` runs it. pip, pipx and `uv tool` install it.
# It is tagged manylinux_2_17 and musllinux_1_1: a binary with no dynamic loader and no needed
# library runs on any x86-64 Linux, and the build refuses to tag one that has either.
# Prints the wheel's path.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/release.sh >/dev/null
binary=build-static/venvtx
if readelf -d "$binary" | grep -q NEEDED || readelf -l "$binary" | grep -q INTERP; then
  echo "wheel: $binary is not fully static; it cannot be tagged manylinux and musllinux" >&2
  exit 1
fi
version=$("$binary" --version | awk '{ print $2 }')
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/venvtx-$version"
mkdir -p "$root/venvtx" "$root/venvtx-$version.data/scripts" "$root/venvtx-$version.dist-info"
strip -o "$root/venvtx-$version.data/scripts/venvtx" "$binary"
cp scripts/wheel/venvtx/__init__.py scripts/wheel/venvtx/__main__.py "$root/venvtx/"
cp LICENSE "$root/venvtx-$version.dist-info/"
{
  echo "Metadata-Version: 2.1"
  echo "Name: venvtx"
  echo "Version: $version"
  echo "Summary: Every change to a Python venv as a transaction: probe it, and restore the exact prior bytes when the probe fails"
  echo "License: MIT"
  echo "Requires-Python: >=3.8"
  echo "Description-Content-Type: text/markdown"
  echo
  cat README.md
} > "$root/venvtx-$version.dist-info/METADATA"
cat > "$root/venvtx-$version.dist-info/WHEEL" <<WHEEL
Wheel-Version: 1.0
Generator: venvtx scripts/wheel.sh
Root-Is-Purelib: false
Tag: py3-none-manylinux_2_17_x86_64
Tag: py3-none-manylinux2014_x86_64
Tag: py3-none-musllinux_1_1_x86_64
WHEEL
mkdir -p dist
# Reproducible: every entry dated by the last commit (wheel pack reads SOURCE_DATE_EPOCH).
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || echo 315532800) \
  /usr/bin/python3 -m wheel pack "$root" -d dist >/dev/null
ls -t dist/venvtx-"$version"-py3-none-*.whl | head -1
