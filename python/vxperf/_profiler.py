"""Torch profiler ranges: while a torch profiler records (torch.profiler.profile,
torch.autograd.profiler.profile), every request, stage, step, micro-step and phase vxperf measures
is also a named range in its trace ("request 0", "transformer", "step 3", "fwd", ...), next to the
kernels it ran. The engine's observer asks torch whether a profiler is on at each span
(torch._C._autograd._profiler_enabled, on torch 1.13 and 2.x) and opens a
torch.autograd.profiler.record_function range only then. Attached once the engine is on and torch
has been imported; never imports torch itself.

Capture ranges (VIDEOX_PERF_PROFILE, profile_range()) are _capture.py's: it reads the package's
state, which imports this module."""

from __future__ import annotations

import sys
from typing import Any

from . import _ext

_attached = False


def _enter(name: str) -> Any:
    from torch.autograd import profiler

    scope = profiler.record_function(name)
    scope.__enter__()
    return scope


def _leave(scope: Any) -> None:
    scope.__exit__(None, None, None)


def attach() -> bool:
    """Adds the range observer to the engine once (metrics on, torch imported); True once done."""
    global _attached
    if _attached:
        return True
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        gate = torch._C._autograd._profiler_enabled
    except AttributeError:
        return False
    _attached = bool(_ext.add_torch_ranges(gate, _enter, _leave))
    return _attached

