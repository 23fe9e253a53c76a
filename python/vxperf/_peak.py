"""Measured peaks (VIDEOX_PERF_PEAK_TFLOPS=auto): a short probe of large matmuls in torch.

The engine has no torch, so this side measures and hands the result over. What is measured goes
into the cache the C++ engine reads and writes ($XDG_CACHE_HOME/vxperf/peaks.json, one format for
every front end), so a machine is probed once per device and dtype."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from . import _ext, _reading, _state

if TYPE_CHECKING:
    import torch

_lock = threading.Lock()
# (device index, dtype) -> the calibration handed to the engine, or None
_handed: dict[tuple[int, str], dict[str, Any] | None] = {}


def _device(device: Any) -> torch.device:
    import torch

    if device is None:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")
    if isinstance(device, int):
        return torch.device("cuda", device) if device >= 0 else torch.device("cpu")
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def device_key(device: Any, threads: int | None = None) -> str:
    """The cache key of a device: a GPU's name, or the host CPU with its thread count."""
    import torch

    device = _device(device)
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device.index))
    return _ext.cpu_device_key(int(threads or torch.get_num_threads()))


def probe(device: Any = None, dtype: object = "bf16", budget_s: float = 2.0, rounds: int = 5,
          threads: int | None = None, max_n: int | None = None) -> dict[str, Any]:
    """Measures dense matmul throughput (TFLOPS) of one device in one dtype: square GEMMs grown
    until one takes a twenty-fifth of the budget, then the best of a few timed rounds
    (synchronized on a GPU). No GEMM starts once `budget_s` is spent. Returns a dict (tflops, n,
    gemms, seconds, rounds, longest_s, by); raises ValueError when the device or dtype cannot be
    measured here."""
    import torch

    device = _device(device)
    name = _reading.dtype_name(dtype)
    if name is None:
        raise ValueError(f"unknown dtype {dtype!r}")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("torch sees no CUDA device")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"only cpu and cuda devices are probed, not {device}")
    if name == "tf32" and device.type != "cuda":
        raise ValueError("tf32 is a GPU tensor-core mode; a CPU has no such rate")
    fp8 = name == "fp8"
    if fp8 and (device.type != "cuda" or not hasattr(torch, "_scaled_mm")
                or not hasattr(torch, "float8_e4m3fn")):
        raise ValueError("fp8 GEMMs need a GPU and torch._scaled_mm")
    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32,
                   "tf32": torch.float32, "fp8": torch.bfloat16}[name]

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    saved_threads = torch.get_num_threads()
    saved_tf32 = torch.backends.cuda.matmul.allow_tf32
    budget = budget_s if budget_s and budget_s > 0 else 2.0
    target = budget / 25.0
    limit = max_n or (8192 if device.type == "cuda" else 4096)
    stats = {"rounds": 0, "longest_s": 0.0}
    start = time.perf_counter()
    try:
        if threads and device.type == "cpu":
            torch.set_num_threads(int(threads))
        if name == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
        with torch.no_grad():
            n = 1024 if device.type == "cuda" else 256
            while True:
                a = torch.randn(n, n, device=device, dtype=torch_dtype)
                b = torch.randn(n, n, device=device, dtype=torch_dtype)
                if fp8:
                    a = a.to(torch.float8_e4m3fn)
                    # _scaled_mm wants its second operand column-major.
                    b = b.to(torch.float8_e4m3fn).t().contiguous().t()
                    one = torch.ones((), device=device, dtype=torch.float32)

                    def gemm() -> Any:
                        return torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                                out_dtype=torch.bfloat16)
                else:
                    c = torch.empty(n, n, device=device, dtype=torch_dtype)

                    def gemm() -> Any:
                        return torch.mm(a, b, out=c)
                gemm()  # first-use costs are not a rate
                sync()
                t = time.perf_counter()
                gemm()
                sync()
                single = max(time.perf_counter() - t, 1e-9)
                stats["longest_s"] = max(stats["longest_s"], single)
                if single >= target or n >= limit or time.perf_counter() - start >= budget:
                    break
                n = min(n * 2, limit)
            per_round = max(1, round(target / single))
            flops = 2.0 * n * n * n * per_round
            best = 0.0
            gemms = 0
            while stats["rounds"] < max(1, rounds) and (
                    stats["rounds"] == 0 or time.perf_counter() - start < budget):
                t = time.perf_counter()
                for _ in range(per_round):
                    gemm()
                sync()
                seconds = max(time.perf_counter() - t, 1e-9)
                stats["longest_s"] = max(stats["longest_s"], seconds)
                best = max(best, flops / seconds / 1e12)
                gemms += per_round
                stats["rounds"] += 1
    except RuntimeError as error:
        raise ValueError(f"the probe failed: {error}") from None
    finally:
        torch.set_num_threads(saved_threads)
        torch.backends.cuda.matmul.allow_tf32 = saved_tf32
    if not best > 0:
        raise ValueError("the probe measured no rate")
    return dict(tflops=best, n=n, gemms=gemms, seconds=time.perf_counter() - start,
                rounds=stats["rounds"], longest_s=stats["longest_s"], by="torch")


