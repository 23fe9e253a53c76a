"""Training: each global step split into phases, with no device synchronize at all.

Two ways in. `install_training()` (vxperf/_install.py) patches accelerate (integrations/
accelerate.py: what every training script of the reference's framework shares) and wraps the model
classes it is given, classified into phases here. Loops without accelerate use the explicit
scopes: micro_step(), model_call(), backward(), phase() (clip() is phase("clip")),
optimizer_step(), plus register_model() and instrument_module(). Both end in the engine's trainer:
steps, settling, windows, records and log lines are the C++ engine's."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import os
import sys
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Callable, Literal, TypeVar, cast

from . import _blocks, _ext, _layout, _model, _params, _peak, _profiler, _reading, _stages, _state

if TYPE_CHECKING:
    from types import ModuleType, TracebackType

    from torch import nn

_Module = TypeVar("_Module", bound="nn.Module")
# The engine's phase table (include/vxperf/phases.h), in its order: every phase of a step, and
# those a model call can be.
PHASES = tuple(_ext.phases())
MODEL_PHASES = tuple(_ext.model_phases())
CALL_PHASES = tuple(_ext.call_phases())  # timed as calls of their own: phase()
# A VAE's methods and the phase each is timed in: the phase of its stage in the stage table.
VAE_METHODS = (("encode", _stages.VAE_ENCODE.phase), ("decode", _stages.VAE_DECODE.phase),
               ("encode_stream", _stages.VAE_ENCODE.phase),
               ("decode_stream", _stages.VAE_DECODE.phase))

# The libraries' model base classes, by library: name -> a function returning the class or None
# (the integrations fill it: diffusers' ModelMixin, transformers' PreTrainedModel).
MODEL_BASES: dict[str, Callable[[], type | None]] = {}


# ---- the trained model put in eval mode between the steps ---------------------------------------


@dataclasses.dataclass
class _EvalMode:
    """An evaluation loop written by hand (model.eval(), calls under torch.no_grad(), then
    model.train()) between the steps: the trained model's eval() opens an evaluation, its train()
    closes it, and so does the next step's training work (a micro-step, a forward with gradients,
    backward, the optimizer's step) where a script never calls train() again."""

    watched: Any = None  # a weakref to the trained model (inside its wrappers)
    patched: bool = False
    scope: _Outside | None = None
    hook: Any = None  # the forward pre-hook that closes the scope at a forward with gradients


_eval_mode = _EvalMode()


def watch_eval_mode(module: nn.Module) -> None:
    """Makes the trained model's eval() between the steps an evaluation, as its train() ends it
    (`module` replaces the one watched before). Patches torch.nn.Module.train once: an instance
    attribute would follow the model into a deepcopy (an EMA's copy) and switch the original."""
    import torch

    if not _eval_mode.patched:
        _eval_mode.patched = True
        original = torch.nn.Module.train
        if not getattr(original, "_vxperf_patched", False):
            def train(self: nn.Module, mode: bool = True) -> nn.Module:
                result = original(self, mode)
                watched = _eval_mode.watched
                if _state.on and watched is not None and watched() is self:
                    _model_mode(self, bool(mode))
                return result

            train.__doc__ = original.__doc__
            train._vxperf_patched = True  # type: ignore[attr-defined]
            torch.nn.Module.train = train
    _eval_mode.watched = weakref.ref(unwrapped(module))


def _model_mode(module: nn.Module, training: bool) -> None:
    if not _state.on_main_thread():
        return  # the loop runs on the main thread; another one's eval() is none of its time
    if training:
        end_eval_mode()
    elif _eval_mode.scope is None and _ext.train_steps_closed() > 0:
        scope = _Outside(_ext.phase_id("eval"), None)
        scope.__enter__()
        _eval_mode.scope = scope
        _eval_mode.hook = module.register_forward_pre_hook(_forward_with_gradients)


def _forward_with_gradients(module: nn.Module, args: Any) -> None:
    """A forward of the trained model with gradients on: training again, whatever its mode."""
    import torch

    if torch.is_grad_enabled():
        end_eval_mode()


