"""Inference: a request per pipeline call, a stage per component call.

A pipeline class's `__call__` is wrapped so that each call opens a request on the calling thread.
At every request start the pipeline's `components` are read again: a component not hooked yet (a
transformer swapped in after the pipeline was built, say by FSDP wrapping) gets its timer then, a
timer that something replaced since is put back (said once), and the transformers' sizes are
handed to the engine for pricing. A component's timer is a C-implemented callable around the whole
module call (`_hooks`: around whatever forward accelerate, diffusers or peft give the module), or,
for a VAE, around its encode/decode methods; it sees keyword arguments on every torch version and
costs one crossing into C++ per marker."""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import operator
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Literal, TypeVar, cast

from . import (_blocks, _ext, _hooks, _layout, _model, _params, _peak, _profiler, _reading,
               _stages, _state, _training)

if TYPE_CHECKING:
    from types import TracebackType

    from torch import nn

    from .records_types import RequestRecord

_T = TypeVar("_T")
_Module = TypeVar("_Module", bound="nn.Module")

PRICED = _ext.FLAG_PRICED
RECORD_ON_ERROR = _ext.FLAG_RECORD_ON_ERROR
MODULE_CALL = _ext.FLAG_MODULE_CALL

# VAE methods and the stage suffix each is timed under; the streaming pair shares the stages of
# the plain methods (the same work in chunks; neither calls the other).
VAE_METHODS = (("encode", "_enc"), ("decode", "_dec"), ("encode_stream", "_enc"),
               ("decode_stream", "_dec"))

# Two threads starting requests on one pipeline must not both hook a new component.
_hook_lock = threading.Lock()


class Settled:
    """A request this thread just finished, as listeners (on_settled) are told of it: its name
    (the pipeline's class, or request(name=)), whether it raised, its record (the dict add_sink()
    gets) and what its call said of itself (the pipeline call's keyword arguments; a request()
    scope's frames and fps)."""

    __slots__ = ("name", "failed", "record", "call")

    def __init__(self, name: str, failed: bool, record: RequestRecord,
                 call: Mapping[str, Any]) -> None:
        self.name = name
        self.failed = failed
        self.record = record
        self.call = call


# Told of every request settled from now on, on its own thread and in its context (a server's
# span, an HTTP request's context variables), after its one synchronize: the OpenTelemetry spans
# and the ASGI middleware. Replaced whole, read without a lock; empty unless one is on.
_listeners: tuple[Callable[[Settled], object], ...] = ()
_last_told = threading.local()


def on_settled(fn: Callable[[Settled], object], add: bool = True) -> None:
    """Adds (or, add=False, removes) `fn(Settled)`, told of each request as it settles."""
    global _listeners
    with _hook_lock:
        rest = tuple(f for f in _listeners if f is not fn)
        _listeners = rest + (fn,) if add else rest


def _tell(name: str, failed: bool, call: Mapping[str, Any]) -> None:
    """Hands the request this thread settled last to the listeners (none told twice of one)."""
    record = _ext.last_request()
    if record is None or getattr(_last_told, "req", None) == record["req"]:
        return  # no record came of it (a forked child's)
    _last_told.req = record["req"]
    settled = Settled(name, failed, record, call)
    for fn in _listeners:
        try:
            fn(settled)
        except Exception as error:
            _state.warn(("listener", id(fn)), f"{getattr(fn, '__qualname__', fn)} raised "
                        f"{error!r} on a request's record (said once); the request is unchanged")


def _stage_names(name: str, component: nn.Module) -> list[tuple[str | None, str]]:
    """[(attribute, stage)] a component is timed through: a VAE's encode/decode methods (forward
    never runs on one), any other module's whole call. A module already timed keeps the names it
    was first seen with (one shared by two pipelines is timed once)."""
    held = _hooks.timers(component)
    if "vae" in name:
        return [(method, held[method]._vxperf_stage if method in held else name + suffix)
                for method, suffix in VAE_METHODS]
    timer = _hooks.timer_of(component)
    return [(None, timer._vxperf_stage if timer is not None else name)]


