#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz and runs each for a bounded
# time, seeded with the conformance cases. Fails on any crash or sanitizer report.
# usage: scripts/fuzz.sh [SECONDS_PER_FUZZER]   (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
jobs="${VXPERF_FUZZ_JOBS:-$(nproc)}"

CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVXPERF_FUZZ=ON -DVXPERF_WITH_TORCH=OFF -DVXPERF_BUILD_TESTS=OFF -DVXPERF_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz -j "$jobs" --target records_fuzzer script_fuzzer

cases=tests/conformance/cases
run() {
  local fuzzer="$1"; shift
  local corpus="build-fuzz/corpus-$fuzzer"
  mkdir -p "$corpus"
  cp "$@" "$corpus/"
  echo "fuzz: $fuzzer for ${seconds}s"
  # New inputs go to the first corpus dir; crashes and reports land in build-fuzz/ and fail the run.
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    "build-fuzz/$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -max_len=65536 -artifact_prefix="build-fuzz/$fuzzer-" -print_final_stats=1 "$corpus" \
    2>&1 | tail -n 25
  return "${PIPESTATUS[0]}"
}
run records_fuzzer "$cases"/*.expected.jsonl
run script_fuzzer "$cases"/*.events.jsonl tests/fuzz_regressions/*.events.jsonl
echo "fuzz: no crash, no sanitizer report"
