"""accelerate: the measurement points of a training loop built on it, as the reference's
framework's scripts are. install_training() patches `Accelerator.accumulate` (a micro-step),
`backward`, `clip_grad_norm_`, `prepare` (the trained model: the largest module it returns, in
whatever shape it returns them, priced in the dtype its `mixed_precision` runs in, in the
parallel layout of its ParallelismConfig and the model's mesh), `maybe_context_parallel` (the
forwards inside it see a sequence shard: their token count is scaled back to the sample's),
`__init__` (the training's set-up begins: the ledger's start-up ends), `end_training` (pending
windows are flushed to the trackers before they close), `save_state` and
`load_state` (checkpoints: outside the steps, with the bytes of the folder) and the
accelerated optimizers' `step` (the step boundary, where `sync_gradients` says the step really
happened). With trackers on, every window also goes to the experiment trackers the program
configured."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

from .. import _ext, _layout, _model, _params, _peak, _reading, _records, _state, _training
from . import diffusers as diffusers_hooks
from . import saves

if TYPE_CHECKING:
    from types import TracebackType

    from torch import nn

    from ..records_types import CrossRankView, Record, TrainWindowRecord

_Function = TypeVar("_Function", bound=Callable[..., Any])


@dataclasses.dataclass
class _Trained:
    """The model being trained as accelerate's prepare() handed it back: re-read once, at the
    first real optimizer step, because a script may freeze weights, turn checkpointing on or wrap
    it again after preparing."""

    module: nn.Module | None = None
    params: int = 0
    reread: bool = False
    mixed: str | None = None
    accelerator: Any = None
    # Whether its forward is timed as the step's priced forward (install_training() always does
    # it), and the module whose forward this wrapped (the model inside DDP's or FSDP's wrapper).
    time_forward: bool = False
    timed: nn.Module | None = None
    # whether prepare() may say what it was given and cannot tell (install_training() with no
    # models: the loop's components are found, not named)
    say_unknown: bool = False


@dataclasses.dataclass
class _Device:
    """Whether the training device was taken from the accelerator (once CUDA is up)."""

    resolved: bool = False


_trained = _Trained()
_device = _Device()


def _note_accelerator(accelerator: Any) -> None:
    """Times on the accelerator's CUDA device once CUDA is up (host clock until then); its
    trackers are where windows go when trackers are on."""
    _tracking.accelerator = accelerator
    if _device.resolved:
        return
    torch = sys.modules.get("torch")
    if torch is None or not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return
    device = getattr(accelerator, "device", None)
    if getattr(device, "type", None) == "cuda":
        _device.resolved = True
        _training.training_device(device)


# accelerate's mixed_precision -> the dtype its forwards run their matmuls in ("no": the weights')
_MIXED_PRECISION = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}


def mixed_precision_dtype(accelerator: Any) -> str | None:
    """The dtype accelerate runs the prepared model's forward in, or None (full precision)."""
    mode = getattr(accelerator, "mixed_precision", None)
    return _MIXED_PRECISION.get(str(getattr(mode, "value", mode) or "").lower())


def prepared_objects(result: Any) -> tuple[Any, ...]:
    """What prepare() handed back as a tuple: accelerate returns a tuple for several objects, one
    object for one, and a list under FSDP2."""
    if isinstance(result, (tuple, list)):
        return tuple(result)
    return (result,)


def _register(module: nn.Module, accelerator: Any, again: bool) -> _model.Model:
    model = _training.read_model(module, mixed=_trained.mixed)
    _ext.train_register_model(model, again)
    _layout.apply(module, accelerator, label="the trained model")
    return model


def time_prepared(say_unknown: bool) -> None:
    """From now on the trained model prepare() is given has its forward timed as the step's
    priced forward (unless something times it already); `say_unknown`: the other modules it is
    given that vxperf cannot place are said, once each, with what to pass."""
    _trained.time_forward = True
    if say_unknown and not _trained.say_unknown:
        _trained.say_unknown = True
        _records.add_sink(_unnamed_work)


# The share of a step in `prep` above which a loop is taken to call models vxperf cannot name.
PREP_SHARE = 0.3


