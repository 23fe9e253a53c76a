#!/usr/bin/env bash
# Installs every Debian package vxperf needs to build, test and run its demo, then the one Python
# environment (build-venv/: torch 2 from its pinned wheel, whose LibTorch the adapter and the demo
# build against, and the real diffusers, transformers, accelerate, peft and experiment trackers,
# all pinned in python/requirements-test.txt). Idempotent; run as root.
# VXPERF_SETUP_MINIMAL=1 skips the environment (core library, CLI and core tests only).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  libsimdjson-dev  # the records reader of `vxperf report`
  zlib1g-dev  # gzip traces read by `vxperf explain`
  clang libclang-rt-14-dev clang-format clang-tidy  # the sanitizer and fuzzer build, lint
  python3 python3-dev python3-venv pybind11-dev  # the Python package
  libcpp-httplib-dev  # the Prometheus endpoint
  prometheus  # the Grafana dashboard's queries, run against a real server (test_dashboard.py)
  tmux  # the test of `vxperf watch` on a terminal
  chromium  # headless render check of 'vxperf report --html' (skipped when absent)
)

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
echo "setup: packages in $((SECONDS - start))s"

# The environment, remade when its requirements change. Any CPython 3.9+ with venv: the one on
# PATH, else Debian's.
if [[ "${VXPERF_SETUP_MINIMAL:-0}" != "1" ]]; then
  venv=build-venv requirements=python/requirements-test.txt
  python=$(command -v python3 || echo /usr/bin/python3)
  stamp="$(sha256sum "$requirements" | cut -c1-16)"
  if [[ -x "$venv/bin/python" && "$(cat "$venv/.requirements" 2>/dev/null)" == "$stamp" ]]; then
    echo "setup: $venv up to date"
  else
    echo "setup: making $venv with $("$python" --version) from $requirements"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --no-input --disable-pip-version-check -r "$requirements"
    echo "$stamp" > "$venv/.requirements"
  fi
  # The package's type checker and linter (scripts/test.sh's "typing and lint" stage), pinned
  # with what they pull in beyond the requirements (pathspec, typing_extensions are there);
  # installed on their own, so that a new pin does not remake the environment.
  lint=(mypy==2.4.1 mypy_extensions==1.2.0 librt==0.17.0 ast_serialize==0.13.1 ruff==0.17.6)
  if ! "$venv/bin/python" -c 'import sys; from importlib.metadata import version as v
sys.exit(any(v(p.split("==")[0]) != p.split("==")[1] for p in sys.argv[1:]))' "${lint[@]}" \
      2>/dev/null; then  # a missing one raises: installed too
    echo "setup: installing ${lint[*]} into $venv"
    "$venv/bin/python" -m pip install -q --no-input --disable-pip-version-check "${lint[@]}"
  fi
  # The pure-Python wheels scripts/gpu_check.sh installs on a GPU host that has torch, accelerate
  # and transformers but no package index (carried there with the working tree).
  if [[ ! -f build-wheels/.done ]]; then
    rm -rf build-wheels
    "$venv/bin/python" -m pip download -q --no-deps -d build-wheels diffusers==0.42.1 \
      peft==0.21.2 ftfy==6.3.1 wcwidth==0.9.4 && touch build-wheels/.done
  fi
  echo "setup: done in $((SECONDS - start))s"
fi
