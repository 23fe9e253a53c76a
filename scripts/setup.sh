#!/usr/bin/env bash
# Installs every Debian package vxperf needs to build, test and run its demo. Idempotent; run as root.
# Set VXPERF_SETUP_MINIMAL=1 to skip LibTorch and python3-torch (core library, CLI and core tests only).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  clang libclang-rt-14-dev clang-format clang-tidy
  python3 python3-dev pybind11-dev python3-pytest python3-venv  # the Python package and its tests
  libcpp-httplib-dev python3-prometheus-client  # the Prometheus endpoint and collector
  chromium  # headless render check of 'vxperf report --html' (skipped when absent)
)
if [[ "${VXPERF_SETUP_MINIMAL:-0}" != "1" ]]; then
  # LibTorch (CPU) for the adapter and the demo; OpenBLAS with pthreads or matmuls are ~7x slower;
  # python3-torch runs the reference module that produces the conformance expectations.
  packages+=(libtorch-dev libopenblas0-pthread python3-torch)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
