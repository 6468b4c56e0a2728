#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install what is missing, time the demo as a
# newcomer meets it (tests/demo_time.sh: it builds only the binary), build everything, run ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/setup.sh --tests
bash tests/demo_time.sh
bash scripts/build.sh
# One more test than cores: a fifth of the suite's time is sleeps and waits (quiet periods, lock
# waits, a job's children), which leave a core idle at -j"$(nproc)" (770 s -> 621 s on 2 cores).
(cd build && ctest --output-on-failure -j "$(( $(nproc) + 1 ))")
echo "tests/run.sh: $(( $(date +%s) - start )) s in all; $(cat build/demo-time.txt)"