def _describe(component: Any, attribute: str) -> str:
    """Who set `attribute` of `component` now: the function behind it (a partial's, not the name
    functools.update_wrapper copied onto it from the function it wraps)."""
    if attribute not in component.__dict__:
        return "taken off the instance: the class's own runs"
    current = component.__dict__[attribute]
    while isinstance(current, functools.partial):
        current = current.func
    current = getattr(current, "__func__", current)
    name = getattr(current, "__qualname__", type(current).__qualname__)
    owner = getattr(current, "__module__", None) or type(current).__module__
    return f"by {name} from {owner}"


def _hook(name: str, component: nn.Module) -> None:
    """Times `component` as stage `name` from now on, or puts back its timer where something
    replaced it since (said once per component and attribute)."""
    try:
        _unhook_compiled_original(component)
        names = _stage_names(name, component)
        had = dict(_hooks.timers(component))
        if "vae" in name:
            # A VAE's: every name is a method's.
            done = _hooks.hook_methods(component, cast("list[tuple[str, str]]", names),
                                       RECORD_ON_ERROR)
            stages = dict(names)
        else:
            stage = names[0][1]
            flags = (PRICED if _ext.is_priced_stage(stage) else 0) | MODULE_CALL
            infer = _reading.infer_tokens if flags & PRICED else None
            done = _hooks.hook_calls(component, stage, flags, infer)
            stages = {attribute: stage for attribute in done}
        for attribute in done:
            if attribute in had:
                _state.warn(("replaced", id(component)),
                            f"component '{stages.get(attribute, name)}' "
                            f"({type(component).__name__}): its {attribute} was replaced after "
                            f"vxperf timed it ({_describe(component, attribute)}), so calls "
                            "through it went unmeasured; timed again from this request")
    except Exception as error:
        _state.warn(("hook", id(component)),
                    f"cannot time component '{name}' ({type(component).__name__}: {error!r}); "
                    "its calls are not measured")


def _model_of(name: str, component: nn.Module) -> _model.Model:
    """The Model of a transformer component, read once and kept on it (set_attention_density()
    forgets it)."""
    model = getattr(component, "_vxperf_model", None)
    if model is None:
        widths = _reading.priced_widths(component, f"component '{name}'")
        model = _model.Model(params=_params.count_params(component), widths=widths,
                             text_tokens=_reading.text_tokens(component) if widths else 0,
                             dtype=_reading.param_dtype(component) or "",
                             storage_dtype=_reading.storage_dtype(component) or "",
                             attn_density=attention_density_of(component))
        component._vxperf_model = model
        component.__dict__[_PRICED_AS] = name
    return model


_PRICED_AS = "_vxperf_priced_as"  # in a component's __dict__: the stage _model_of read it for


def _text_length_seen(component: nn.Module) -> None:
    """A pipeline's transformer that advertises no text length was handed its text at a call:
    read again with it, and declared again for the open request (priced as a whole)."""
    name = component.__dict__.get(_PRICED_AS)
    if name is None or "_vxperf_model" not in component.__dict__:
        return
    del component._vxperf_model
    model = _model_of(name, component)
    if _ext.in_request():
        _ext.declare_model(name, model)


_reading.TEXT_LISTENERS.append(_text_length_seen)


def attention_density_of(module: object) -> float:
    """The attention density declared for a module (set_attention_density), 1 when none."""
    density = getattr(module, "_vxperf_attn_density", None)
    return float(density) if density is not None else 1.0


def set_attention_density(module: _Module, density: float) -> _Module:
    """Declares that `module`'s self-attention computes `density` of the full T x T square (about
    0.5 causal, the kept share of a block-sparse mask): its core attention term is scaled by it.
    VIDEOX_PERF_ATTN_DENSITY, when set, wins. Returns the module."""
    density = float(density)
    if not 0.0 < density <= 1.0:
        raise ValueError(f"an attention density is in (0, 1], not {density}")
    module._vxperf_attn_density = density
    if hasattr(module, "_vxperf_model"):
        del module._vxperf_model  # read again with the density
    return module


