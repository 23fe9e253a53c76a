"""Process-wide switch, warnings, topology and device set-up shared by the inference and training
halves. Everything measured goes through the C++ engine in `_ext`; this module only decides when
to make it and what to tell it."""

from __future__ import annotations

import atexit
import dataclasses
import os
import sys
import threading
from collections.abc import Hashable
from typing import TYPE_CHECKING, Callable, TypeVar

from . import _ext

if TYPE_CHECKING:
    from types import FrameType

_Activate = TypeVar("_Activate", bound=Callable[[], object])

# True once the engine is on. Read by every public entry point before doing anything else, so a
# process with metrics off pays one global read per call.
on = False

_lock = threading.RLock()
_warned: set[Hashable] = set()
# What turns on with the engine, registered by the modules above this one (records in process):
# called once metrics are on, outside the lock.
_when_on: list[Callable[[], object]] = []
_exit_registered = False
_topology_final = False
# The lines saying training is measured, held until a loop begins (accelerator.prepare) where
# `vxperf run` installed it on accelerate's import: an inference program whose diffusers imports
# accelerate would otherwise hear of a training loop it never runs.
training_lines_wait = False
training_lines: list[Callable[[], object]] = []


def say_training_lines() -> None:
    """Says the held lines, once (a loop begins)."""
    while training_lines:
        training_lines.pop(0)()


@dataclasses.dataclass
class _CudaBackend:
    """Whether the engine was given the CUDA backend (once per process), and whether it took."""

    tried: bool = False
    ok: bool = False


_cuda = _CudaBackend()


def env_level() -> int:
    """VIDEOX_PERF as the reference reads it: Python's int(), 0 when unset or unreadable."""
    raw = os.environ.get("VIDEOX_PERF")
    if raw is None or not raw.strip():
        return 0
    try:
        return int(raw)
    except ValueError:
        return 0


def on_main_thread() -> bool:
    """Whether the caller runs on the main thread, where training loops run: a save or an
    evaluation another thread makes while the loop goes on is not the loop's time."""
    return threading.current_thread() is threading.main_thread()


@dataclasses.dataclass
class _Measured:
    """Whether this process measured a request (a training loop's steps the engine counts)."""

    request: bool = False


measured = _Measured()
# Under `vxperf run`: the folder its processes share (the bootstrap's sitecustomize.py).
RUN_MEASURED = "VXPERF_RUN_MEASURED"


def _tell_vxperf_run() -> None:
    """Under `vxperf run`, leaves this process's mark when it measured a request or a training
    step: the program's first process says at its exit when none did (one that imported diffusers
    or accelerate may still have run nothing vxperf sees, as a plain loop over diffusers' models
    does)."""
    folder = os.environ.get(RUN_MEASURED)
    if not folder or not (measured.request or _ext.train_steps_closed() > 0):
        return
    try:
        open(os.path.join(folder, f"measured-{os.getpid()}"), "w").close()
    except OSError:
        pass  # the folder's owner exited first: nobody is left to tell


def _at_exit() -> None:
    _tell_vxperf_run()
    # The engine's own exit handler runs after the interpreter is gone, too late to ask torch for
    # its memory counters: flush everything while Python is still here.
    try:
        _ext.shutdown()
    finally:
        _ext.python_closing()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """A launcher's SIGTERM (torchrun's, after a peer died): the windows held for the cross-rank
    exchange and everything pending are written, then the process ends by SIGTERM as it would
    have."""
    import signal

    try:
        _ext.train_stop_exchanges("the job was told to stop (SIGTERM)")
        _at_exit()
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


def _flush_on_sigterm() -> None:
    """Writes what is pending when the process is told to stop, where the program left SIGTERM
    to its default (ending the process at once, atexit unrun) and this is the main thread."""
    import signal

    try:
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
            signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):
        pass  # no signals here (an embedded interpreter)


