"""install() and install_training(): the reference module's entry points, wiring the core
(_inference, _training) to the libraries a program uses (vxperf/integrations)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any

from . import _ext, _inference, _state, _training
from .integrations import accelerate, diffusers, saves, torch_checkpoint


@dataclasses.dataclass
class _Announced:
    """Whether the one line saying each half is on was written (once per process)."""

    inference: bool = False
    training: bool = False


_announced = _Announced()


def _pipeline_classes(target: Any, base: type | None) -> list[type]:
    """The pipeline classes named by `target`: a class, a module holding them, or an iterable."""
    if isinstance(target, type):
        return [target]
    if inspect.ismodule(target):
        found: list[type] = []
        for value in list(vars(target).values()):
            if not isinstance(value, type):
                continue
            if base is not None and issubclass(value, base):
                found.append(value)
            elif base is None and "__call__" in value.__dict__ and hasattr(value, "components"):
                found.append(value)
        return found
    if isinstance(target, (list, tuple, set, frozenset)):
        return [cls for item in target for cls in _pipeline_classes(item, base)]
    _state.warn(("install", repr(target)), f"install(): {target!r} is neither a pipeline class nor "
                "a module of them; ignored")
    return []


def install(level: int | None = None, pipelines: Any = None) -> bool:
    """Measures every pipeline call from now on. No-op unless VIDEOX_PERF is set (or `level` > 0).

    Wraps the `__call__` of: the classes in `pipelines` (a class, a module holding pipeline
    classes, or a list of either); every `diffusers.DiffusionPipeline` subclass, present and
    future, when diffusers is importable; and `videox_fun.pipeline`'s, when that is importable.
    Returns whether metrics are on."""
    if not _state.switch_on(level):
        return False
    _inference.requests.on = True
    base = diffusers.pipeline_base()
    classes: list[type] = []
    if pipelines is not None:
        classes += _pipeline_classes(pipelines, base)
    if base is not None:
        diffusers.watch_subclasses(base, _inference.instrument_pipeline_class)
        classes += diffusers.subclasses(base)
    videox = diffusers.optional_import("videox_fun.pipeline")
    if videox is not None:
        classes += _pipeline_classes(videox, base)
    measured = 0
    seen: set[int] = set()
    for cls in classes:
        if id(cls) not in seen:
            seen.add(id(cls))
            _inference.instrument_pipeline_class(cls)
            measured += _inference.measures(cls)
    if not _announced.inference:
        _announced.inference = True
        # What is measured is each call that runs; the classes wrapped so far are few or none
        # under diffusers, which defines its pipelines as they are first named.
        _ext.perf_line(f"inference metrics enabled (level {_ext.level()}): "
                       + _measured_text(measured, base))
    return True


def _measured_text(measured: int, base: type | None) -> str:
    """What the inference start line says is measured, given the classes wrapped so far."""
    wrapped = f"{measured} class{'es' if measured != 1 else ''} wrapped"
    if base is not None:
        so_far = f"{wrapped} so far, and " if measured else ""
        return (f"each pipeline call is measured as a request as it runs ({so_far}each "
                f"{base.__name__} subclass wrapped as it is defined)")
    if measured:
        return f"each pipeline call is measured as a request as it runs ({wrapped})"
    return ("no pipeline class found to measure: name yours with install(pipelines=...) or "
            "vxperf.instrument_pipeline(pipe)")


def install_training(level: int | None = None, models: Any = None,
                     trackers: bool = False) -> bool:
    """Measures the training loop from now on. No-op unless VIDEOX_PERF is set (or `level` > 0).

    Patches accelerate when it is importable (accumulate, backward, clip_grad_norm_, prepare,
    save_state, load_state and the accelerated optimizers' step) and torch.distributed.checkpoint's
    save and load (checkpoints, outside the steps), and times the model classes in `models` (a
    class, a list of them, or a module holding them; plus videox_fun.models when importable) as
    the phases their
    names say. `trackers`: also log every window through accelerate's trackers
    (Accelerator.log, names under perf/); VIDEOX_PERF_TRACKERS=0/1 overrides it. Returns whether
    metrics are on."""
    if not _state.switch_on(level):
        return False
    setting = _ext.trackers_setting()
    if (setting == 1) or (setting == -1 and trackers):
        accelerate.enable_trackers()
    try:
        methods = accelerate.patch()
        checkpoints = torch_checkpoint.patch()
        bases = _training.base_classes()
        checkpoints += saves.patch(bases)
        diffusers.time_ema_updates()  # else at the first step (accelerate's)
        for base in bases.values():
            _load_as_evaluation(base)
        _watch_pipelines()
        targets: list[Any] = [] if models is None else [models]
        if _training.present("videox_fun"):
            try:
                targets.append(importlib.import_module("videox_fun.models"))
            except Exception:
                pass
        classes, skipped = _training.model_classes(targets, bases)
        wrapped = 0
        for cls in dict.fromkeys(classes):
            wrapped += _training.instrument_model_class(cls, _training.class_phase(cls, bases))
        components = _library_components(bases) if models is None else 0
        accelerate.time_prepared(models is None)
    except Exception as error:
        _state.warn(("install_training",), f"training metrics not installed: {error!r}")
        return False
    if not _announced.training:
        _announced.training = True

        def announce() -> None:
            said = ([f"accelerate: {', '.join(methods)}"] if methods else []) + (
                [f"checkpoints: {', '.join(checkpoints)}"] if checkpoints else [])
            named = f" ({'; '.join(said)})" if said else ""
            _ext.perf_line(f"training metrics enabled (level {_ext.level()}) on {len(methods)} "
                           f"accelerate methods and {wrapped} model classes ({skipped} non-model "
                           f"classes skipped), reporting every {_ext.window_steps()} "
                           f"steps{named}")
            # Said where the line above is (rank 0 by default), not once by each of a job's ranks.
            if models is None and (methods or bases) and _ext.logs_here():
                # The reference's line above counts named classes only: what is found instead.
                found = (["the model given to accelerator.prepare() as the priced forward"]
                         if methods else []) + (
                    [f"{' and '.join(bases)}' VAEs, text encoders and vision towers as their "
                     f"phases ({components} classes now, and each one defined later)"]
                    if bases else [])
                _ext.notice(f"vxperf: no models named; timing {', and '.join(found)} "
                            "(install_training(models=...) names them instead)")

        if _state.training_lines_wait:
            _state.training_lines.append(announce)
        else:
            announce()
    return True


def _load_as_evaluation(cls: type) -> None:
    """`cls.from_pretrained` (a library's model base class) timed as an evaluation once a loop
    runs: VideoX-Fun's validation loads a fresh transformer and copies the trained weights into it
    before it makes the pipeline, seconds of a real model's loading that are no step's data wait.
    Inside a checkpoint's restore (accelerate's load hooks) it is part of the restore."""
    loads = cls.__dict__.get("from_pretrained")
    if isinstance(loads, classmethod) and not getattr(loads.__func__, "_vxperf_wrapped", False):
        cls.from_pretrained = classmethod(  # type: ignore[attr-defined]
            _inference.as_evaluation(loads.__func__))


def _watch_pipelines() -> None:
    """Wraps diffusers' pipeline classes, present and defined later (diffusers defines them as
    they are first named, after this), so that one called while the loop runs is timed as its
    evaluation, and times DiffusionPipeline.save_pretrained as one save. Watched from diffusers'
    ConfigMixin, which the model base class has imported already, not by importing the
    pipelines here (a second of start-up in a program that may never use one)."""
    config = _training.library_class("diffusers.configuration_utils", "ConfigMixin")
    if config is None:
        return

    def seen(cls: type) -> None:
        if diffusers.is_pipeline_base(cls):
            saves.patch_save_pretrained(cls)
            _load_as_evaluation(cls)
        elif diffusers.is_pipeline_class(cls):
            _inference.instrument_pipeline_class(cls)
            made = cls.__dict__.get("__init__")
            if made is not None and not getattr(made, "_vxperf_wrapped", False):
                cls.__init__ = _inference.as_evaluation(made)  # type: ignore[misc]

    diffusers.watch_subclasses(config, seen)
    for cls in diffusers.subclasses(config):
        seen(cls)


def _library_components(bases: dict[str, type]) -> int:
    """Times the frozen components a training loop calls, the libraries' model classes that are
    not a trained transformer (a VAE's encode and decode, a text encoder, a vision tower), as the
    phases their classes say, present and defined later; only while a training loop runs. The
    trained model itself is the one accelerator.prepare() is given. Returns the classes wrapped
    now."""
    def wrap(cls: type) -> bool:
        phase = _training.class_phase(cls, bases)
        return phase != "fwd" and _training.instrument_model_class(cls, phase, in_training=True)

    wrapped = 0
    for base in bases.values():
        diffusers.watch_subclasses(base, wrap)
        wrapped += sum(wrap(cls) for cls in diffusers.subclasses(base))
    return wrapped
