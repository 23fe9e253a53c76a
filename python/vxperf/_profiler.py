"""Torch profiler ranges: while a torch profiler records (torch.profiler.profile,
torch.autograd.profiler.profile), every request, stage, step, micro-step and phase vxperf measures
is also a named range in its trace ("request 0", "transformer", "step 3", "fwd", ...), next to the
kernels it ran. The engine's observer asks torch whether a profiler is on at each span
(torch._C._autograd._profiler_enabled, on torch 1.13 and 2.x) and opens a
torch.autograd.profiler.record_function range only then. Attached once the engine is on and torch
has been imported; never imports torch itself.

A stage's name is any a program gives (vxperf.stage("refiner")), so the trace also says which of
its ranges are vxperf's stages: as each stage range opens, the names of the stages this process
opened ranges for are the session's metadata "vxperf_ranges" (torch.autograd._add_metadata_json,
what torch.profiler.profile.add_metadata_json calls: a top-level key of the exported Chrome trace),
read by `vxperf explain`. Kineto keeps a session's metadata until that session ends and forgets it
for the next, which nothing here can see start, so the list is said again at every stage range
(half a microsecond beside the range's thirty); only while a profiler records, never otherwise.

Capture ranges (VIDEOX_PERF_PROFILE, profile_range()) are _capture.py's: it reads the package's
state, which imports this module."""

from __future__ import annotations

import json
import sys
from typing import Any

from . import _ext

_attached = False

# The trace metadata's key, and the stage names declared in it: in the order first opened, and as
# the JSON list the metadata holds.
RANGES_KEY = "vxperf_ranges"
_stage_names: dict[str, None] = {}
_declared = "[]"


def _declare(name: str) -> None:
    """Says in the recording profiler's trace that `name` is one of vxperf's stages."""
    global _declared
    import torch

    if name not in _stage_names:
        _stage_names[name] = None
        _declared = json.dumps(list(_stage_names))
    add = getattr(torch.autograd, "_add_metadata_json", None)
    kind = getattr(torch._C._autograd, "_profiler_type", None)
    try:  # Kineto's sessions alone keep metadata (torch 2: every profiler's)
        if add is not None and (kind is None or getattr(kind(), "name", "") == "KINETO"):
            add(RANGES_KEY, _declared)
    except Exception:  # the range is still opened, the trace only says less
        pass


def _enter(name: str, stage: bool) -> Any:
    from torch.autograd import profiler

    if stage:
        _declare(name)
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