def _watch_blocks(component: nn.Module) -> None:
    """Watches what a transformer's blocks run (or refreshes the watch: the caches on it now); a
    compiled one is priced from its inputs, its original's probes taken off. Its timers are told
    the watch, so that a call looks nothing up."""
    original = _hooks.owner_key(component)
    if original is component:
        watch = _blocks.watch(component)
    else:
        _blocks.unwatch(original)
        watch = None
    for timer in _hooks.timers(component).values():
        timer.watch = watch


def _unhook_compiled_original(component: nn.Module) -> None:
    """torch.compile's wrapper arrived over a module vxperf times: the wrapper is timed from now
    on, and the original's timer is taken out of the compiled call (where dynamo would meet it)."""
    inner = _hooks.owner_key(component)
    if inner is not component and _hooks.timers(inner) and not _hooks.timers(component):
        _hooks.unhook(inner)


def attach(pipe: Any) -> dict[str, _model.Model]:
    """Hooks the pipeline's module components not hooked yet (and puts back timers replaced
    since); returns the transformers' models by stage name."""
    import torch

    try:
        components = dict(pipe.components)
    except Exception as error:
        _state.warn(("components", type(pipe)),
                    f"cannot read the components of {type(pipe).__name__} ({error!r}); its calls "
                    "are timed end to end, without stages")
        return {}
    models: dict[str, _model.Model] = {}
    timed: list[nn.Module] = []
    priced: tuple[str, nn.Module] | None = None
    _blocks.register()
    with _hook_lock:
        for name, component in components.items():
            if not isinstance(component, torch.nn.Module):
                continue  # tokenizers, schedulers, processors
            if _ext.is_priced_stage(name):
                models[name] = _model_of(name, component)
                priced = priced or (name, component)
            _hook(name, component)
            timed.append(component)
            if _ext.is_priced_stage(name):
                _watch_blocks(component)
    # The layout its transformer runs in (mesh, wrappers, diffusers' context parallel), with
    # accelerate's and xfuser's state.
    _layout.apply(priced[1] if priced else None, label=f"component '{priced[0]}'" if priced else
                  type(pipe).__name__)
    try:
        pipe.__dict__["_vxperf_timed"] = timed
    except Exception:
        pass  # a pipeline without instance attributes: nothing checked at its requests' ends
    return models


def _check_lost(pipe: Any) -> None:
    """Says once when a stage timed in earlier requests of `pipe` got no call in this one while
    its component's timer no longer sits where calls reach it (replaced during the call): those
    calls may have run unmeasured. The timer is put back at the next request start."""
    state = getattr(pipe, "__dict__", None)
    if state is None:
        return
    seen = state.setdefault("_vxperf_seen", set())
    for component in state.get("_vxperf_timed", ()):
        timers = _hooks.timers(component)
        stages = {timer._vxperf_stage for timer in timers.values()}
        called = {stage for stage in stages if _ext.closed_calls(_ext.stage_id(stage)) > 0}
        missing = (stages & seen) - called
        if missing:
            gone = _hooks.lost(component)
            if gone:
                _state.warn(("replaced", id(component)),
                            f"stage {', '.join(sorted(missing))} of {type(pipe).__name__} got no "
                            f"timed call in this request, after it did in earlier ones: the "
                            f"{', '.join(gone)} of its component ({type(component).__name__}) was "
                            f"replaced during the call ({_describe(component, gone[0])}), so "
                            "its calls went unmeasured; timed again from the next request")
        seen |= called


def _device_and_stream(device: object, stream: Any = None) -> tuple[int, int]:
    index = _state.cuda_index(device) if device is not None else -1
    if index < 0:
        return -1, 0
    _state.ensure_cuda(index)
    if stream is None:
        return index, _state.current_stream(index)
    return index, int(getattr(stream, "cuda_stream", stream))


