"""diffusers: its pipeline classes (what install() measures), its model base class (what a
training model class is), its cache hooks as the block probes see them, its context parallelism as
the sequence shards a block receives, and its layerwise casting as the dtype a module's weights
compute in.

Cache hooks (first-block cache, MagCache, TaylorSeer, pyramid attention broadcast, FasterCache,
...) replace a module's forward and decide inside it whether the module's own forward runs. A
probe on the module's call cannot tell, so a counter registered innermost in the module's hook
registry says when it did (vxperf/_blocks.py prices the call at what ran). Written against
diffusers' documented hook API (`diffusers.hooks`: `HookRegistry.check_if_exists_or_initialize`,
`register_hook`, `remove_hook`, `get_hook`, `ModelHook` with `pre_forward`); diffusers is imported
only when the program has, or an entry point asks for it."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

from .. import _blocks, _ext, _reading, _stages, _state, _training

if TYPE_CHECKING:
    from torch import nn


def optional_import(name: str) -> ModuleType | None:
    """The module `name`, or None when its package is not importable (or fails to import)."""
    try:
        if importlib.util.find_spec(name.split(".")[0]) is None:
            return None
        return importlib.import_module(name)
    except Exception:
        return None


def pipeline_base() -> type | None:
    """diffusers.DiffusionPipeline, or None when diffusers is not importable."""
    module = optional_import("diffusers")
    return getattr(module, "DiffusionPipeline", None) if module is not None else None


def is_pipeline_base(cls: type) -> bool:
    """Whether `cls` is diffusers' DiffusionPipeline itself."""
    return cls.__name__ == "DiffusionPipeline" and cls.__module__.startswith("diffusers.")


def is_pipeline_class(cls: type) -> bool:
    """Whether `cls` derives from diffusers' DiffusionPipeline (without importing it)."""
    return any(is_pipeline_base(c) for c in cls.__mro__[1:])


def model_mixin() -> type | None:
    """diffusers' ModelMixin (a whole model, not a building block), or None."""
    return _training.library_class("diffusers.models.modeling_utils", "ModelMixin")


def subclasses(base: type) -> list[type]:
    """Every class derived from `base`, depth first, each once."""
    seen: list[type] = []
    stack: list[type] = [base]
    sub: type
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen.append(sub)
                stack.append(sub)
    return seen


def watch_subclasses(base: type, on_new_class: Callable[[type], object]) -> None:
    """Calls `on_new_class(cls)` for every subclass of `base` defined from now on (diffusers
    imports its pipelines lazily)."""
    if base.__dict__.get("_vxperf_watching"):
        return
    inherited = base.__dict__.get("__init_subclass__")

    def __init_subclass__(cls: type, /, **kwargs: Any) -> None:
        if inherited is not None:
            inherited.__get__(None, cls)(**kwargs)
        else:
            super(base, cls).__init_subclass__(**kwargs)  # type: ignore[arg-type]
        on_new_class(cls)

    base.__init_subclass__ = classmethod(__init_subclass__)  # type: ignore[assignment]
    base._vxperf_watching = True  # type: ignore[attr-defined]