def end_eval_mode() -> None:
    """Closes the evaluation the trained model's eval() opened, if one is open."""
    scope, hook = _eval_mode.scope, _eval_mode.hook
    if scope is None:
        return
    _eval_mode.scope = _eval_mode.hook = None
    if hook is not None:
        hook.remove()
    scope.__exit__(None, None, None)


# ---- the explicit scopes ------------------------------------------------------------------------


class _MicroStep:
    __slots__ = ()

    def __enter__(self) -> _MicroStep:
        if _eval_mode.scope is not None:
            end_eval_mode()
        _ext.train_micro_enter()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        _ext.train_micro_exit()
        return False


_MICRO_STEP = _MicroStep()


def micro_step() -> _MicroStep | _ext.NullContext:
    """A `with` scope around one micro-step (one `accumulate` block): gives the `data` wait before
    it and the `prep` work at its head."""
    if not _state.on:
        return _ext.NULL_SCOPE
    return _MICRO_STEP


class _ModelCall:
    __slots__ = ("phase", "tokens", "samples", "fraction", "mark")

    def __init__(self, phase: int, tokens: int, samples: int, fraction: float) -> None:
        self.phase = phase
        self.tokens = tokens
        self.samples = samples
        self.fraction = fraction

    def __enter__(self) -> _ModelCall:
        self.mark = _ext.train_call_begin(self.phase)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        _ext.train_call_end(self.mark, self.phase, self.tokens, self.samples, self.fraction)
        return False


def _phase(name: str) -> int:
    if name not in MODEL_PHASES:
        _state.warn(("phase", name), f"'{name}' is not a model phase (one of "
                    f"{', '.join(MODEL_PHASES)}); not timed")
        return -1
    return _ext.phase_id(name)


def model_call(phase: str = "fwd", tokens: int | None = 0, samples: int | None = 1,
               fraction: float = 1.0) -> _ModelCall | _ext.NullContext:
    """A `with` scope around one model call of the step, in `phase` (vae_enc, vae_dec,
    text_encoder, aux or fwd). For the trained model's forward, `tokens` per sample and `samples`
    in the call price the step; `fraction` < 1 says the forward computed only part of the model
    (0: skipped), priced at that part with its backward. Calls nested in another, or made inside
    backward() (checkpoint recomputation), fold into the outer one."""
    if not _state.on:
        return _ext.NULL_SCOPE
    pid = _phase(phase)
    if pid < 0:
        return _ext.NULL_SCOPE
    return _ModelCall(pid, int(tokens or 0), int(samples or 1), float(fraction))


class _Interval:
    __slots__ = ("begin", "end", "mark")

    def __init__(self, begin: Callable[[], _ext.TrainMark],
                 end: Callable[[_ext.TrainMark], None]) -> None:
        self.begin = begin
        self.end = end

    def __enter__(self) -> _Interval:
        self.mark = self.begin()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        self.end(self.mark)
        return False


def backward() -> _Interval | _ext.NullContext:
    """A `with` scope around the backward pass."""
    if not _state.on:
        return _ext.NULL_SCOPE
    if _eval_mode.scope is not None:
        end_eval_mode()
    return _Interval(_ext.train_backward_begin, _ext.train_backward_end)


class _PhaseCall:
    __slots__ = ("phase", "mark")

    def __init__(self, phase: int) -> None:
        self.phase = phase

    def __enter__(self) -> _PhaseCall:
        self.mark = _ext.train_call_phase_begin(self.phase)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        _ext.train_call_phase_end(self.mark, self.phase)
        return False


def phase(name: str) -> _PhaseCall | _ext.NullContext:
    """A `with` scope around one call of a call phase of the phase table: "clip", or a program's
    own (a row in include/vxperf/phases.h, such as an EMA update, is all a new one takes). Its
    time is the phase's in the step, as records, lines, traces, the report and trackers show it.
    A name that is not a call phase is said once and not timed."""
    if not _state.on:
        return _ext.NULL_SCOPE
    if name not in CALL_PHASES:
        _state.warn(("call-phase", name), f"'{name}' is not a call phase (one of "
                    f"{', '.join(CALL_PHASES)}); not timed")
        return _ext.NULL_SCOPE
    return _PhaseCall(_ext.phase_id(name))