def videos_of(args: Sequence[Any], kwargs: Mapping[str, Any]) -> int:
    """The videos (or images) one pipeline call generates, from its arguments as diffusers names
    them: num_videos_per_prompt (else num_images_per_prompt) times the prompts (a list of them,
    else the rows of prompt_embeds); 1 when they do not say."""
    try:
        per = kwargs.get("num_videos_per_prompt", kwargs.get("num_images_per_prompt"))
        per = 1 if per is None else int(per)
        prompt = kwargs.get("prompt")
        if prompt is None and args and isinstance(args[0], (str, list, tuple)):
            prompt = args[0]
        if isinstance(prompt, (list, tuple)):
            prompts = len(prompt)
        elif prompt is None and getattr(kwargs.get("prompt_embeds"), "shape", None) is not None:
            prompts = int(kwargs["prompt_embeds"].shape[0])
        else:
            prompts = 1
        return max(per * prompts, 1)
    except Exception:
        return 1


def _count(value: Any) -> int:
    """`value` as a count above 0, else 0 (a flag or a float is not a count)."""
    if isinstance(value, bool):
        return 0
    try:
        count = operator.index(value)
    except TypeError:
        return 0
    return count if count > 0 else 0


def denoising_steps_of(pipe: Any, kwargs: Mapping[str, Any]) -> int:
    """The sampler steps one finished pipeline call ran, as diffusers says them: the
    `_num_timesteps` its pipelines set to their loop's length each call (the scheduler's
    timesteps, after a strength or the call's own timesteps cut them; both of Wan2.2's experts'
    steps), else the call's `timesteps` or `sigmas`, else its `num_inference_steps`. 0 when none
    says, or when the loop was interrupted (its remaining steps skipped)."""
    try:
        if getattr(pipe, "_interrupt", False) is True:
            return 0
        steps = _count(getattr(pipe, "_num_timesteps", None))
        for key in ("timesteps", "sigmas"):
            given = kwargs.get(key)
            if not steps and given is not None and hasattr(given, "__len__"):
                steps = _count(len(given))
        return steps or _count(kwargs.get("num_inference_steps"))
    except Exception:
        return 0


def serving_of(queued_at: Any = None, queue_s: Any = None, frames: Any = None,
               fps: Any = None) -> tuple[float, int, float]:
    """(queue_s, frames, fps) for begin_request from what a server said: the seconds a request
    waited (`queue_s`), or when it was queued (`queued_at`: time.time() when it arrived); the video
    it makes (`frames` at `fps`, else at VIDEOX_PERF_FPS). A value that cannot be one is said
    once and left out; the request is measured all the same."""
    waited = -1.0
    try:
        if queue_s is not None:
            waited = float(queue_s)
            if not waited >= 0 or waited == float("inf"):
                raise ValueError("not a number of seconds at least 0")
        elif queued_at is not None:
            now = time.time()
            at = float(queued_at)
            if at > now:
                raise ValueError("in the future")
            if at < _process_start():
                raise ValueError("before this process started")
            waited = now - at
    except (TypeError, ValueError) as error:
        _state.warn(("request-queue", type(error).__name__, str(error)),
                    f"request queue time {queued_at if queue_s is None else queue_s!r}: {error}; "
                    "not said")
        waited = -1.0
    count, rate = 0, 0.0
    if frames is not None:
        try:
            count = int(frames)
            rate = float(fps) if fps is not None else 0.0  # 0: VIDEOX_PERF_FPS says it
            if count <= 0 or rate < 0 or rate != rate or rate == float("inf"):
                raise ValueError("frames must be above 0, fps a number above 0")
        except (TypeError, ValueError) as error:
            _state.warn(("request-video", repr(frames), repr(fps)),
                        f"request video frames={frames!r} fps={fps!r}: {error}; not said")
            count, rate = 0, 0.0
    return waited, count, rate


def _process_start() -> float:
    """When this process began, on time.time()'s clock."""
    global _started_at
    if _started_at is None:
        try:  # the process's start in clock ticks after boot, and the time since boot
            with open("/proc/self/stat") as handle:
                ticks = float(handle.read().rsplit(")", 1)[1].split()[19])
            with open("/proc/uptime") as handle:
                uptime = float(handle.read().split()[0])
            _started_at = time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            _started_at = 0.0
    return _started_at


_started_at: float | None = None


