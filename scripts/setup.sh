#!/usr/bin/env bash
# Installs, with apt, whatever venvtx needs that this Debian 12 machine lacks: to build it, run
# the demo and make the releases; with --tests, also what the test suite drives.
set -euo pipefail
# ninja-build and ccache: faster builds (the static release reuses the main build's objects);
# help2man: the man page; dpkg-dev: `cpack -G DEB`; libzstd-dev, liblz4-dev, libacl1-dev: the
# static libraries libarchive needs in the fully static release; python3-wheel: the wheel
# (scripts/wheel.sh).
packages=(cmake make ninja-build ccache g++ gcc libsqlite3-dev libarchive-dev libssl-dev libcli11-dev
          nlohmann-json3-dev doctest-dev python3 python3-venv sqlite3 help2man dpkg-dev
          libzstd-dev liblz4-dev libacl1-dev python3-wheel)
# For the tests: tmux and zstd: the tests that type into a real terminal and read packs with
# their own tools; strace: the order of flushes and renames (test_durability);
# python3-jsonschema: every --json document validated (test_json_schema); zsh, fish: completion
# typed into each shell; lintian: the .deb checked as Debian checks it; ansible-core,
# python3-pytest, openssh-server: the Ansible module's tests and a fleet with a real SSH host;
# pipx: the wheel installed as users install tools.
if [ "${1:-}" = "--tests" ]; then
  packages+=(tmux zstd strace python3-jsonschema zsh fish lintian ansible-core python3-pytest openssh-server pipx)
fi
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
# The tests make venvs offline: the interpreter on PATH needs venv and its bundled pip.
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "setup: python3 on PATH ($(command -v python3)) lacks venv/ensurepip" >&2
  exit 1
fi