def clip() -> _PhaseCall | _ext.NullContext:
    """A `with` scope around gradient clipping: phase("clip")."""
    return phase("clip")


def _checkpoint_path(path: str | os.PathLike[str] | None) -> str:
    """A checkpoint's path as vxperf keeps it (absolute), "" when there is none or it is no path."""
    if path is None:
        return ""
    try:
        return os.path.abspath(os.fspath(path))
    except (TypeError, ValueError):
        _state.warn(("checkpoint-path", type(path).__name__), f"checkpoint path {path!r} is not a "
                    "path; its step is not kept")
        return ""


class _Outside:
    """A call outside the steps; `bytes`, `path` and (a restore's) `step` may be set inside."""

    __slots__ = ("phase", "bytes", "path", "step", "mark")

    def __init__(self, phase: int, size: Any, path: Any = None, step: Any = None) -> None:
        self.phase = phase
        self.bytes = size
        self.path = path
        self.step = step

    def __enter__(self) -> _Outside:
        self.mark = _ext.train_outside_begin(self.phase)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        size = self.bytes
        try:
            size = -1 if size is None else max(int(size), -1)
        except (TypeError, ValueError):
            _state.warn(("outside-bytes", repr(size)), f"checkpoint bytes {size!r} is not a "
                        "count; not said")
            size = -1
        step = self.step
        if step is not None and not (isinstance(step, int) and step >= 0):
            _state.warn(("checkpoint-step", repr(step)), f"checkpoint step {step!r} is not a "
                        "step number; the saved one is used")
            step = None
        _ext.train_outside_end(self.mark, self.phase, size, _checkpoint_path(self.path),
                               -1 if step is None else step)
        return False


class _NoOutside:
    """What checkpoint() and evaluation() give while not timing: `.bytes` can still be set."""

    __slots__ = ("bytes", "path", "step")

    def __init__(self) -> None:
        self.bytes: Any = None
        self.path: Any = None
        self.step: Any = None

    def __enter__(self) -> _NoOutside:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        return False


_OUTSIDE_KINDS = ("save", "restore")


def checkpoint(kind: str = "save", bytes: int | None = None, path: Any = None,
               step: int | None = None) -> _Outside | _NoOutside:
    """A `with` scope around saving (kind="save") or restoring ("restore") a checkpoint: its
    seconds, and `bytes` written or read where known (or set `.bytes` on the scope inside), go
    to the next window's "outside" object, never into a step's time or data wait. With `path`
    (the checkpoint's folder or file), a save's step is kept beside the records file and a
    restore of it, in this attempt of the job or a later one, numbers the steps on from there
    (`step=` says the restored step outright), on any rank of the job: one that restores what the
    main process alone saved finds the step in that rank's file (VIDEOX_PERF_JSON set on every
    rank, in a folder they all read). accelerate's save_state/load_state and
    torch.distributed.checkpoint's save/load are timed so already (install_training()). Another
    kind is said once and not timed."""
    if not _state.on:
        return _NoOutside()
    if kind not in _OUTSIDE_KINDS:
        _state.warn(("checkpoint-kind", repr(kind)), f"checkpoint({kind!r}): the kind is "
                    "\"save\" or \"restore\"; not timed")
        return _NoOutside()
    # A save after a hand-written evaluation loop, before the model's train() (as accelerate's
    # examples save at an epoch's end): the evaluation the model's eval() opened ends here.
    end_eval_mode()
    return _Outside(_ext.phase_id(kind), bytes, path, step)


def evaluation() -> _Outside | _NoOutside:
    """A `with` scope around an evaluation (validation) pass inside the training loop: its time
    goes to the next window's "outside" object, never into a step."""
    if not _state.on:
        return _NoOutside()
    return _Outside(_ext.phase_id("eval"), None)


class _OptimizerStep:
    __slots__ = ("owner", "synced", "mark")

    def __init__(self, owner: int, synced: bool) -> None:
        self.owner = owner
        self.synced = synced

    def __enter__(self) -> _OptimizerStep:
        if _eval_mode.scope is not None:
            end_eval_mode()
        self.mark = _ext.train_optimizer_begin()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        _ext.train_optimizer_end(self.mark, self.owner, self.synced)
        return False