def calibrate(device: Any = None, dtype: object = None, force: bool = False,
              budget_s: float = 2.0, threads: int | None = None) -> dict[str, Any] | None:
    """The peak of `device` (None: torch's current CUDA device when CUDA is up, else the CPU) in
    `dtype` (a torch dtype or "bf16", "fp16", "fp32", "tf32", "fp8"; None: VIDEOX_PERF_DTYPE, else
    bf16): from the cache when it holds one (unless `force`), else measured by probe() and cached.
    When metrics are on with VIDEOX_PERF_PEAK_TFLOPS=auto, the engine takes it as this device's
    peak. Returns a dict (device, dtype, tflops, n, gemms, seconds, by, from_cache) or None when
    it cannot be measured (said once on stderr)."""
    name = _reading.dtype_name(dtype) if dtype is not None else (
        (_ext.dtype_override() if _state.on else "") or "bf16")
    if name is None:
        raise ValueError(f"unknown dtype {dtype!r}")
    where = _device(device)
    key = device_key(where, threads)
    why: list[str] = []

    def run_probe() -> tuple[float, int, int, float, str] | None:
        try:
            r = probe(where, name, budget_s=budget_s, threads=threads)
        except ValueError as error:
            why.append(str(error))
            return None
        return (r["tflops"], r["n"], r["gemms"], r["seconds"], r["by"])

    result = _ext.calibrate(key, name, run_probe, bool(force))
    if result is None:
        _state.warn(("peak", key, name), f"no {name} peak measured for {key}: "
                    f"{why[0] if why else 'the probe gave no rate'}; MFU is against the table's "
                    "peak, if any")
        return None
    tflops, n, gemms, seconds, by, from_cache = result
    index = where.index if where.type == "cuda" else -1
    if _state.on and _ext.wants_measured_peak():
        _ext.set_measured_peak(index, name, tflops)
    return dict(device=key, dtype=name, tflops=tflops, n=n, gemms=gemms, seconds=seconds, by=by,
                from_cache=from_cache)


def ensure(index: int, dtype: str | None) -> None:
    """Hands the engine a measured peak for a device (-1: the host) and a model's dtype, once per
    process, when it wants one (VIDEOX_PERF_PEAK_TFLOPS=auto). Called before a request or a step
    is timed, so that a probe never lands inside one."""
    if not _state.on or not _ext.wants_measured_peak():
        return
    name = _ext.dtype_override() or dtype or "bf16"
    key = (index, name)
    with _lock:
        if key in _handed:
            return
        _handed[key] = None
    try:
        _handed[key] = calibrate(index if index >= 0 else "cpu", name)
    except Exception as error:  # measuring must never take a run down
        _state.warn(("peak", key), f"cannot measure the peak: {error!r}")
