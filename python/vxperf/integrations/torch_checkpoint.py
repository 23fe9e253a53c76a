"""torch.distributed.checkpoint (DCP): its `save` and `load` timed as a checkpoint's save and
restore (vxperf.checkpoint()): outside the steps, with the bytes of the state this rank holds
(each tensor's local shard; a Stateful object in it, whose state DCP asks for itself, is not
counted). install_training() patches them when torch.distributed is
available; a program's `dcp.save(...)` through the module is then timed."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Callable

from .. import _state, _training

_NAMES = (("save", "save"), ("load", "restore"))


def state_bytes(state: object) -> int:
    """Bytes of the tensors in a (nested) state dict, a DTensor's local shard only."""
    total = 0
    stack: list[Any] = [state]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        else:
            local = getattr(value, "_local_tensor", value)
            nbytes = getattr(local, "nbytes", None)
            # A Stateful's state_dict() is not asked for again: it may gather across ranks.
            if isinstance(nbytes, int) and hasattr(local, "dtype"):
                total += nbytes
    return total


def checkpoint_location(kwargs: Mapping[str, Any]) -> Any | None:
    """Where a DCP save or load goes: its `checkpoint_id`, else its storage writer's or reader's
    `path`; None when neither says."""
    location = kwargs.get("checkpoint_id")
    if location is None:
        storage = kwargs.get("storage_writer") or kwargs.get("storage_reader")
        location = getattr(storage, "path", None)
    return location


def _timed(function: Callable[..., Any], kind: str) -> Callable[..., Any]:
    @functools.wraps(function)
    def timed(state_dict: Any, *args: Any, **kwargs: Any) -> Any:
        if not _state.on:
            return function(state_dict, *args, **kwargs)
        with _training.checkpoint(kind, path=checkpoint_location(kwargs)) as scope:
            result = function(state_dict, *args, **kwargs)
            scope.bytes = state_bytes(state_dict)
        return result

    timed._vxperf_patched = True  # type: ignore[attr-defined]
    return timed


def patch() -> list[str]:
    """Patches dcp.save and dcp.load once. Returns the functions patched."""
    try:
        import torch.distributed as dist

        if not dist.is_available():
            return []
        import torch.distributed.checkpoint as dcp
    except Exception:
        return []
    patched = []
    for name, kind in _NAMES:
        function = getattr(dcp, name, None)
        if function is None:
            continue
        if not getattr(function, "_vxperf_patched", False):
            setattr(dcp, name, _timed(function, kind))
        patched.append(f"torch.distributed.checkpoint.{name}")
    return patched
