#!/usr/bin/env bash
# Runs the fuzz targets under clang's libFuzzer (coverage-guided) when clang is installed;
# CI runs the same targets through standalone_main.cpp instead. usage: run_libfuzzer.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
out=build/fuzz-libfuzzer
mkdir -p "$out"
for target in record metadata elf json_text; do
  case "$target" in
    record) sources="src/venv/record.cpp src/core/error.cpp" ;;
    metadata) sources="src/venv/metadata.cpp src/core/error.cpp" ;;
    elf) sources="src/elf/elf_file.cpp src/elf/byte_source.cpp src/core/error.cpp" ;;
    json_text) sources="src/core/json_text.cpp" ;;
  esac
  # shellcheck disable=SC2086 # $sources is a list of paths without spaces
  clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude \
    tests/fuzz/fuzz_$target.cpp $sources -o "$out/fuzz_$target"
  mkdir -p "$out/corpus_$target"
  "$out/fuzz_$target" -max_total_time="$seconds" "$out/corpus_$target" tests/fuzz/corpus/$target
done
