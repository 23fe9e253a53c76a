#!/usr/bin/env bash
# Installs every Debian package vxperf needs to build, test and run its demo, then the torch 2 test
# environment (build-venv/: the real diffusers, transformers, accelerate from PyPI, pinned).
# Idempotent; run as root. VXPERF_SETUP_MINIMAL=1 skips LibTorch, python3-torch and the venv (core
# library, CLI and core tests only); VXPERF_SETUP_VENV=0 skips the venv alone.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  libsimdjson-dev  # the records reader of `vxperf report`
  clang libclang-rt-14-dev clang-format clang-tidy
  python3 python3-dev pybind11-dev python3-pytest python3-venv  # the Python package and its tests
  libcpp-httplib-dev python3-prometheus-client  # the Prometheus endpoint and collector
  tmux  # the test of `vxperf watch` on a terminal
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

# The Python test environments, remade when their requirements change:
#   build-venv/      torch 2 with the real diffusers, transformers, accelerate and peft from PyPI;
#   build-venv-113/  Debian's python3 and torch 1.13 (system site packages) with the real
#                    accelerate, installed with --no-deps so that nothing replaces that torch.
make_venv() {  # DIR REQUIREMENTS PYTHON [VENV OPTION] [PIP OPTION]
  local venv=$1 requirements=$2 python=$3 venv_option=${4:-} pip_option=${5:-}
  local stamp
  stamp="$(sha256sum "$requirements" | cut -c1-16)"
  if [[ -x "$venv/bin/python" && "$(cat "$venv/.requirements" 2>/dev/null)" == "$stamp" ]]; then
    echo "setup: $venv up to date"
    return
  fi
  echo "setup: making $venv with $("$python" --version) from $requirements"
  rm -rf "$venv"
  "$python" -m venv $venv_option "$venv"
  "$venv/bin/python" -m pip install -q --no-input $pip_option -r "$requirements"
  echo "$stamp" > "$venv/.requirements"
}

if [[ "${VXPERF_SETUP_MINIMAL:-0}" != "1" && "${VXPERF_SETUP_VENV:-1}" != "0" ]]; then
  cd "$(dirname "$0")/.."
  # Any CPython 3.9+ with venv for torch 2: the one on PATH, else Debian's.
  make_venv build-venv python/requirements-test.txt "$(command -v python3 || echo /usr/bin/python3)"
  make_venv build-venv-113 python/requirements-torch113.txt /usr/bin/python3 \
    --system-site-packages --no-deps
  # The pure-Python wheels scripts/gpu_check.sh installs on a GPU host that has torch, accelerate
  # and transformers but no package index (carried there with the working tree).
  if [[ ! -f build-wheels/.done ]]; then
    rm -rf build-wheels
    build-venv/bin/python -m pip download -q --no-deps -d build-wheels diffusers==0.42.1 \
      peft==0.21.2 ftfy==6.3.1 wcwidth==0.9.4 && touch build-wheels/.done
  fi
fi
