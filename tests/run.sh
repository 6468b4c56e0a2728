#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install what is missing, build, run ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)"