def video_of(pipe: Any, kwargs: Mapping[str, Any]) -> tuple[Any, Any]:
    """(frames, fps) of one pipeline call as diffusers names them: num_frames, and fps (else
    frame_rate, else the pipeline's config); None where they do not say."""
    frames = kwargs.get("num_frames")
    fps = kwargs.get("fps", kwargs.get("frame_rate"))
    if fps is None:
        fps = getattr(getattr(pipe, "config", None), "fps", None)
    return frames, fps


def begin(pipe: Any, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None) -> int:
    """Opens the request of one pipeline call; 0 when not measured (metrics off, a call nested in
    another pipeline's, or a pipeline that could not be read). `args`, `kwargs`: the call's, for
    the videos it generates."""
    if not _state.on or _ext.in_request():
        return 0
    _profiler.attach()
    try:
        _state.refresh_topology()
        models = attach(pipe)
        index, stream = _device_and_stream(_reading.pipeline_device(pipe))
    except Exception as error:
        _state.warn(("begin", type(pipe)),
                    f"cannot measure {type(pipe).__name__} ({error!r}); its calls run unmeasured")
        return 0
    # A measured peak (VIDEOX_PERF_PEAK_TFLOPS=auto) is probed now, before the request's clock
    # starts, in the transformer's dtype; once per process and device.
    if models:
        running = _reading.autocast_dtype("cuda" if index >= 0 else "cpu")
        _peak.ensure(index, running or next(iter(models.values())).dtype or None)
    # Priced by this pipeline's own transformers only, as the reference prices a request by its
    # pipeline's components: two pipelines served at once never price each other's calls.
    frames, fps = video_of(pipe, kwargs or {})
    ticket = _waiting.get()
    from_queue = ticket is not None and ticket._leave()
    queued_at = ticket.at if ticket is not None and from_queue else _queued_at_from_context()
    waited, count, rate = serving_of(queued_at=queued_at, frames=frames, fps=fps)
    handle = _ext.begin_request(index, stream, True, videos_of(args, kwargs or {}), waited, count,
                                rate, from_queue)
    if from_queue and not handle:
        _ext.note_queued(-1)
    if handle:
        _state.measured.request = True
        for stage, model in models.items():
            _ext.declare_model(stage, model)
    return handle


def _end(pipe: Any, handle: int, failed: bool, kwargs: Mapping[str, Any]) -> None:
    try:
        _check_lost(pipe)
    except Exception as error:
        _state.warn(("check", type(pipe)), f"cannot check the stages of {type(pipe).__name__} "
                    f"({error!r})")
    if not failed:
        steps = denoising_steps_of(pipe, kwargs)
        if steps:
            _ext.note_denoising_steps(steps)
    _ext.end_request(handle, failed)
    if _listeners:
        _tell(type(pipe).__name__, failed, kwargs)


@dataclasses.dataclass
class _Requests:
    """Whether pipeline calls are measured as requests: install() or instrument_pipeline() asked
    for it. install_training() alone wraps the pipelines too, for their evaluations only."""

    on: bool = False


requests = _Requests()


def _evaluating() -> bool:
    """Whether a pipeline made or called now is a training loop's evaluation: a loop runs in the
    process, on its main thread (a validation pass, as diffusers' training scripts run one every
    few steps and at the end, the pipeline built and called between the steps)."""
    return (_state.on and _state.on_main_thread() and not _ext.in_request()
            and _ext.training_active())