def optimizer_step(optimizer: object,
                   synced: bool = True) -> _OptimizerStep | _ext.NullContext:
    """A `with` scope around one optimizer step call. `synced`: whether it really stepped (False on
    a gradient-accumulation pass-through). The first optimizer to close a step owns the step
    boundary from then on; the others' time still counts as `opt`."""
    if not _state.on:
        return _ext.NULL_SCOPE
    return _OptimizerStep(id(optimizer), bool(synced))


def read_model(module: nn.Module, lora: bool = False, mixed: str | None = None) -> _model.Model:
    """The Model of the trained model; `mixed`: the dtype a mixed-precision recipe runs its
    matmuls in (accelerate's mixed_precision), which beats the weights' own."""
    widths = _reading.priced_widths(module, "the trained model")
    counted = _params.count(module)
    return _model.Model(
        params=counted.params,
        trainable=counted.lora if lora else counted.trainable,
        checkpointing=_reading.checkpointing(module),
        widths=widths,
        # what the model inside a data-parallel wrapper says, or its calls were seen to receive
        text_tokens=_reading.text_tokens(unwrapped(module)) if widths else 0,
        dtype=mixed or _reading.param_dtype(module) or "",
        storage_dtype=_reading.storage_dtype(module) or "",
        attn_density=float(getattr(module, "_vxperf_attn_density", None) or 1.0),
    )


@dataclasses.dataclass
class _Declared:
    """A register_model() call: what it read from its module and what it said itself."""

    module: nn.Module | None
    lora: bool
    given: dict[str, Any]
    widths: tuple[int, ...] | None

    def model(self) -> _model.Model:
        read = read_model(self.module, self.lora) if self.module is not None else _model.Model(
            params=int(cast(int, self.given["params"])))
        model = read.but(**self.given)
        if self.widths is not None:  # () says: no attention to price
            model = dataclasses.replace(
                model, widths=cast("tuple[int, int, int] | None", self.widths or None))
        return model


@dataclasses.dataclass
class _Registered:
    """The largest model register_model() read from a module (the one the loop trains): the
    module by a weak reference (a program may drop it), and what the call said itself."""

    module: Any = None  # a weakref.ref
    call: _Declared | None = None
    params: int = 0


_declared = _Registered()


def _text_length_seen(module: nn.Module) -> None:
    """The registered model, which advertises no text length (diffusers' do not), was handed its
    text at a call: registered again, its cross-attention priced against that many tokens."""
    call = _declared.call
    registered = _declared.module() if _declared.module is not None else None
    if call is None or registered is None or unwrapped(registered) is not module:
        return
    if call.given.get("text_tokens") is None:
        _ext.train_register_model(dataclasses.replace(call, module=registered).model(), True)


_reading.TEXT_LISTENERS.append(_text_length_seen)


def register_model(module: nn.Module | None = None, *, params: int | None = None,
                   trainable: int | None = None, lora: bool = False,
                   checkpointing: bool | None = None, widths: Iterable[int] | None = None,
                   text_tokens: int | None = None, dtype: object = None,
                   attn_density: float | None = None) -> None:
    """Says what model is trained; the largest one registered wins.

    Read from `module` (parameters unsharded under FSDP, those with requires_grad as trainable, or
    with lora=True those of the `lora_` adapters; gradient checkpointing from any submodule's
    `gradient_checkpointing`; attention widths and `text_len`, else the text length its first
    call receives; the parameters' dtype, which picks the peak; the attention density of
    set_attention_density()), or given. The trainable share
    decides the FLOPs multiplier (3x full, 2x below 50%), checkpointing adds one for HFU. With
    VIDEOX_PERF_PEAK_TFLOPS=auto the module's device is probed now (once), before any step."""
    if not _state.on:
        return
    _profiler.attach()
    if module is None and params is None:
        raise TypeError("register_model() needs a module or params")
    declared = _Declared(module, lora, dict(
        params=None if params is None else int(params),
        trainable=None if trainable is None else int(trainable),
        checkpointing=None if checkpointing is None else bool(checkpointing),
        text_tokens=None if text_tokens is None else int(text_tokens),
        dtype=_reading.dtype_name(dtype) if dtype else None,
        attn_density=None if attn_density is None else float(attn_density)),
        None if widths is None else tuple(widths))
    model = declared.model()
    _ext.train_register_model(model, False)
    if module is not None and model.params > _declared.params:
        # the largest model registered is the trained one: read again when its text shows, its
        # eval() between the steps an evaluation
        _declared.module = weakref.ref(module)
        _declared.call = dataclasses.replace(declared, module=None)
        _declared.params = model.params
        watch_eval_mode(module)
    if module is not None:
        _layout.apply(module, label="the trained model")
        _peak.ensure(_reading.module_device(module), model.dtype or None)


