#!/usr/bin/env bash
# Runs every test: the core and CLI tests in a normal build, then the core tests under
# AddressSanitizer + UBSan, and the concurrency and CUDA-backend tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVXPERF_SANITIZE=address,undefined \
  -DVXPERF_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j "$jobs" --target vxperf_tests vxperf_cuda_tests
ctest --test-dir build-asan --output-on-failure -j "$jobs" -L 'core|cuda'

cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVXPERF_SANITIZE=thread \
  -DVXPERF_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j "$jobs" --target vxperf_tests vxperf_cuda_tests
export TSAN_OPTIONS=halt_on_error=1
./build-tsan/tests/vxperf_tests --gtest_filter='Concurrency*:Inference*'
./build-tsan/tests/vxperf_cuda_tests
