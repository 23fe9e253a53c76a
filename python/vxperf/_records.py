"""Records in process: every record the engine settles handed to Python functions as a dict (the
keys of its JSON line), and the request this thread finished last.

The engine keeps each settled record for Python; the extension hands them over on the thread whose
call settled them (a request's own thread as its pipeline call returns, the training loop's as an
optimizer step or finish() returns), outside the engine's locks. A function that raises is said
once and keeps receiving records; nothing it does reaches the measured code."""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

from . import _ext, _state
from .records_types import Record, RequestRecord

#: A records sink: called with each record; what it returns is ignored.
Sink = Callable[[Record], object]
_AnySink = TypeVar("_AnySink", bound=Sink)

_lock = threading.Lock()
_sinks: tuple[Sink, ...] = ()  # replaced whole under _lock, read without it
_installed = False


def _handle(record: Record) -> None:
    for fn in _sinks:
        try:
            fn(record)
        except Exception as error:
            name = getattr(fn, "__qualname__", None) or repr(fn)
            _state.warn(("sink", id(fn)), f"records sink {name} raised {error!r} (said once); "
                        "it keeps receiving records")


@_state.when_on
def activate() -> None:
    """Makes the engine keep records for Python once metrics are on (_state.configure calls it)."""
    global _installed
    with _lock:
        if _installed or not _ext.install_record_sinks():
            return
        _installed = True
        if _sinks:
            _ext.set_record_handler(_handle)


def add_sink(fn: _AnySink) -> _AnySink:
    """Hands every request, training-window and training-end record settled from now on to
    `fn(record)`, a dict with the keys of its JSON line (`record["kind"]`: "request",
    "train_window" or "train_end"), on the thread that
    settled it. Returns `fn`, so it can decorate. Keep it quick: it runs as the pipeline call or
    the optimizer step returns (hand slow work to a queue). While metrics are off nothing is
    settled and this costs nothing."""
    global _sinks
    if not callable(fn):
        raise TypeError(f"add_sink() needs a callable, not {type(fn).__name__}")
    with _lock:
        if fn not in _sinks:
            _sinks = _sinks + (fn,)
        if _installed:
            _ext.set_record_handler(_handle)
    return fn


def remove_sink(fn: Sink) -> bool:
    """Stops handing records to `fn` (records already on their way to it may still arrive).
    Returns whether it was a sink."""
    global _sinks
    with _lock:
        if fn not in _sinks:
            return False
        _sinks = tuple(s for s in _sinks if s is not fn and s != fn)
        if _installed and not _sinks:
            _ext.set_record_handler(None)
    return True


def last_request() -> RequestRecord | None:
    """The record of the request this thread finished last (a dict, as add_sink() gets it), or
    None before the first one or while metrics are off. A server returns it with what it
    generated."""
    if not _state.on:
        return None
    return _ext.last_request()