def _measured(call: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(call)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _evaluating():  # its time and its models' calls kept out of the steps
            with _training.evaluation():
                return _request(call, self, args, kwargs)
        return _request(call, self, args, kwargs)

    __call__._vxperf_wrapped = True  # type: ignore[attr-defined]
    return __call__


def as_evaluation(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` (a pipeline's __init__ or from_pretrained: loading its components can take
    longer than the pass) timed as an evaluation where a pipeline call would be."""
    @functools.wraps(function)
    def evaluated(*args: Any, **kwargs: Any) -> Any:
        if _evaluating():
            with _training.evaluation():
                return function(*args, **kwargs)
        return function(*args, **kwargs)

    evaluated._vxperf_wrapped = True  # type: ignore[attr-defined]
    return evaluated


def _request(call: Callable[..., Any], self: Any, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Any:
    """One pipeline call, measured as a request where requests are."""
    handle = begin(self, args, kwargs) if requests.on else 0
    if not handle:
        return call(self, *args, **kwargs)
    try:
        result = call(self, *args, **kwargs)
    except BaseException:
        _end(self, handle, True, kwargs)  # reported all the same
        raise
    _end(self, handle, False, kwargs)
    return result


def measures(cls: type) -> bool:
    """Whether calls of pipeline class `cls` are measured: the `__call__` it defines is wrapped."""
    return bool(getattr(cls.__dict__.get("__call__"), "_vxperf_wrapped", False))


def instrument_pipeline_class(cls: type) -> bool:
    """Wraps the `__call__` a pipeline class defines itself. Returns whether it did (a class that
    inherits its `__call__` is measured through the class that defines it)."""
    call = cls.__dict__.get("__call__")
    if call is None or getattr(call, "_vxperf_wrapped", False):
        return False
    cls.__call__ = _measured(call)  # type: ignore[method-assign]
    return True


def instrument_pipeline(pipe: _T, level: int | None = 1) -> _T:
    """Measures `pipe` whatever VIDEOX_PERF says (metrics on at `level` if the process has not
    turned them on yet): wraps the class that defines its `__call__` and hooks its components now.
    Call it after any FSDP or offload wrapping. Returns `pipe`."""
    if not _state.configure(level):
        return pipe
    requests.on = True
    owner = next((c for c in type(pipe).__mro__ if "__call__" in c.__dict__ and c is not object),
                 None)
    if owner is None:
        _state.warn(("pipeline", type(pipe)),
                    f"{type(pipe).__name__} is not a pipeline (it cannot be called); not measured")
        return pipe
    instrument_pipeline_class(owner)
    try:
        attach(pipe)
    except Exception as error:
        _state.warn(("attach", type(pipe)), f"cannot hook {type(pipe).__name__}: {error!r}")
    return pipe


# ---- the explicit API ---------------------------------------------------------------------------


# The ticket of the request waiting in this context (`with ticket:`): the next request begun in
# it, a pipeline call or a request() scope, takes it.
_waiting: contextvars.ContextVar[Queued | None] = contextvars.ContextVar("vxperf_waiting",
                                                                            default=None)
# When the request about to begin was queued, from what the server's tracing says (set by the
# OpenTelemetry integration); None: nothing to ask.
queued_at_source: Callable[[], float | None] | None = None


def _queued_at_from_context() -> float | None:
    source = queued_at_source
    return source() if source is not None else None


class Queued:
    """A request waiting in a server's queue (vxperf.queued()): when it arrived, on time.time()'s
    clock. It leaves the queue as the request it is handed to begins (request(queued=), or the
    first request begun inside `with ticket:`, a pipeline call included, in this thread or one
    that carries its context), its wait the record's `queue_s`; one that leaves unserved (a client
    that hung up) is cancel()led, as the `with` block's end does. Either happens once: a second
    use, or a cancel after its request began, does nothing."""

    __slots__ = ("at", "_open", "_lock", "_tokens")

    def __init__(self) -> None:
        self.at = time.time()
        self._open = True
        self._lock = threading.Lock()
        self._tokens: list[contextvars.Token[Queued | None]] = []
        _ext.note_queued(1)

    def __enter__(self) -> Queued:
        self._tokens.append(_waiting.set(self))
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        _waiting.reset(self._tokens.pop())
        self.cancel()
        return False

    def _leave(self) -> bool:
        """True the first time it leaves the queue (by its request or a cancel)."""
        with self._lock:
            left, self._open = self._open, False
        return left

    def cancel(self) -> None:
        """It left the queue unserved."""
        if self._leave():
            _ext.note_queued(-1)


class _NoQueue:
    """What queued() gives while metrics are off: nothing to count."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at = time.time()

    def __enter__(self) -> _NoQueue:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        return False

    def cancel(self) -> None:
        pass


def queued() -> Queued | _NoQueue:
    """A request entered the server's queue now: the queued count (Prometheus'
    vxperf_requests_queued) grows until the returned ticket's request begins (request(queued=),
    or the first begun inside `with ticket:`) or it is cancelled."""
    if not _state.on:
        return _NoQueue()
    return Queued()


class _Request:
    __slots__ = ("name", "device", "stream", "videos", "steps", "serving", "ticket", "handle")

    def __init__(self, name: str, device: object, stream: object, videos: int, steps: int,
                 serving: tuple[Any, Any, Any, Any],
                 ticket: Queued | _NoQueue | None) -> None:
        self.name = name
        self.device = device
        self.stream = stream
        self.videos = videos
        self.steps = steps
        self.serving = serving  # (queued_at, queue_s, frames, fps) as given
        self.ticket = ticket  # a Queued it leaves as it begins, or None
        self.handle = 0

    def __enter__(self) -> _Request:
        _profiler.attach()
        try:
            index, stream = _device_and_stream(self.device, self.stream)
        except Exception as error:
            _state.warn(("request-device", repr(self.device)),
                        f"request(device={self.device!r}): {error!r}; timed on the host clock")
            index, stream = -1, 0
        queued_at, queue_s, frames, fps = self.serving
        ticket = self.ticket if self.ticket is not None else _waiting.get()
        from_queue = isinstance(ticket, Queued) and ticket._leave()
        if queued_at is None and queue_s is None:
            if ticket is not None and (from_queue or self.ticket is not None):
                queued_at = ticket.at
            else:
                queued_at = _queued_at_from_context()
        waited, frames, fps = serving_of(queued_at, queue_s, frames, fps)
        self.handle = _ext.begin_request(index, stream, False, self.videos, waited, frames, fps,
                                         from_queue)
        if from_queue and not self.handle:  # nested or off: it left the queue all the same
            _ext.note_queued(-1)
        if self.handle:
            _state.measured.request = True
        if self.handle and self.steps:
            _ext.note_denoising_steps(self.steps)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        if self.handle:
            handle, self.handle = self.handle, 0
            _ext.end_request(handle, kind is not None)
            if _listeners:
                frames, fps = self.serving[2:]
                _tell(self.name, kind is not None, {"num_frames": frames, "fps": fps})
        return False


def request(device: object = None, stream: object = None, videos: int = 1, *,
            queued: Queued | _NoQueue | None = None, queued_at: float | None = None,
            queue_s: float | None = None, frames: int | None = None,
            fps: float | None = None, denoising_steps: int | None = None,
            name: str = "request") -> _Request | _ext.NullContext:
    """A `with` scope measuring one request on this thread: what a pipeline call is.

    device: the CUDA device the work runs on (torch.device, "cuda:N" or an index); None times on
    the host clock only. stream: the stream to record on (a torch stream or its integer handle;
    default: torch's current stream of that device). videos: what the request generates (a batch
    of prompts); above 1 the record says it, with its energy per video. A server says how long the
    request waited in its queue, as `queued` (the ticket vxperf.queued() gave as it arrived: it
    leaves the queue's count now), `queue_s` (seconds) or `queued_at` (time.time() when it
    arrived): the record's `queue_s`. frames (at fps, else VIDEOX_PERF_FPS): the video it makes,
    for the record's `video_s` and `realtime_factor`. denoising_steps: the sampler steps it runs,
    each all its transformer calls (vxperf.denoising_steps() says it from inside, once known): the
    record's `denoising_steps`, its time per step beside its time per call. name: its
    OpenTelemetry span's (VIDEOX_PERF_OTEL). A request opened inside another on the same thread is
    ignored: its stages belong to the outer one. An exception inside is reported with
    the request and propagates unchanged."""
    if not _state.on:
        return _ext.NULL_SCOPE
    try:
        videos = max(int(videos), 1)
    except (TypeError, ValueError):
        _state.warn(("request-videos", repr(videos)),
                    f"request(videos={videos!r}) is not a count; 1 video")
        videos = 1
    steps = _count(denoising_steps)
    if denoising_steps is not None and not steps:
        _state.warn(("request-steps", repr(denoising_steps)),
                    f"request(denoising_steps={denoising_steps!r}) is not a count above 0; "
                    "not said")
    return _Request(str(name), device, stream, videos, steps, (queued_at, queue_s, frames, fps),
                    queued)


def denoising_steps(steps: int) -> None:
    """Says how many denoising (sampler) steps the request open on this thread ran, each all its
    transformer calls (two with classifier-free guidance run as two, one when batched): for a loop
    that knows its count only once its scheduler has set its timesteps. The last said wins over
    request(denoising_steps=); a pipeline call says diffusers' own count. A no-op outside a
    request or while metrics are off."""
    if not _state.on:
        return
    count = _count(steps)
    if not count:
        _state.warn(("denoising-steps", repr(steps)),
                    f"denoising_steps({steps!r}) is not a count above 0; not said")
        return
    _ext.note_denoising_steps(count)


def timed(stage: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: each call of the function is one call of `stage` in this thread's open request.
    Returns the function unchanged while metrics are off. A `transformer*` stage is priced from the
    call's inputs as a component's forward is (the first argument may be the module)."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        if not _state.on:
            return function
        flags = RECORD_ON_ERROR | (PRICED if _ext.is_priced_stage(stage) else 0)
        infer = _reading.infer_tokens if flags & PRICED else None
        return _ext.TimedCall(function, None, None, stage, flags, -1, infer)

    return decorate


def declare_model(stage: str, module: nn.Module | None = None, *, params: int | None = None,
                  widths: Sequence[int] | None = None, text_tokens: int | None = None,
                  dtype: object = None, attn_density: float | None = None) -> None:
    """Prices the forwards of `stage` (a `transformer*` stage) for code that opens its own stages:
    parameters, attention widths, text length, dtype (which picks the peak) and attention density
    are read from `module`, or given. With VIDEOX_PERF_PEAK_TFLOPS=auto, the peak of the module's
    device in its dtype is measured now (once), before any request is timed."""
    if not _state.on:
        return
    if module is not None:
        if params is None:
            params = _params.count_params(module)
        if widths is None:
            widths = _reading.priced_widths(module, f"stage '{stage}'")
        if text_tokens is None:
            text_tokens = _reading.text_tokens(module) if widths else 0
        if dtype is None:
            dtype = _reading.param_dtype(module)
        if attn_density is None:
            attn_density = attention_density_of(module)
    if params is None:
        raise TypeError("declare_model() needs a module or params")
    name = _reading.dtype_name(dtype) if dtype is not None else None
    if dtype is not None and name is None:
        raise ValueError(f"unknown dtype {dtype!r}")
    model = _model.Model(params=int(params),
                         widths=cast("tuple[int, int, int]", tuple(widths)) if widths else None,
                         text_tokens=int(text_tokens or 0), dtype=name or "",
                         storage_dtype=(_reading.storage_dtype(module) or "") if module is not None
                         else "",
                         attn_density=float(attn_density) if attn_density is not None else 1.0)
    _ext.declare_model(stage, model)
    if module is not None:
        _layout.apply(module, label=f"stage '{stage}'")
    if module is not None and not _ext.in_request():
        _peak.ensure(_reading.module_device(module), name)


def forward_fraction(fraction: float, stage: str = _stages.TRANSFORMER.name) -> None:
    """Says that the call of `stage` open on this thread (else the last one closed in its request)
    computed `fraction` of a full forward: 0 for a skipped call (a cache hit), 0.25 for one that ran
    a quarter of its blocks. The call stays timed; it is priced at that fraction, and the record's
    "dit" gains skipped_fwd and effective_fwd. Outside a request, while training, it marks the
    trained model's forward instead. A no-op while metrics are off."""
    if not _state.on:
        return
    _ext.note_forward_fraction(_ext.stage_id(stage), float(fraction))


def skip_forward(stage: str = _stages.TRANSFORMER.name) -> None:
    """forward_fraction(0.0, stage): this call was a cache hit, timed but not priced."""
    forward_fraction(0.0, stage)
