"""Torch profiler ranges and capture ranges.

While a torch profiler records (torch.profiler.profile,
torch.autograd.profiler.profile), every request, stage, step, micro-step and phase vxperf measures
is also a named range in its trace ("request 0", "transformer", "step 3", "fwd", ...), next to the
kernels it ran. The engine's observer asks torch whether a profiler is on at each span
(torch._C._autograd._profiler_enabled, on torch 1.13 and 2.x) and opens a
torch.autograd.profiler.record_function range only then. Attached once the engine is on and torch
has been imported; never imports torch itself.

profile_range(profiler) hands a profiler to VIDEOX_PERF_PROFILE's range (steps:A-B, requests:A-B):
vxperf starts it as the range's first step or request begins and stops it as the last one closes,
the same points at which it calls the CUDA driver's cuProfilerStart / cuProfilerStop."""

import sys

from . import _ext, _state

_attached = False


def _enter(name):
    from torch.autograd import profiler

    scope = profiler.record_function(name)
    scope.__enter__()
    return scope


def _leave(scope):
    scope.__exit__(None, None, None)


def attach():
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


def profile_range(profiler):
    """Starts `profiler` as VIDEOX_PERF_PROFILE's range begins and stops it as the range ends
    (steps:A-B: from step A's start to step B's close; requests:A-B: from request A's start to
    the end of the last of A..B), where the CUDA profiler's capture starts and stops. `profiler`:
    a torch.profiler.profile not started yet (no schedule needed), or anything with start() and
    stop(). Returns it. An exception either raises is reported, never raised into the loop. With
    metrics off it is handed back untouched; without VIDEOX_PERF_PROFILE it is never started
    (said once)."""
    if not _state.on:
        return profiler
    if _ext.capture_range() is None:
        _state.warn(("profile_range",), "profile_range(): VIDEOX_PERF_PROFILE is not set "
                    "(steps:A-B or requests:A-B): the profiler handed over is never started")
        return profiler
    _ext.add_capture_hook(profiler.start, profiler.stop)
    return profiler
