"""accelerate: the measurement points of a training loop built on it, as the reference's
framework's scripts are. install_training() patches `Accelerator.accumulate` (a micro-step),
`backward`, `clip_grad_norm_`, `prepare` (the trained model: the largest module it returns, priced
in the dtype its `mixed_precision` runs in) and the accelerated optimizers' `step` (the step
boundary, where `sync_gradients` says the step really happened). With trackers on, every window
also goes to the experiment trackers the program configured, through `Accelerator.log()`."""

import sys

from .. import _ext, _peak, _reading, _records, _state, _training

# The model being trained as accelerate's prepare() handed it back: re-read once, at the first
# real optimizer step, because a script may freeze weights or turn checkpointing on after
# preparing.
_trained = {"module": None, "params": 0, "reread": False, "mixed": None}
_device = {"resolved": False}


def _note_accelerator(accelerator):
    """Times on the accelerator's CUDA device once CUDA is up (host clock until then); its log()
    is where windows go when trackers are on."""
    _tracking["accelerator"] = accelerator
    if _device["resolved"]:
        return
    torch = sys.modules.get("torch")
    if torch is None or not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return
    device = getattr(accelerator, "device", None)
    if getattr(device, "type", None) == "cuda":
        _device["resolved"] = True
        _training.training_device(device)


# accelerate's mixed_precision -> the dtype its forwards run their matmuls in ("no": the weights')
_MIXED_PRECISION = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}


def mixed_precision_dtype(accelerator):
    """The dtype accelerate runs the prepared model's forward in, or None (full precision)."""
    mode = getattr(accelerator, "mixed_precision", None)
    return _MIXED_PRECISION.get(str(getattr(mode, "value", mode) or "").lower())


def _register_prepared(objects, accelerator=None):
    """The largest module prepare() handed back is the trained model, priced in the dtype the
    accelerator's mixed precision runs it in."""
    import torch

    running = mixed_precision_dtype(accelerator)
    _trained["mixed"] = running
    for obj in objects:
        if not isinstance(obj, torch.nn.Module):
            continue
        params = _reading.count_params(obj, _state.world_size())
        if params > _trained["params"]:
            _trained.update(module=obj, params=params, reread=False)
            read = _training.read_model(obj, mixed=running)
            _ext.train_register_model(read["params"], read["trainable"], read["checkpointing"],
                                      read["widths"], read["text_tokens"], False,
                                      dtype=read["dtype"], attn_density=read["attn_density"])
            _peak.ensure(_reading.module_device(obj), read["dtype"] or None)


def _reread_trained():
    _trained["reread"] = True
    module = _trained["module"]
    if module is None:
        return
    read = _training.read_model(module, mixed=_trained.get("mixed"))
    _ext.train_register_model(read["params"], read["trainable"], read["checkpointing"],
                              read["widths"], read["text_tokens"], True, dtype=read["dtype"],
                              attn_density=read["attn_density"])


class _AroundMicroStep:
    """accelerate's accumulate() context, with the micro-step scope around it."""
    __slots__ = ("inner",)

    def __init__(self, inner):
        self.inner = inner

    def __enter__(self):
        _ext.train_micro_enter()
        try:
            return self.inner.__enter__()
        except BaseException:
            _ext.train_micro_exit()
            raise

    def __exit__(self, kind, value, traceback):
        try:
            return self.inner.__exit__(kind, value, traceback)
        finally:
            _ext.train_micro_exit()


def _patched(function, replacement):
    replacement.__name__ = function.__name__
    replacement.__qualname__ = getattr(function, "__qualname__", function.__name__)
    replacement.__doc__ = function.__doc__
    replacement.__wrapped__ = function
    replacement._vxperf_patched = True
    return replacement


def _accumulate(function):
    def accumulate(self, *models):
        if not _state.on:
            return function(self, *models)
        _note_accelerator(self)
        return _AroundMicroStep(function(self, *models))

    return _patched(function, accumulate)


def _backward(function):
    def backward(self, *args, **kwargs):
        _note_accelerator(self)
        mark = _ext.train_backward_begin()
        try:
            return function(self, *args, **kwargs)
        finally:
            _ext.train_backward_end(mark)

    return _patched(function, backward)


