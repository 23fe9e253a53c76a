#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz and runs each for a bounded
# time, seeded with the conformance cases. Fails on any crash or sanitizer report.
# usage: scripts/fuzz.sh [SECONDS_PER_FUZZER]   (default 30)
# VXPERF_FUZZ_BUILD=DIR: the fuzzers are already built there (scripts/test.sh's sanitizer build).
# VXPERF_FUZZ_SEED=N, VXPERF_FUZZ_RUNS=N: libFuzzer's random seed and the most inputs to try (the
# time still bounds the run). The test command fixes both, so that it tries the same inputs on
# every machine and a change is not refused for an old bug a new random walk happened upon; run
# without them to look for new ones.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
jobs="${VXPERF_FUZZ_JOBS:-$(nproc)}"
build="${VXPERF_FUZZ_BUILD:-}"
walk=(-seed="${VXPERF_FUZZ_SEED:-0}" -runs="${VXPERF_FUZZ_RUNS:--1}")

if [[ -z "$build" ]]; then
  build=build-fuzz
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DVXPERF_FUZZ=ON -DVXPERF_WITH_TORCH=OFF -DVXPERF_BUILD_TESTS=OFF -DVXPERF_BUILD_BENCH=OFF \
    >/dev/null
  cmake --build "$build" -j "$jobs" --target records_fuzzer script_fuzzer trace_fuzzer
fi

cases=tests/conformance/cases
run() {
  local fuzzer="$1"; shift
  local corpus="$build/corpus-$fuzzer" log="$build/$fuzzer.log"
  # A fixed walk starts from the seeds alone: what earlier runs added would change the inputs.
  [[ -z "${VXPERF_FUZZ_RUNS:-}" ]] || rm -rf "$corpus"
  mkdir -p "$corpus"
  cp "$@" "$corpus/"
  echo "fuzz: $fuzzer for ${seconds}s (${walk[*]})"
  # New inputs go to the first corpus dir; crashes and reports land in the build and fail the run.
  local rc=0
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
    "$build/$fuzzer" "${walk[@]}" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -max_len=65536 -artifact_prefix="$build/$fuzzer-" -print_final_stats=1 "$corpus" \
    >"$log" 2>&1 || rc=$?
  if ((rc == 0)); then
    tail -n 6 "$log"
    return 0
  fi
  # CI keeps only the end of what a run prints: the report's first lines (an exception's what(),
  # the sanitizer's summary), then the input that failed, compressed, so that it can be replayed:
  #   base64 -d | gunzip > crash; build-asan/records_fuzzer crash
  grep -m 12 -E "ERROR|what\(\)|terminate|runtime error|SUMMARY|^ *#[0-4] 0x" "$log" || tail -n 25 "$log"
  local crash
  for crash in "$build/$fuzzer"-crash-* "$build/$fuzzer"-leak-* "$build/$fuzzer"-timeout-* \
      "$build/$fuzzer"-oom-*; do
    [[ -f "$crash" ]] || continue
    echo "fuzz: $fuzzer failed on $(basename "$crash") ($(stat -c %s "$crash") bytes), gzip | base64:"
    gzip -9cn "$crash" | base64 -w 100 | head -c 12000
    echo
  done
  return "$rc"
}
# The three run side by side (each is one process on one core); what each printed is shown in
# this order once all are done.
names=() pids=()
start() {  # FUZZER SEED-FILES...
  local fuzzer=$1
  run "$@" >"$build/$fuzzer.summary" 2>&1 &
  names+=("$fuzzer") pids+=($!)
}
start records_fuzzer "$cases"/*.expected.jsonl tests/fuzz_regressions/*.records.jsonl
start script_fuzzer "$cases"/*.events.jsonl tests/fuzz_regressions/*.events.jsonl
# explain plain and with --critical-path (critical_path_syncs.json: steps, two threads, every kind
# of cuda_sync event)
start trace_fuzzer tests/explain/traces/*.json
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || status=1
  cat "$build/${names[$i]}.summary"
done
((status == 0)) || exit 1
echo "fuzz: no crash, no sanitizer report"