def _unnamed_work(record: Record) -> None:
    """After install_training() with no models: a window with no forward timed and no model
    prepared since (install_training() came after accelerator.prepare()), or whose steps go
    mostly to `prep` (work in a micro-step before any timed model: a VAE or text encoder of no
    library vxperf knows), says once what to do; then the sink goes."""
    if record.get("kind") != "train_window":
        return
    phases = cast("TrainWindowRecord", record).get("phases_s", {})
    step = sum(phases.values())
    if step > 0 and _trained.module is None and "fwd" not in phases:
        # install_training() after accelerator.prepare(): the trained model's forward is prep.
        _state.warn(("prep-share",), f"{phases.get('prep', 0.0) / step:.0%} of each step is "
                    "prep, no forward was timed and no model went through accelerator.prepare() "
                    "since vxperf.install_training(), so the trained model is not priced: call "
                    "install_training() before accelerator.prepare(), or time the model: "
                    "vxperf.register_model(model) and vxperf.instrument_module(model, 'fwd')")
        _records.remove_sink(_unnamed_work)
    elif step > 0 and phases.get("prep", 0.0) > PREP_SHARE * step:
        _state.warn(("prep-share",), f"{phases['prep'] / step:.0%} of each step is prep, the "
                    "work in a micro-step before any timed model: a model vxperf cannot tell "
                    "(not diffusers' or transformers') runs there? Name it: "
                    "vxperf.install_training(models=[TheClass, ...]) times classes by their "
                    "names, vxperf.instrument_module(module, 'vae'|'text_encoder'|'aux') one "
                    "module")
        _records.remove_sink(_unnamed_work)


def _time_forward(module: nn.Module) -> None:
    """Times the trained model's forward (the model inside DDP's or FSDP's wrapper, whose calls
    reach it) as `fwd`; a model timed before by this (a larger one was prepared since) is left
    as it was."""
    inner = _training.unwrapped(module)
    previous = _trained.timed
    if previous is not None and previous is not inner:
        timer = previous.__dict__.get("forward")
        if isinstance(timer, _ext.TimedCall) and timer._vxperf_stage == "fwd":
            del previous.__dict__["forward"]  # its own forward again
    _trained.timed = None
    if _training.forward_phase(inner) == "fwd":
        return  # its class is timed (install_training(models=...)) or the program timed it
    _training.instrument_module(inner, "fwd")
    _trained.timed = inner


def _say_unknown(module: nn.Module, bases: Mapping[str, type]) -> None:
    """A module prepared beside the trained model that is no library's model and not timed: its
    calls fall in `prep`; says once how to time them."""
    inner = _training.unwrapped(module)
    if _training.forward_phase(inner) is not None:
        return
    if any(isinstance(inner, base) for base in bases.values()):
        return
    name = type(inner).__name__
    _state.warn(("prepared", name), f"accelerator.prepare() was given {name} beside the trained "
                "model, and vxperf cannot tell what it is: its calls count as the step's prep. "
                f"Name its phase: vxperf.install_training(models={name}) times its class by its "
                "name, or vxperf.instrument_module(module, 'text_encoder'|'vae'|'aux'|'fwd')")


def _register_prepared(objects: Iterable[Any], accelerator: Any = None) -> None:
    """The largest module prepare() handed back (in this call or an earlier one) is the trained
    model, priced in the dtype the accelerator's mixed precision runs it in (and, after
    install_training(), its forward timed)."""
    import torch

    _trained.mixed = mixed_precision_dtype(accelerator)
    _trained.accelerator = accelerator
    modules = [obj for obj in objects if isinstance(obj, torch.nn.Module)]
    for obj in modules:
        params = _params.count_params(obj)
        if params > _trained.params:
            _trained.module, _trained.params, _trained.reread = obj, params, False
            model = _register(obj, accelerator, False)
            _peak.ensure(_reading.module_device(obj), model.dtype or None)
    if _trained.module is None or not _trained.time_forward:
        return
    if _training.unwrapped(_trained.module) is not _trained.timed:
        _time_forward(_trained.module)
        _training.watch_eval_mode(_trained.module)
    if _trained.say_unknown:
        bases = _training.base_classes()
        for obj in modules:
            if obj is not _trained.module:
                _say_unknown(obj, bases)


def _text_length_seen(module: nn.Module) -> None:
    """The trained model, which advertises no text length, was handed its text at a forward:
    priced again with it (its cross-attention against that many tokens)."""
    if _trained.module is not None and _training.unwrapped(_trained.module) is module:
        _register(_trained.module, _trained.accelerator, True)


_reading.TEXT_LISTENERS.append(_text_length_seen)


def _reread_trained() -> None:
    """At the first step that synced: the trained model read again (its adapters, its casts) and
    an EMA model's updates timed (the script has made it by now)."""
    _trained.reread = True
    diffusers_hooks.time_ema_updates()
    if _trained.module is not None:
        _register(_trained.module, _trained.accelerator, True)