def switch_on(level: int | None) -> bool:
    """What install() and install_training() start with: `level` (VIDEOX_PERF when None) turns
    metrics on; False when that level is off or the engine could not be made."""
    if level is None:
        level = env_level()
        if level <= 0 and os.environ.get("VIDEOX_PERF", "0").strip() not in ("", "0"):
            configure(None)  # a switch that does not read: the engine says so, once
    return level > 0 and configure(level)


def configure(level: int | None) -> bool:
    """Makes the engine (metrics on at `level`, or as VIDEOX_PERF says when level is None or 0).

    The engine is made once per process; a later call only reports whether it is on."""
    global on, _exit_registered
    with _lock:
        enabled = _ext.configure(int(level or 0))
        if enabled and not _exit_registered:
            atexit.register(_at_exit)
            _flush_on_sigterm()
            _exit_registered = True
            if _ext.xrank_requested():
                # The live cross-rank view's all-gather; torch is imported at the first window.
                from . import _xrank

                _ext.set_rank_exchange(_xrank.exchange)
        on = enabled
        if enabled:
            from . import _profiler

            _profiler.attach()  # torch profiler ranges, once torch is imported
    if enabled:
        for activate in tuple(_when_on):
            activate()
    return enabled


def when_on(fn: _Activate) -> _Activate:
    """Calls `fn()` each time configure() finds metrics on (it must be idempotent)."""
    _when_on.append(fn)
    return fn


def warn(key: Hashable, message: str) -> None:
    """One line on stderr, once per key (a pipeline class, a module, ...)."""
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    line = f"vxperf: {message}"
    if on:
        _ext.notice(line)
    else:
        sys.stderr.write(line + "\n")


def world_size() -> int:
    refresh_topology()
    return _ext.topology()[1] if on else 1


def refresh_topology() -> None:
    """Takes rank and world size from torch.distributed once its process group is up (the launcher's
    environment, which the engine read at start, is all there is before). How the world splits its
    work is `_layout`'s."""
    global _topology_final
    if not on:
        return
    if not _topology_final:
        torch = sys.modules.get("torch")
        dist = getattr(torch, "distributed", None) if torch is not None else None
        try:
            if dist is not None and dist.is_available() and dist.is_initialized():
                _ext.set_topology(dist.get_rank(), dist.get_world_size())
                _topology_final = True
        except Exception:
            pass


def cuda_index(device: object) -> int:
    """The CUDA device index of a torch.device (or int / "cuda:N"), or -1 for anything else."""
    import torch

    if device is None:
        return -1
    if isinstance(device, int):
        return device
    parsed = torch.device(device)
    if parsed.type != "cuda":
        return -1
    return int(parsed.index if parsed.index is not None else torch.cuda.current_device())


def current_stream(index: int) -> int:
    """Torch's current CUDA stream on device `index`, as the integer handle events go on."""
    import torch

    return int(torch.cuda.current_stream(index).cuda_stream)


def _peaks(index: int) -> tuple[int, int]:
    import torch

    return int(torch.cuda.max_memory_allocated(index)), int(torch.cuda.max_memory_reserved(index))


def _reset_peaks(index: int) -> None:
    import torch

    torch.cuda.reset_peak_memory_stats(index)


def ensure_cuda(index: int, library: str = "",
                peaks: Callable[[int], tuple[int, int] | None] | None = None,
                reset: Callable[[int], None] | None = None) -> bool:
    """Gives the engine the CUDA driver backend, with torch's allocator for the memory peaks, the
    first time a device is used. Host timing stays when the driver cannot be loaded.

    library, peaks, reset: another driver library and other memory counters (the tests use the
    fake driver, which torch knows nothing of)."""
    with _lock:
        if _cuda.tried:
            return _cuda.ok
        _cuda.tried = True
        _cuda.ok = bool(_ext.use_cuda_backend(peaks or _peaks, reset or _reset_peaks, index,
                                              library))
        return _cuda.ok
