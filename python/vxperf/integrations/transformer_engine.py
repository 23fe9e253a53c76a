"""Transformer Engine: while its fp8_autocast is on, a priced call's matmuls run in fp8. Read only
when the program has imported `transformer_engine.pytorch` itself."""

from __future__ import annotations

import sys

from .. import _reading, _state


def fp8_dtype(hidden: object) -> str | None:
    """'fp8' while Transformer Engine's fp8 autocast is on, else None."""
    te = sys.modules.get("transformer_engine.pytorch")
    if te is None:
        return None
    try:
        return "fp8" if te.fp8.FP8GlobalStateManager.is_fp8_enabled() else None
    except Exception as error:
        _state.warn(("fp8", "te"), f"cannot read Transformer Engine's fp8 state ({error!r}); "
                    "declare fp8 with VIDEOX_PERF_DTYPE=fp8")
        return None


def register() -> None:
    if fp8_dtype not in _reading.CALL_DTYPE_READERS:
        _reading.CALL_DTYPE_READERS.append(fp8_dtype)
