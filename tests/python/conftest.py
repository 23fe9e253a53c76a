"""Shared helpers of the Python package tests (run with /usr/bin/python3, which has Debian's torch).

The package is taken from the build tree: $VXPERF_BUILD (default <repo>/build), whose python/
holds `vxperf` after `cmake --build`. Every test that turns metrics on runs its code in a fresh
interpreter, because the engine is made once per process from the environment.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("VXPERF_BUILD", os.path.join(REPO, "build"))
PACKAGE_DIR = os.path.join(BUILD, "python")
CLI = os.path.join(BUILD, "vxperf")
FAKE_CUDA = os.path.join(BUILD, "tests", "support", "fake_cuda", "libfake_cuda.so")
STANDINS = os.path.join(HERE, "standins")

if not os.path.isdir(os.path.join(PACKAGE_DIR, "vxperf")):
    raise pytest.UsageError(f"no vxperf package in {PACKAGE_DIR}: build first "
                            "(cmake --build build)")


def clean_env(**settings):
    """The environment of a child: no VIDEOX_PERF* or launcher variables but those given."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VIDEOX_PERF") and k not in ("RANK", "WORLD_SIZE")}
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_DIR, HERE])
    env.update({k: str(v) for k, v in settings.items()})
    return env


def run_python(code, env=None, check=True, timeout=120):
    """Runs `code` in a fresh interpreter; returns the CompletedProcess (text stdout/stderr)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode})\nstdout:\n{proc.stdout}\n"
                             f"stderr:\n{proc.stderr}")
    return proc


def read_records(path):
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.fixture
def run():
    return run_python