def time_ema_updates() -> bool:
    """Times diffusers' EMAModel.step (an EMA model's update after the optimizer's step, as
    diffusers' training scripts call it) as the `ema` phase, once its module is loaded: a
    script imports it before its loop, and importing it here would add a second of start-up.
    Returns whether it is timed."""
    module = sys.modules.get("diffusers.training_utils")
    ema = getattr(module, "EMAModel", None)
    function = getattr(ema, "step", None)
    if ema is None or not callable(function):
        return False
    if getattr(function, "_vxperf_patched", False):
        return True

    @functools.wraps(function)
    def step(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _ext.training_active():  # an EMA kept outside a loop vxperf measures
            return function(self, *args, **kwargs)
        with _training.phase("ema"):
            return function(self, *args, **kwargs)

    step._vxperf_patched = True  # type: ignore[attr-defined]
    ema.step = step
    return True


def cast_dtypes(module: nn.Module) -> dict[int, Any]:
    """{submodule id: compute dtype} of the submodules whose weights layerwise casting stores in
    one dtype and casts to another for the matmuls (fp8 storage, bf16 compute). A registry of a
    shape this does not know raises, which the caller says once."""
    found: dict[int, Any] = {}
    for sub in module.modules():
        registry = sub.__dict__.get("_diffusers_hook")
        if registry is None:
            continue
        hooks = registry.hooks
        if not isinstance(hooks, dict):
            raise TypeError(f"a hook registry whose hooks are a {type(hooks).__name__}")
        for hook in hooks.values():
            compute = getattr(hook, "compute_dtype", None)
            if compute is not None and getattr(hook, "storage_dtype", None) is not None:
                found[id(sub)] = compute
    return found


def register() -> None:
    if cast_dtypes not in _reading.WEIGHT_DTYPE_READERS:
        _reading.WEIGHT_DTYPE_READERS.append(cast_dtypes)
    _training.MODEL_BASES["diffusers"] = model_mixin
    reader = _blocks.CacheReader(skippable, count_runs, counting)
    if reader not in _blocks.CACHE_READERS:
        _blocks.CACHE_READERS.append(reader)
    if sequence_shards not in _blocks.SHARD_READERS:
        _blocks.SHARD_READERS.append(sequence_shards)


# ---- caches and sequence parallelism, as the block probes see them (vxperf/_blocks.py) ----------

RUN_COUNTER = "vxperf_run_counter"  # the name of vxperf's own hook in a registry


def _registry(module: nn.Module) -> Any:
    registry = module.__dict__.get("_diffusers_hook")
    hooks = getattr(registry, "hooks", None)
    return registry if isinstance(hooks, dict) else None


def skippable(model: nn.Module) -> list[nn.Module]:
    """The modules of `model` whose own forward a hook in diffusers' registry may skip: any hook
    that replaces the forward (`new_forward`: first-block cache, MagCache, TaylorSeer, pyramid
    attention broadcast, FasterCache, layer skip, ...), vxperf's own counter aside."""
    found: list[nn.Module] = []
    for module in model.modules():
        registry = _registry(module)
        if registry is None:
            continue
        if any(hasattr(hook, "new_forward") for name, hook in registry.hooks.items()
               if name != RUN_COUNTER):
            found.append(module)
    return found


def _innermost(registry: Any, hook: Any, name: str) -> None:
    """Registers `hook` under every hook the module already has, so that it sees only the calls
    that really reach the module's own forward (a cache hook that skips never calls inward)."""
    others = [(key, registry.get_hook(key)) for key in list(registry.hooks)]
    for key, _ in reversed(others):
        registry.remove_hook(key, recurse=False)
    registry.register_hook(hook, name)
    for key, other in others:
        registry.register_hook(other, key)


def count_runs(module: nn.Module, probe: _ext.BlockProbe) -> None:
    """Registers, innermost in the module's hook registry, a counter telling `probe` each time
    the module's own forward runs."""
    from diffusers.hooks import HookRegistry, ModelHook

    registry = HookRegistry.check_if_exists_or_initialize(module)
    if registry.get_hook(RUN_COUNTER) is not None:
        registry.remove_hook(RUN_COUNTER, recurse=False)

    class RunCounter(ModelHook):  # type: ignore[misc]
        """Innermost on a module: it sees the module's own forward run, never a call a cache
        answered."""

        def pre_forward(self, module: nn.Module, *args: Any,
                        **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
            probe.ran()
            return args, kwargs

    _innermost(registry, RunCounter(), RUN_COUNTER)


def counting(module: nn.Module) -> bool:
    """Whether vxperf's counter is in the module's hook registry now."""
    registry = _registry(module)
    return registry is not None and RUN_COUNTER in registry.hooks


def sequence_shards(model: nn.Module) -> tuple[int, set[int]]:
    """(degree, {id(module)}): diffusers' context parallelism on `model` (ring x ulysses, when its
    split hooks are registered) and the modules that split their own input, which receive the
    whole sequence (the rest of the blocks a 1/degree shard of it). (1, set()) without it."""
    config = getattr(getattr(model, "_parallel_config", None), "context_parallel_config", None)
    if config is None:
        return 1, set()
    degree = (getattr(config, "ring_degree", 1) or 1) * (getattr(config, "ulysses_degree", 1) or 1)
    splitting: set[int] = set()
    for module in model.modules():
        registry = _registry(module)
        if registry is not None and any(name.startswith("cp_input---") for name in registry.hooks):
            splitting.add(id(module))
    return (degree, splitting) if splitting else (1, set())


def track_cache(transformer: nn.Module, stage: str = _stages.TRANSFORMER.name) -> bool:
    """Kept for programs written before vxperf saw caches by itself: every priced model's blocks
    are watched (vxperf/_blocks.py), so a cache hit is priced at the blocks that ran with or without
    this call. Watches `transformer` now; returns whether its blocks are watched (False, said
    once, for a model without block lists). `stage` is no longer needed."""
    if not _state.on:
        return False
    _blocks.register()
    if _blocks.watch(transformer) is not None:
        return True
    _state.warn(("track_cache", id(transformer)),
                f"track_cache(): {type(transformer).__name__} holds no blocks vxperf can see (a "
                "ModuleList of modules with attention) or runs compiled; cached calls are priced "
                "as full forwards")
    return False
