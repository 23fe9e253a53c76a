#!/usr/bin/env bash
# Installs every Debian package vxperf needs to build, test and run its demo, then the torch 2 test
# environment (build-venv/: the real diffusers, transformers, accelerate from PyPI, pinned).
# Idempotent; run as root. VXPERF_SETUP_MINIMAL=1 skips LibTorch, python3-torch and the venv (core
# library, CLI and core tests only); VXPERF_SETUP_VENV=0 skips the venv alone.
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

# The torch 2 test environment: the real diffusers, transformers, accelerate and peft, pinned
# (python/requirements-test.txt), in build-venv/. Remade when the requirements change.
if [[ "${VXPERF_SETUP_MINIMAL:-0}" != "1" && "${VXPERF_SETUP_VENV:-1}" != "0" ]]; then
  cd "$(dirname "$0")/.."
  venv=build-venv
  requirements=python/requirements-test.txt
  stamp="$(sha256sum "$requirements" | cut -c1-16)"
  if [[ -x "$venv/bin/python" && "$(cat "$venv/.requirements" 2>/dev/null)" == "$stamp" ]]; then
    echo "setup: $venv up to date"
  else
    # Any CPython 3.9+ with venv: the one on PATH, else Debian's.
    python=$(command -v python3 || echo /usr/bin/python3)
    echo "setup: making $venv with $("$python" --version) from $requirements"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --no-input -r "$requirements"
    echo "$stamp" > "$venv/.requirements"
  fi
fi
