"""diffusers: its pipeline classes (what install() measures), its model base class (what a
training model class is), its cache hooks as skipped and partial forwards (track_cache), and its
layerwise casting as the dtype a module's weights compute in.

Cache hooks (first-block cache, TeaCache, MagCache, ...) decide inside a transformer's forward how
many of its blocks really run: a first-block cache runs the first block and reuses the rest,
TeaCache may run none. track_cache() counts the blocks that ran in each call and tells the engine
the fraction, so that a cache hit is timed but not priced as a full forward. Written against
diffusers' documented hook API (`diffusers.hooks`: `HookRegistry.check_if_exists_or_initialize`,
`register_hook`, `remove_hook`, `ModelHook` with `pre_forward`); diffusers is imported only when
the program has, or an entry point asks for it."""

import importlib
import importlib.util
import threading

from .. import _ext, _reading, _stages, _state, _training


def optional_import(name):
    """The module `name`, or None when its package is not importable (or fails to import)."""
    try:
        if importlib.util.find_spec(name.split(".")[0]) is None:
            return None
        return importlib.import_module(name)
    except Exception:
        return None


def pipeline_base():
    """diffusers.DiffusionPipeline, or None when diffusers is not importable."""
    module = optional_import("diffusers")
    return getattr(module, "DiffusionPipeline", None) if module is not None else None


def model_mixin():
    """diffusers' ModelMixin (a whole model, not a building block), or None."""
    if not _training.present("diffusers"):
        return None
    try:
        from diffusers.models.modeling_utils import ModelMixin
    except Exception:
        return None
    return ModelMixin


def subclasses(base):
    """Every class derived from `base`, depth first, each once."""
    seen, stack = [], [base]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen.append(sub)
                stack.append(sub)
    return seen


def watch_subclasses(base, on_new_class):
    """Calls `on_new_class(cls)` for every subclass of `base` defined from now on (diffusers
    imports its pipelines lazily)."""
    if base.__dict__.get("_vxperf_watching"):
        return
    inherited = base.__dict__.get("__init_subclass__")

    def __init_subclass__(cls, **kwargs):
        if inherited is not None:
            inherited.__get__(None, cls)(**kwargs)
        else:
            super(base, cls).__init_subclass__(**kwargs)
        on_new_class(cls)

    base.__init_subclass__ = classmethod(__init_subclass__)
    base._vxperf_watching = True


def cast_dtypes(module):
    """{submodule id: compute dtype} of the submodules whose weights layerwise casting stores in
    one dtype and casts to another for the matmuls (fp8 storage, bf16 compute). A registry of a
    shape this does not know raises, which the caller says once."""
    found = {}
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


def register():
    if cast_dtypes not in _reading.WEIGHT_DTYPE_READERS:
        _reading.WEIGHT_DTYPE_READERS.append(cast_dtypes)
    _training.MODEL_BASES["diffusers"] = model_mixin

# The children that hold a transformer's blocks, as diffusers' own caches look for them.
BLOCK_LISTS = ("transformer_blocks", "single_transformer_blocks", "blocks", "layers",
               "temporal_transformer_blocks")
BLOCK_HOOK = "vxperf_block_counter"


class _Count(threading.local):
    """Blocks run in the transformer call open on this thread."""

    def __init__(self):
        self.ran = 0
        self.closed = 0


def _blocks(transformer):
    import torch

    found = []
    for name, child in transformer.named_children():
        if name in BLOCK_LISTS and isinstance(child, torch.nn.ModuleList):
            found.extend(child)
    return found


def _innermost(registry, hook, name):
    """Registers `hook` under every hook the block already has, so that it sees only the calls
    that really reach the block's own forward (a cache hook that skips never calls inward)."""
    others = [(key, registry.get_hook(key)) for key in list(registry.hooks)]
    for key, _ in reversed(others):
        registry.remove_hook(key, recurse=False)
    registry.register_hook(hook, name)
    for key, other in others:
        registry.register_hook(other, key)


def track_cache(transformer, stage=_stages.TRANSFORMER.name):
    """Counts, in every call of `transformer` (timed as `stage`), the blocks that really ran, and
    prices the call at that share of a full forward: a cache hit that ran no block is a skipped
    call, one that ran the first block of forty is a fortieth. Call it before or after the cache
    is enabled (`transformer.enable_cache(...)`, `apply_first_block_cache(...)`). Returns whether
    it is tracking (False, said once, without diffusers or without block lists)."""
    if not _state.on:
        return False
    if getattr(transformer, "_vxperf_cache_tracked", False):
        return True
    try:
        from diffusers.hooks import HookRegistry, ModelHook
    except Exception as error:
        _state.warn(("track_cache", "import"),
                    f"track_cache(): diffusers' hooks cannot be imported ({error!r}); "
                    "cached calls are priced as full forwards")
        return False
    blocks = _blocks(transformer)
    if not blocks:
        _state.warn(("track_cache", id(transformer)),
                    f"track_cache(): {type(transformer).__name__} holds no block list "
                    f"({', '.join(BLOCK_LISTS)}); cached calls are priced as full forwards")
        return False
    count = _Count()
    total = len(blocks)
    stage_id = _ext.stage_id(stage)

    class BlockCounter(ModelHook):
        """Innermost on a block: it sees the block run, never a call a cache skipped."""

        def pre_forward(self, module, *args, **kwargs):
            count.ran += 1
            return args, kwargs

    for block in blocks:
        _innermost(HookRegistry.check_if_exists_or_initialize(block), BlockCounter(), BLOCK_HOOK)

    # The call's edges from torch's own hooks: they run in Module._call_impl, outside whatever
    # replaced `forward` (a cache's hook) and, on torch 2, inside vxperf's timer, so they see every
    # call.
    def before(module, args):
        count.ran = 0
        count.closed = _ext.closed_calls(stage_id)

    def after(module, args, output):
        # Only a call that vxperf timed is marked: one open now (the timer around the hooks), or one
        # closed since `before` (a timer set as `forward`, inside them). A call that a cache hook
        # answered without reaching a timer has no record to mark.
        if (_ext.in_request() and _ext.closed_calls(stage_id) == count.closed
                and not _ext.open_calls(stage_id)):
            return None
        _ext.note_forward_fraction(stage_id, min(1.0, count.ran / total))
        return None

    transformer.register_forward_pre_hook(before)
    transformer.register_forward_hook(after)
    transformer._vxperf_cache_tracked = True
    return True
