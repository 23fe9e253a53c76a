"""Shared helpers of the Python package tests (run with build-venv/bin/python: torch 2 and the
real diffusers, transformers, accelerate and peft).

The package is taken from the build tree: $VXPERF_BUILD (default <repo>/build), whose python/
holds `vxperf` after `cmake --build`. Every test that turns metrics on runs its code in a fresh
interpreter, because the engine is made once per process from the environment: a child forked
from a server that imported torch (and the real libraries) once (preloaded.py), or, with
fresh=True, a plain new process.
"""
import atexit
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

import preloaded

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

# What each server imports: torch alone for runs over the stand-in packages (which the real ones
# would shadow), torch and the real libraries for the rest.
TORCH = ("torch",)
LIBRARIES = ("torch", "diffusers", "transformers", "accelerate", "peft", "diffusers.pipelines",
             "transformers.models.umt5", "transformers.models.t5")
_servers = {}
_scratch = tempfile.mkdtemp(prefix="vxperf-children-")

def clean_env(**settings):
    """The environment of a child: no VIDEOX_PERF* or launcher variables but those given."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VIDEOX_PERF") and k not in ("RANK", "WORLD_SIZE")}
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_DIR, HERE])
    env.update({k: str(v) for k, v in settings.items()})
    return env


def _server(modules):
    if modules not in _servers:
        _servers[modules] = preloaded.Server(modules, clean_env())
        atexit.register(_servers[modules].close)
    return _servers[modules]


def run_child(argv=None, code=None, env=None, check=True, timeout=120, cwd=None, fresh=False,
              preload=None):
    """Runs a script (`argv`: the script and its arguments) or `code` in a fresh interpreter;
    returns a CompletedProcess (text stdout/stderr). The child is forked from a server that
    imported `preload` (default: torch, and the real libraries unless the stand-ins are on the
    child's PYTHONPATH), unless `fresh` (then a new process: for what must import those itself)."""
    env = env or clean_env()
    args = [sys.executable] + (list(argv) if argv is not None else ["-c", code])
    if fresh:
        proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout,
                              cwd=cwd)
    else:
        request = {"env": env, "cwd": cwd, "timeout": timeout}
        request.update({"argv": list(argv)} if argv is not None else {"code": code})
        if preload is None:
            preload = TORCH if STANDINS in env.get("PYTHONPATH", "") else LIBRARIES
        returncode, stdout, stderr = _server(tuple(preload)).run(request, _scratch)
        if returncode is None:
            raise subprocess.TimeoutExpired(args, timeout, stdout, stderr)
        proc = subprocess.CompletedProcess(args, returncode, stdout, stderr)
    if check and proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode})\nstdout:\n{proc.stdout}\n"
                             f"stderr:\n{proc.stderr}")
    return proc


def run_python(code, env=None, check=True, timeout=120, fresh=False):
    """Runs `code` in a fresh interpreter; returns the CompletedProcess (text stdout/stderr)."""
    return run_child(code=textwrap.dedent(code), env=env, check=check, timeout=timeout,
                     fresh=fresh)


# vxperf's own record kind, which the reference never writes: the training's final record
# (docs/RECORDS.md, "The training's end"), one per process after its last window.
END = "train_end"


def stop(process, timeout=15):
    """Ends a child process: asked to (SIGTERM), then killed after `timeout` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def read_records(path, ends=False):
    """A records file's requests and windows, in file order (the kinds the tests count); with
    `ends`, the training's final records among them."""
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return records if ends else [r for r in records if r.get("kind") != END]


@pytest.fixture
def run():
    return run_python