class _AroundMicroStep:
    """accelerate's accumulate() context, with the micro-step scope around it."""
    __slots__ = ("inner",)

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __enter__(self) -> Any:
        _training.end_eval_mode()
        _ext.train_micro_enter()
        try:
            return self.inner.__enter__()
        except BaseException:
            _ext.train_micro_exit()
            raise

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> Any:
        try:
            return self.inner.__exit__(kind, value, traceback)
        finally:
            _ext.train_micro_exit()


def _patched(function: Callable[..., Any], replacement: _Function) -> _Function:
    replacement.__name__ = function.__name__
    replacement.__qualname__ = getattr(function, "__qualname__", function.__name__)
    replacement.__doc__ = function.__doc__
    replacement.__wrapped__ = function  # type: ignore[attr-defined]
    replacement._vxperf_patched = True  # type: ignore[attr-defined]
    return replacement


def _accumulate(function: Callable[..., Any]) -> Callable[..., Any]:
    def accumulate(self: Any, *models: Any) -> Any:
        if not _state.on:
            return function(self, *models)
        _note_accelerator(self)
        return _AroundMicroStep(function(self, *models))

    return _patched(function, accumulate)


def _backward(function: Callable[..., Any]) -> Callable[..., Any]:
    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        _note_accelerator(self)
        _training.end_eval_mode()
        mark = _ext.train_backward_begin()
        try:
            return function(self, *args, **kwargs)
        finally:
            _ext.train_backward_end(mark)

    return _patched(function, backward)


_CLIP = _ext.phase_id("clip")


def _clip(function: Callable[..., Any]) -> Callable[..., Any]:
    def clip_grad_norm_(self: Any, *args: Any, **kwargs: Any) -> Any:
        mark = _ext.train_call_phase_begin(_CLIP)
        try:
            return function(self, *args, **kwargs)
        finally:
            _ext.train_call_phase_end(mark, _CLIP)

    return _patched(function, clip_grad_norm_)


def _optimizer_step(function: Callable[..., Any]) -> Callable[..., Any]:
    def step(self: Any, *args: Any, **kwargs: Any) -> Any:
        _training.end_eval_mode()
        mark = _ext.train_optimizer_begin()
        try:
            return function(self, *args, **kwargs)
        finally:
            # accelerate's step is a no-op on an accumulation micro-step: sync_gradients says which.
            synced = bool(getattr(getattr(self, "gradient_state", None), "sync_gradients", True))
            if synced and not _trained.reread:
                _reread_trained()
            _ext.train_optimizer_end(mark, id(self), synced)

    return _patched(function, step)


def _prepare(function: Callable[..., Any]) -> Callable[..., Any]:
    def prepare(self: Any, *args: Any, **kwargs: Any) -> Any:
        _state.say_training_lines()
        result = function(self, *args, **kwargs)
        try:
            _note_accelerator(self)
            _state.refresh_topology()
            _register_prepared(prepared_objects(result), self)
        except Exception as error:
            _state.warn(("prepare", id(self)), f"cannot size the prepared model: {error!r}")
        return result

    return _patched(function, prepare)


class _SequenceShards:
    """accelerate's context-parallel context, with the forwards inside it priced at the whole
    sequence: each rank's inputs are a 1/cp shard of it."""
    __slots__ = ("inner", "factor")

    def __init__(self, inner: Any, factor: int) -> None:
        self.inner = inner
        self.factor = factor

    def __enter__(self) -> Any:
        value = self.inner.__enter__()
        _ext.push_sequence_shards(self.factor)
        return value

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> Any:
        _ext.pop_sequence_shards()
        return self.inner.__exit__(kind, value, traceback)


def context_parallel_degree(accelerator: Any) -> int:
    """The cp degree whose shards accelerate's maybe_context_parallel hands the forwards, or 1
    (it does nothing without torch context parallel)."""
    config = getattr(accelerator, "parallelism_config", None)
    if config is None or not getattr(config, "cp_enabled", False):
        return 1
    if getattr(config, "cp_backend", "torch") != "torch":
        return 1
    return max(1, int(config.cp_size))


def _maybe_context_parallel(function: Callable[..., Any]) -> Callable[..., Any]:
    def maybe_context_parallel(self: Any, *args: Any, **kwargs: Any) -> Any:
        inner = function(self, *args, **kwargs)
        if not _state.on:
            return inner
        try:
            factor = context_parallel_degree(self)
        except Exception:
            factor = 1
        return _SequenceShards(inner, factor) if factor > 1 else inner

    return _patched(function, maybe_context_parallel)


