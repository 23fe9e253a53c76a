"""Read at every interpreter start under `vxperf run`, whose folder leads PYTHONPATH: the program
is measured unmodified. Nothing of vxperf is imported here: the first import of diffusers in a
process calls vxperf.install() right after diffusers has loaded, the first import of accelerate
calls vxperf.install_training(), and a process that imports neither (a launcher, a compiler
worker) is left alone. The program's first Python process says at its exit when none of its
processes measured a request or a training step (a plain PyTorch loop needs vxperf's lines, even
one over diffusers' models, which import accelerate). Then the sitecustomize this one stands in
front of, if any, runs."""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import tempfile
import types
from collections.abc import Sequence

_HERE = os.path.dirname(os.path.abspath(__file__))
# A folder the processes of one `vxperf run` share: each one installed leaves `installed-PID`
# there, and vxperf itself, at the exit of a process that measured something, `measured-PID`.
_MEASURED = "VXPERF_RUN_MEASURED"


def _is_accelerate_launcher() -> bool:
    """`accelerate launch` (or `accelerate-launch`): it imports accelerate but only starts the
    workers, each measured in its own process. Measured itself, it said the start-up lines a
    second time, as a rank 0 of its own."""
    argv = getattr(sys, "argv", None) or [""]
    script = os.path.basename(argv[0])
    return script == "accelerate-launch" or (script == "accelerate" and argv[1:2] == ["launch"])


def _measure(entry: str) -> None:
    if _is_accelerate_launcher():
        return
    try:
        import vxperf
        from vxperf import _state

        # Training's lines wait for a loop: diffusers imports accelerate in an inference program.
        _state.training_lines_wait = entry == "install_training"
        try:
            getattr(vxperf, entry)()
        finally:
            _state.training_lines_wait = False
    except Exception as error:
        sys.stderr.write(f"vxperf run: vxperf.{entry}() failed ({error!r}); this process runs "
                         "unmeasured\n")
        return
    folder = os.environ.get(_MEASURED)
    if folder:
        try:
            open(os.path.join(folder, f"installed-{os.getpid()}"), "w").close()
        except OSError:
            pass  # the folder's owner exited first: nobody is left to tell


def _watch_the_program() -> None:
    """In the program's first Python process (its processes inherit the folder): at exit, says
    so when none of them was measured, rather than leaving a user to find no records."""
    try:
        folder = tempfile.mkdtemp(prefix="vxperf-run-")
    except OSError:
        return
    os.environ[_MEASURED] = folder

    def say() -> None:
        try:
            marks = os.listdir(folder)
        except OSError:
            return
        shutil.rmtree(folder, ignore_errors=True)
        if any(mark.startswith("measured-") for mark in marks):
            return
        if os.environ.get("VIDEOX_PERF", "1") in ("", "0"):
            return
        if marks:  # installed in some process, which then ran nothing vxperf sees
            why = ("the program imported diffusers or accelerate but ran no pipeline call and no "
                   "training step through them (a plain PyTorch loop, even over diffusers' "
                   "models, needs vxperf's lines: docs/PYTHON.md, Training)")
        else:
            why = ("no process of the program imported diffusers or accelerate (a plain PyTorch "
                   "loop or a pipeline of its own needs vxperf's lines: README, Quick start for "
                   "Python)")
        sys.stderr.write(f"vxperf run: nothing was measured: {why}\n")

    atexit.register(say)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls a vxperf entry point once a watched library's module has run (once per library).
    A library is watched until its module runs, not only until it is first looked for: the
    libraries ask `importlib.util.find_spec` whether each other is installed (accelerate asks
    for diffusers as it loads), which finds a spec and runs nothing."""

    def __init__(self) -> None:
        self.waiting = {"diffusers": "install", "accelerate": "install_training"}

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None,
                  ) -> importlib.machinery.ModuleSpec | None:
        entry = self.waiting.get(name)
        if entry is None:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec

        def run_then_measure(module: types.ModuleType) -> None:
            run(module)
            if self.waiting.pop(name, None) is not None:
                _measure(entry)

        loader.exec_module = run_then_measure  # type: ignore[method-assign,union-attr]
        return spec


def _chain() -> None:
    """Runs the next sitecustomize on the path, the one this file shadows."""
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


if os.environ.get("VXPERF_RUN") == "1":
    sys.meta_path.insert(0, _AfterImport())
    if _MEASURED not in os.environ:
        _watch_the_program()
_chain()
