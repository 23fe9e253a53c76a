#!/usr/bin/env bash
# Runs every test: unit, conformance, CLI, fault-injection, LibTorch, demo, consumer and serving
# tests in a normal build, and the Python package's tests (Debian's torch 1.13, then torch 2 with
# the real diffusers/transformers/accelerate) and the wheel; then the core, CUDA-backend, NVML,
# analysis, serving and fault-injection tests under AddressSanitizer + UBSan; the concurrency,
# fork, CUDA-backend, NVML and serving tests under ThreadSanitizer; and both fuzzers for a bounded
# time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

# The Python package (built above when python3-dev and pybind11-dev are present): side by side
# with the reference module (its golden records when the reference is not around), the training
# API, the examples and an install into a fresh venv. build-venv-113/ is Debian's python3 with its
# torch 1.13 (system site packages) and the real accelerate; setup.sh makes it.
if [[ ! -d build/python/vxperf ]]; then
  echo "test: the Python package was not built (python3-dev, pybind11-dev missing?)" >&2
  exit 1
fi
VXPERF_BUILD="$PWD/build" build-venv-113/bin/python -m pytest -q tests/python
# The same on torch 2 with the real diffusers, transformers, accelerate and peft (build-venv/, made
# by setup.sh), side by side with the reference, whose torch 2 hooks run natively there.
VXPERF_BUILD="$PWD/build" build-venv/bin/python -m pytest -q tests/python
# The package as pip users get it: a wheel from pyproject.toml into a fresh venv, an example, the
# console command, pip uninstall leaving nothing behind, and the same wheel under torch 2.13.
bash scripts/wheel_check.sh

# Sanitizer builds leave LibTorch out: its own code is not what they check.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVXPERF_SANITIZE=address,undefined \
  -DVXPERF_WITH_TORCH=OFF -DVXPERF_BUILD_BENCH=OFF -DVXPERF_BUILD_PYTHON=OFF >/dev/null
cmake --build build-asan -j "$jobs" --target vxperf_tests vxperf_cuda_tests vxperf_analysis_tests \
  vxperf_prometheus_tests vxperf_faults_tests vxperf_nvml_tests
# The CLI's fault tests stay in the normal build: they limit address space (ulimit -v), which the
# sanitizers' shadow memory cannot live with.
ctest --test-dir build-asan --output-on-failure -j "$jobs" -L 'core|cuda|analysis|serving|faults' \
  -LE cli

cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVXPERF_SANITIZE=thread \
  -DVXPERF_WITH_TORCH=OFF -DVXPERF_BUILD_BENCH=OFF -DVXPERF_BUILD_PYTHON=OFF >/dev/null
cmake --build build-tsan -j "$jobs" --target vxperf_tests vxperf_cuda_tests vxperf_prometheus_tests \
  vxperf_faults_tests vxperf_nvml_tests
export TSAN_OPTIONS=halt_on_error=1
./build-tsan/tests/vxperf_tests --gtest_filter='Concurrency*:Inference*:LiveTrace*'
./build-tsan/tests/vxperf_faults_tests --gtest_filter='FaultsFork*:FaultsNames*:FaultsWrite*'
./build-tsan/tests/vxperf_cuda_tests
./build-tsan/tests/vxperf_nvml_tests  # the power sampler's thread
./build-tsan/tests/vxperf_prometheus_tests

bash scripts/fuzz.sh 30