def _save_state(function: Callable[..., Any]) -> Callable[..., Any]:
    def save_state(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _state.on:
            return function(self, *args, **kwargs)
        # accelerate's save_state returns the folder it wrote
        return saves.save_to_folder(lambda: function(self, *args, **kwargs),
                                    lambda location: location)

    return _patched(function, save_state)


def _load_state(function: Callable[..., Any]) -> Callable[..., Any]:
    def load_state(self: Any, input_dir: Any = None, *args: Any, **kwargs: Any) -> Any:
        if not _state.on:
            return function(self, input_dir, *args, **kwargs)
        with _training.checkpoint("restore") as scope:
            result = function(self, input_dir, *args, **kwargs)
            scope.bytes = saves.folder_bytes(os.fspath(input_dir)) if input_dir else None
            scope.path = input_dir
        return result

    return _patched(function, load_state)


def _init(function: Callable[..., Any]) -> Callable[..., Any]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        function(self, *args, **kwargs)
        # The accelerator made: its device is set, the training's set-up begins (the ledger's
        # start-up ends).
        if _state.on:
            _ext.train_mark_setup()

    return _patched(function, __init__)


def _end_training(function: Callable[..., Any]) -> Callable[..., Any]:
    def end_training(self: Any, *args: Any, **kwargs: Any) -> Any:
        # The windows still pending (held for the cross-rank exchange, or waiting on device
        # events) settle now, while the trackers and the process group are still open.
        if _state.on:
            try:
                _training.finish()
            except Exception as error:
                _state.warn(("end_training", id(self)), f"cannot flush the training windows at "
                            f"end_training(): {error!r}")
        _tracking.closed.add(id(self))
        return function(self, *args, **kwargs)

    return _patched(function, end_training)


def _patch(cls: type, name: str,
           factory: Callable[[Callable[..., Any]], Callable[..., Any]]) -> str | None:
    """Patches a method a class defines itself, once. Returns its name when it is patched (now or
    before), else None."""
    function = cls.__dict__.get(name)
    if function is None:
        return None
    if not getattr(function, "_vxperf_patched", False):
        setattr(cls, name, factory(function))
    return f"{cls.__name__}.{name}"


def patch() -> list[str]:
    """Patches accelerate's measurement points once. Returns the methods patched, as
    "Class.method" (none when accelerate is not importable: said once when it is installed but
    fails to import)."""
    if not _training.present("accelerate"):
        return []
    try:
        from accelerate import Accelerator
        from accelerate.optimizer import AcceleratedOptimizer
    except Exception as error:
        _state.warn(("accelerate", "import"), f"accelerate cannot be patched ({error!r}); use "
                    "the explicit training scopes")
        return []

    points = [(Accelerator, "__init__", _init),
              (Accelerator, "accumulate", _accumulate), (Accelerator, "backward", _backward),
              (Accelerator, "clip_grad_norm_", _clip), (Accelerator, "prepare", _prepare),
              (Accelerator, "maybe_context_parallel", _maybe_context_parallel),
              (Accelerator, "end_training", _end_training),
              (Accelerator, "save_state", _save_state), (Accelerator, "load_state", _load_state),
              (AcceleratedOptimizer, "step", _optimizer_step)]
    try:
        from accelerate.utils import DeepSpeedOptimizerWrapper
    except ImportError:
        pass
    else:
        # Its step is a no-op of its own (DeepSpeed steps inside backward): patched separately.
        points.append((DeepSpeedOptimizerWrapper, "step", _optimizer_step))
    patched = (_patch(cls, name, factory) for cls, name, factory in points)
    return [name for name in patched if name is not None]


# ---- experiment trackers ----------------------------------------------------------------------

@dataclasses.dataclass
class _Tracking:
    """The accelerator the loop uses (the last one that prepared, accumulated or stepped
    backward), whether windows go to its trackers, and the accelerators whose end_training() ran
    (their trackers are closed)."""

    accelerator: Any = None
    on: bool = False
    closed: set[int] = dataclasses.field(default_factory=set)


_tracking = _Tracking()

# Window record fields logged as they are, under perf/ (the record's own units: s, bytes, J, W):
# (object, key, name), the rows of the field table that say so (_ext.tracker_fields()).
_TRACKED = _ext.tracker_fields()

# Trackers that drop a step lower than one already logged (wandb: "Steps must be monotonically
# increasing"): a window that settles after later steps were logged joins the tracker's current
# step there, its perf/step_first and perf/step_last saying which steps it covers.
MONOTONIC = ("wandb", "swanlab", "trackio")


def _lowest(prefix: str, scores: list[float], values: dict[str, Any]) -> None:
    """The lowest of scores by rank under `prefix`_min, and its rank under `prefix`_min_rank."""
    if scores:
        rank = min(range(len(scores)), key=scores.__getitem__)
        values[f"{prefix}_min"] = scores[rank]
        values[f"{prefix}_min_rank"] = rank


def xrank_values(view: CrossRankView) -> dict[str, Any]:
    """The cross-rank view's NVIDIA Resiliency scores as tracker names: for the step and for
    each phase, the lowest relative and individual score over the ranks and the rank holding
    it (a few names whatever the world size; the view in the records keeps every rank's)."""
    values: dict[str, Any] = {}
    _lowest("perf/xrank/relative_score", view.get("relative_score", []), values)
    _lowest("perf/xrank/individual_score", view.get("individual_score", []), values)
    for phase, scores in view.get("phase_scores", {}).items():
        _lowest(f"perf/xrank/phase/{phase}/relative_score", scores["relative"], values)
        _lowest(f"perf/xrank/phase/{phase}/individual_score", scores["individual"], values)
    return values


def tracker_values(record: TrainWindowRecord) -> dict[str, Any]:
    """A training-window record as a tracker's log() takes it: numbers under `perf/` (the
    README lists them), with the steps the window covers."""
    values = {"perf/step_s_p50": record["step_s_p50"], "perf/step_s_p95": record["step_s_p95"],
              "perf/step_first": record["step_first"], "perf/step_last": record["step_last"]}
    for phase, seconds in record.get("phases_s", {}).items():
        values[f"perf/phase/{phase}_s"] = seconds
    fields: Mapping[str, Any] = record  # read by the names the field table gives
    for obj, key, name in _TRACKED:
        value = (fields.get(obj) or {}).get(key) if obj else fields.get(key)
        if value is not None:
            values[f"perf/{name}"] = value
    if "xrank" in record:  # rank 0's, with VIDEOX_PERF_XRANK=1
        values.update(xrank_values(record["xrank"]))
    return values


def _current_step(tracker: Any) -> int | None:
    """The step a monotonic tracker is at (wandb's run.step), or None when it does not say."""
    run = getattr(tracker, "run", None)
    step = getattr(run, "step", None)
    return step if isinstance(step, int) else None


def _define_perf_axis(tracker: Any) -> None:
    """wandb: the perf/ charts plotted against the steps each window covers, wherever the row
    it joined is."""
    run = getattr(tracker, "run", None)
    if run is None or getattr(run, "_vxperf_axis", False):
        return
    try:
        run.define_metric("perf/step_last")
        run.define_metric("perf/*", step_metric="perf/step_last")
        run._vxperf_axis = True
    except Exception:
        pass


def log_to_tracker(tracker: Any, values: Mapping[str, Any], step: int) -> None:
    """One window into one tracker: at its last step, or, on a tracker that accepts only
    increasing steps and has gone past it, at the step the tracker is at (uncommitted, so that
    the program's own next log keeps its step)."""
    name = getattr(tracker, "name", "")
    if name in MONOTONIC:
        if name == "wandb":
            _define_perf_axis(tracker)
        current = _current_step(tracker)
        if current is not None and step < current:
            kwargs = {"commit": False} if name == "wandb" else {}
            tracker.log(values, step=None, **kwargs)
            return
    tracker.log(values, step=step)


def _log_window(record: Record) -> None:
    if record.get("kind") != "train_window":
        return
    accelerator = _tracking.accelerator
    if accelerator is None or not getattr(accelerator, "is_main_process", True):
        return
    if id(accelerator) in _tracking.closed:
        return  # end_training() closed its trackers; this window went to the records only
    window = cast("TrainWindowRecord", record)  # its kind says so
    values = tracker_values(window)
    step = window["step_last"]
    for tracker in getattr(accelerator, "trackers", ()) or ():
        try:
            log_to_tracker(tracker, values, step)
        except Exception as error:
            _state.warn(("tracker", getattr(tracker, "name", type(tracker).__name__)),
                        f"tracker {getattr(tracker, 'name', type(tracker).__name__)} refused a "
                        f"training window ({error!r}, said once); the records keep it")


def enable_trackers() -> None:
    """Logs every window from now on through the loop's accelerator's trackers, at the window's
    last global step, on its main process (accelerate logs there only); never initializes a
    tracker: whatever the program's init_trackers() set up gets the numbers."""
    if not _tracking.on:
        _tracking.on = True
        _records.add_sink(_log_window)
