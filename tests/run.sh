#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install what is missing, time the demo as a
# newcomer meets it (tests/demo_time.sh: it builds only the binary), build everything, run ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/setup.sh --tests
bash tests/demo_time.sh
bash scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)")
echo "tests/run.sh: $(( $(date +%s) - start )) s in all; $(cat build/demo-time.txt)"