def _clip(function):
    def clip_grad_norm_(self, *args, **kwargs):
        mark = _ext.train_clip_begin()
        try:
            return function(self, *args, **kwargs)
        finally:
            _ext.train_clip_end(mark)

    return _patched(function, clip_grad_norm_)


def _optimizer_step(function):
    def step(self, *args, **kwargs):
        mark = _ext.train_optimizer_begin()
        try:
            return function(self, *args, **kwargs)
        finally:
            # accelerate's step is a no-op on an accumulation micro-step: sync_gradients says which.
            synced = bool(getattr(getattr(self, "gradient_state", None), "sync_gradients", True))
            if synced and not _trained["reread"]:
                _reread_trained()
            _ext.train_optimizer_end(mark, id(self), synced)

    return _patched(function, step)


def _prepare(function):
    def prepare(self, *args, **kwargs):
        result = function(self, *args, **kwargs)
        try:
            _note_accelerator(self)
            _state.refresh_topology()
            _register_prepared(result if isinstance(result, tuple) else (result,), self)
        except Exception as error:
            _state.warn(("prepare", id(self)), f"cannot size the prepared model: {error!r}")
        return result

    return _patched(function, prepare)


def _patch(cls, name, factory):
    function = cls.__dict__.get(name)
    if function is None or getattr(function, "_vxperf_patched", False):
        return 0
    setattr(cls, name, factory(function))
    return 1


def patch():
    """Patches accelerate's measurement points once. Returns the number of methods patched (0
    when accelerate is not importable: said once when it is installed but fails to import)."""
    if not _training.present("accelerate"):
        return 0
    try:
        from accelerate import Accelerator
        from accelerate.optimizer import AcceleratedOptimizer
    except Exception as error:
        _state.warn(("accelerate", "import"), f"accelerate cannot be patched ({error!r}); use "
                    "the explicit training scopes")
        return 0

    count = _patch(Accelerator, "accumulate", _accumulate)
    count += _patch(Accelerator, "backward", _backward)
    count += _patch(Accelerator, "clip_grad_norm_", _clip)
    count += _patch(Accelerator, "prepare", _prepare)
    count += _patch(AcceleratedOptimizer, "step", _optimizer_step)
    try:
        from accelerate.utils import DeepSpeedOptimizerWrapper
    except ImportError:
        pass
    else:
        # Its step is a no-op of its own (DeepSpeed steps inside backward): patched separately.
        count += _patch(DeepSpeedOptimizerWrapper, "step", _optimizer_step)
    return count


# ---- experiment trackers ----------------------------------------------------------------------

# The accelerator the loop uses (the last one that prepared, accumulated or stepped backward).
_tracking = {"accelerator": None, "on": False}

# Window record fields logged as they are, under perf/ (the record's own units: s, bytes, J, W).
_LOGGED = ("peak_alloc_bytes", "peak_reserved_bytes", "eta_s", "energy_j", "power_w_mean",
           "energy_j_per_sample")
_THROUGHPUT = ("samples_per_s", "tflops", "hw_tflops", "mfu", "hfu")


def tracker_values(record):
    """A training-window record as accelerate's log() takes it: numbers under `perf/` (the
    README lists them)."""
    values = {"perf/step_s_p50": record["step_s_p50"], "perf/step_s_p95": record["step_s_p95"]}
    for phase, seconds in record.get("phases_s", {}).items():
        values[f"perf/phase/{phase}_s"] = seconds
    throughput = record.get("throughput") or {}
    for key in _THROUGHPUT:
        if throughput.get(key) is not None:
            values[f"perf/{key}"] = throughput[key]
    for key in _LOGGED:
        if record.get(key) is not None:
            values[f"perf/{key}"] = record[key]
    return values


def _log_window(record):
    if record.get("kind") != "train_window":
        return
    accelerator = _tracking["accelerator"]
    if accelerator is None or not getattr(accelerator, "is_main_process", True):
        return
    accelerator.log(tracker_values(record), step=record["step_last"])


def enable_trackers():
    """Logs every window from now on through the loop's Accelerator.log(), at the window's last
    global step, on its main process (accelerate logs there only); never initializes a tracker:
    whatever the program's init_trackers() set up gets the numbers."""
    if not _tracking["on"]:
        _tracking["on"] = True
        _records.add_sink(_log_window)