def training_device(device: object, stream: Any = None) -> None:
    """Times the training phases on a CUDA device (events on `stream`, default torch's current
    stream of that device) instead of the host clock alone."""
    if not _state.on:
        return
    _profiler.attach()
    index = _state.cuda_index(device)
    if index < 0:
        _ext.train_set_device(-1, 0)
        return
    _state.ensure_cuda(index)
    handle = _state.current_stream(index) if stream is None else int(
        getattr(stream, "cuda_stream", stream))
    _ext.train_set_device(index, handle)


def finish() -> None:
    """Settles every pending step, writes the partial window, the training's final record (its
    ledger through now) and the training summary (once; also done at exit)."""
    end_eval_mode()
    _ext.train_finish()


# ---- model classes and modules ------------------------------------------------------------------


def present(name: str) -> bool:
    """Whether package `name` can be imported (without importing it when it is not loaded yet)."""
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def library_class(module: str, name: str) -> type | None:
    """Class `name` of `module` (a library's model base class), or None when its package is not
    importable or the import fails."""
    if not present(module.split(".")[0]):
        return None
    try:
        return cast(type, getattr(importlib.import_module(module), name))
    except Exception:
        return None


def base_classes() -> dict[str, type]:
    """{library: model base class} of the libraries importable here."""
    bases = {}
    for library, find in MODEL_BASES.items():
        base = find()
        if base is not None:
            bases[library] = base
    return bases


def class_phase(cls: type, bases: Mapping[str, type] | None = None) -> str:
    """The phase a model class's calls belong to: "vae" (encode/decode), "aux", "text_encoder" or
    "fwd" (the trained transformer, priced). By class name, as the reference classifies them; a
    transformers model that is not a diffusers one is a text encoder."""
    name = cls.__name__
    if "Autoencoder" in name or "AutoEncoder" in name or "VAE" in name:
        return "vae"
    if "Vision" in name:
        return "aux"
    if "T5Encoder" in name or "TextEncoder" in name or "CLIPTextModel" in name:
        return "text_encoder"
    bases = base_classes() if bases is None else bases
    mixin = bases.get("diffusers")
    pretrained = bases.get("transformers")
    if pretrained is not None and issubclass(cls, pretrained) and not (
            mixin is not None and issubclass(cls, mixin)):
        return "text_encoder"
    if "Transformer" in name or "UNet" in name or "Unet" in name or "LatentUpsampler" in name:
        return "fwd"
    return "aux"


def _phase_call(function: Callable[..., Any], phase: str, owner: object = None,
                self_arg: object = None, flags: int = 0) -> _ext.TimedCall:
    priced = phase == "fwd"
    if priced:
        _blocks.register()  # the trained model's blocks are watched at its first forward
        flags |= _ext.FLAG_PRICED
    return _ext.TimedCall(function, self_arg, owner, phase, flags, _ext.phase_id(phase),
                          _reading.infer_tokens if priced else None)


def _wrap_class_attr(cls: type, attr: str, phase: str, flags: int) -> bool:
    function = getattr(cls, attr, None)
    # Resolved through the bases: a subclass that inherits a wrapped method is already covered.
    if not callable(function) or isinstance(function, _ext.TimedCall):
        return False
    setattr(cls, attr, _phase_call(function, phase, flags=flags))
    return True


