#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz and runs each for a bounded
# time, seeded with the conformance cases. Fails on any crash or sanitizer report.
# usage: scripts/fuzz.sh [SECONDS_PER_FUZZER]   (default 30)
# VXPERF_FUZZ_BUILD=DIR: the fuzzers are already built there (scripts/test.sh's sanitizer build).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
jobs="${VXPERF_FUZZ_JOBS:-$(nproc)}"
build="${VXPERF_FUZZ_BUILD:-}"

if [[ -z "$build" ]]; then
  build=build-fuzz
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DVXPERF_FUZZ=ON -DVXPERF_WITH_TORCH=OFF -DVXPERF_BUILD_TESTS=OFF -DVXPERF_BUILD_BENCH=OFF \
    >/dev/null
  cmake --build "$build" -j "$jobs" --target records_fuzzer script_fuzzer
fi

cases=tests/conformance/cases
run() {
  local fuzzer="$1"; shift
  local corpus="$build/corpus-$fuzzer"
  mkdir -p "$corpus"
  cp "$@" "$corpus/"
  echo "fuzz: $fuzzer for ${seconds}s"
  # New inputs go to the first corpus dir; crashes and reports land in the build and fail the run.
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
    "$build/$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -max_len=65536 -artifact_prefix="$build/$fuzzer-" -print_final_stats=1 "$corpus" \
    2>&1 | tail -n 25
  return "${PIPESTATUS[0]}"
}
run records_fuzzer "$cases"/*.expected.jsonl tests/fuzz_regressions/*.records.jsonl
run script_fuzzer "$cases"/*.events.jsonl tests/fuzz_regressions/*.events.jsonl
echo "fuzz: no crash, no sanitizer report"
