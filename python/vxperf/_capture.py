"""Capture ranges: profile_range(profiler) hands a profiler to VIDEOX_PERF_PROFILE's range
(steps:A-B, requests:A-B): vxperf starts it as the range's first step or request begins and stops it
as the last one closes, the same points at which it calls the CUDA driver's cuProfilerStart /
cuProfilerStop. Not in _profiler.py (torch profiler ranges): the package's state imports that one,
and this one reads the state."""

from __future__ import annotations

import json
import os
from typing import Protocol, TypeVar

from . import _ext, _state

class _Profiler(Protocol):
    """What profile_range() takes: a torch profiler, or anything with start() and stop()."""

    def start(self) -> object: ...

    def stop(self) -> object: ...


_AnyProfiler = TypeVar("_AnyProfiler", bound=_Profiler)


def _records_file() -> str | None:
    """This process's records file (VIDEOX_PERF_JSON, with its rank's suffix on a multi-rank
    run), absolute; None without one."""
    base = os.environ.get("VIDEOX_PERF_JSON")
    if not base:
        return None
    _state.refresh_topology()
    rank, world = _ext.topology()[:2]
    return os.path.abspath(base if world <= 1 else f"{base}.rank{rank}")


def profile_range(profiler: _AnyProfiler) -> _AnyProfiler:
    """Starts `profiler` as VIDEOX_PERF_PROFILE's range begins and stops it as the range ends
    (steps:A-B: from step A's start to step B's close; requests:A-B: from request A's start to
    the end of the last of A..B), where the CUDA profiler's capture starts and stops. `profiler`:
    a torch.profiler.profile not started yet (no schedule needed), or anything with start() and
    stop(). Returns it. An exception either raises is reported, never raised into the loop. With
    metrics off it is handed back untouched; without VIDEOX_PERF_PROFILE it is never started
    (said once). A torch profiler's trace names the records file it was taken beside
    (`vxperf_records`), where `vxperf explain` finds the run's FLOPs."""
    if not _state.on:
        return profiler
    if _ext.capture_range() is None:
        _state.warn(("profile_range",), "profile_range(): VIDEOX_PERF_PROFILE is not set "
                    "(steps:A-B or requests:A-B): the profiler handed over is never started")
        return profiler

    def start() -> None:
        profiler.start()
        records = _records_file()
        name = getattr(profiler, "add_metadata_json", None)
        if records is not None and name is not None:
            name("vxperf_records", json.dumps(records))

    _ext.add_capture_hook(start, profiler.stop)
    return profiler