def instrument_model_class(cls: type, phase: str | None = None,
                           in_training: bool = False) -> bool:
    """Times every call of a model class (all its instances, present and future, whatever wraps
    them later: FSDP, DDP, peft) as a training phase. `in_training`: only once a training loop
    uses the trainer (a library's class, whose instances may serve inference too). Returns
    whether anything was wrapped."""
    phase = phase or class_phase(cls)
    flags = _ext.FLAG_IN_TRAINING if in_training else 0
    if phase == "vae":
        done = False
        for attr, vae_phase in VAE_METHODS:
            done |= _wrap_class_attr(cls, attr, vae_phase, flags)
        return done
    return _wrap_class_attr(cls, "forward", phase, flags)


# Wrappers whose forward calls the model they hold as `.module`: torch's data parallel ones and
# DeepSpeed's engine, by class name (none of their libraries is imported for this).
PARALLEL_WRAPPERS = ("DistributedDataParallel", "DataParallel", "FullyShardedDataParallel",
                     "DeepSpeedEngine")


def unwrapped(module: nn.Module) -> nn.Module:
    """The model inside its data-parallel wrappers (a compiled model stays as it is: its forward
    is the compiled call)."""
    import torch

    for _ in range(8):
        if type(module).__name__ not in PARALLEL_WRAPPERS:
            break
        inner = getattr(module, "module", None)
        if not isinstance(inner, torch.nn.Module):
            break
        module = inner
    return module


def forward_phase(module: nn.Module) -> str | None:
    """The phase a module's forward is timed as already (its own or its class's), or None."""
    forward = module.__dict__.get("forward", getattr(type(module), "forward", None))
    timer = getattr(forward, "__func__", forward)
    return timer._vxperf_stage if isinstance(timer, _ext.TimedCall) else None


def instrument_module(module: _Module, phase: str | None = None) -> _Module:
    """Times every call of one module (its `forward`; a VAE's encode/decode) as a training phase
    (`phase`: vae, vae_enc, vae_dec, text_encoder, aux or fwd; default: from its class). A `fwd`
    call is priced from its inputs. Returns the module."""
    if not _state.on:
        return module
    phase = phase or class_phase(type(module))
    try:
        if phase == "vae":
            for attr, vae_phase in VAE_METHODS:
                method = getattr(module, attr, None)
                if callable(method):
                    setattr(module, attr, _bound_phase_call(module, method, vae_phase))
        elif _phase(phase) >= 0:
            module.forward = _bound_phase_call(module, module.forward, phase)
    except Exception as error:
        _state.warn(("instrument", id(module)),
                    f"cannot time {type(module).__name__} as '{phase}': {error!r}")
    return module


def _bound_phase_call(module: nn.Module, method: Callable[..., Any], phase: str) -> _ext.TimedCall:
    if inspect.ismethod(method) and method.__self__ is module:
        return _phase_call(method.__func__, phase, owner=module, self_arg=module)
    return _phase_call(method, phase, owner=module)


def model_classes(target: type | ModuleType | Iterable[Any],
                  bases: Mapping[str, type]) -> tuple[list[type], int]:
    """(classes, skipped) named by `target`: a class, an iterable of classes, or a module whose
    model classes are taken (diffusers/transformers models when those are importable, else the
    torch modules it defines)."""
    import torch

    if isinstance(target, type):
        return [target], 0
    if inspect.ismodule(target):
        found: list[type] = []
        skipped = 0
        seen: set[int] = set()
        for value in list(vars(target).values()):
            if not isinstance(value, type) or id(value) in seen:
                continue
            seen.add(id(value))
            if not issubclass(value, torch.nn.Module):
                continue
            if value in bases.values() or value is torch.nn.Module:
                continue  # the model base classes themselves: nothing to time
            if bases:
                whole_model = any(issubclass(value, base) for base in bases.values())
            else:
                whole_model = value.__module__ == target.__name__
            if whole_model:
                found.append(value)
            else:
                skipped += 1
        return found, skipped
    found, skipped = [], 0
    for item in cast(Iterable[Any], target):
        classes, more = model_classes(item, bases)
        found += classes
        skipped += more
    return found, skipped
