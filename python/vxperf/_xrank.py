"""The live cross-rank view's all-gather (VIDEOX_PERF_XRANK=1), over torch.distributed.

The engine calls `exchange` on the training thread when a window's numbers are due, on every rank
at the same step. It runs over a CPU gloo group of its own, made at the first window from the
process group's store, so that an NCCL job gets no device synchronize and its own communicators
see no extra collective. Everything is bounded by VIDEOX_PERF_XRANK_TIMEOUT: the ranks' meeting
at the first window, the group's connections and every all-gather. A failure raises; the engine
then switches the view off on this rank with one notice, and training goes on."""

from __future__ import annotations

import dataclasses
import datetime
import os
import time
from collections.abc import Sequence
from typing import Any

from . import _ext


@dataclasses.dataclass
class _Group:
    """The view's gloo group and its size. Made at the first exchange; never used again after a
    failure (the engine stops calling)."""

    pg: Any = None
    world: int = 0


_group = _Group()

# Between two looks at the store while waiting for the other ranks to join.
_POLL_S = 0.05


def _process_group() -> Any:
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError("torch.distributed is not initialized; the view runs over its "
                           "process group's store")
    return dist


def _join(store: Any, world: int, timeout: float) -> None:
    """Waits until every rank has joined the view, or names those that have not by the deadline.

    Polled with add(key, 0), which answers at once: a store wait that times out could deliver its
    answer late on a connection torch itself uses."""
    deadline = time.monotonic() + timeout
    missing = list(range(world))
    while True:
        missing = [r for r in missing if store.add(f"join/{r}", 0) == 0]
        if not missing:
            return
        if time.monotonic() >= deadline:
            names = ", ".join(str(r) for r in missing[:8]) + (" ..." if len(missing) > 8 else "")
            raise RuntimeError(f"rank{'s' if len(missing) > 1 else ''} {names} did not join within "
                               f"{timeout:g}s (is VIDEOX_PERF_XRANK=1 set on every rank?)")
        time.sleep(_POLL_S)


def _make_group() -> None:
    dist = _process_group()
    from torch.distributed import distributed_c10d

    rank, world = dist.get_rank(), dist.get_world_size()
    timeout = float(_ext.xrank_timeout())
    # One namespace per launch attempt: an elastic restart keeps the store of the failed attempt.
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    store = dist.PrefixStore(f"vxperf/xrank/{attempt}/", distributed_c10d._get_default_store())
    store.add(f"join/{rank}", 1)
    _join(store, world, timeout)
    pg = dist.ProcessGroupGloo(dist.PrefixStore("gloo/", store), rank, world,
                               datetime.timedelta(seconds=timeout))
    _group.pg, _group.world = pg, world


def exchange(mine: Sequence[float]) -> list[list[float]]:
    """This rank's numbers (floats) in, every rank's out, one list per process."""
    import torch

    if _group.pg is None:
        _make_group()
    send = torch.tensor(mine, dtype=torch.float64)
    out = [torch.empty_like(send) for _ in range(_group.world)]
    _group.pg.allgather([out], [send]).wait()
    return [t.tolist() for t in out]
