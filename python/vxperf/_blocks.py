"""What a transformer's blocks ran, seen from their own inputs, so that each priced call is priced
at the work that ran.

Caches decide inside a transformer's forward how much of it runs: VideoX-Fun's TeaCache returns a
cached residual and runs no block, its CFG skip runs the blocks on half the rows, diffusers'
first-block cache runs one block of forty, pyramid attention broadcast answers some attention
modules from a cache. None of them says so. Every priced model (a pipeline's transformer, the
trained model) gets a probe on each of its blocks, set as the block's `_call_impl` (never its
`forward`, which caches, offloading and adapters replace): while a priced call of the model is
open on the thread, each block call adds its rows and tokens, read off the shape of its input (no
timing, no synchronize; python/src/block_probe.h). The call is then priced at that share of a full
forward, at the tokens and rows the blocks received: what the engine's ForwardWork says.

Where a cache hook sits on a module (diffusers' hook registry: integrations/diffusers.py), the
probe cannot tell a call the hook answered from one that ran, so a counter the integration
registers innermost says when the module's own forward was reached; a skipped part of a block (an
attention module a cache answered) takes its share off its block's.

The parts of a model outside its blocks (embeddings, the head: well under 1% of a DiT's
parameters) are priced with the blocks, in proportion to their size; a block's share of the
linear and attention terms is its share of the blocks' parameters and attention widths.

A model is not watched while it is compiled (its probes would break torch.compile's graphs): its
calls are priced from their inputs, as before. A call in which no block ran is priced as skipped
only once the probes are found still in place."""

from __future__ import annotations

import sys
import typing
from typing import TYPE_CHECKING, Any, Callable

from . import _ext, _params, _reading, _state

if TYPE_CHECKING:
    import types

    from torch import nn

WATCH = "_vxperf_watch"  # in a model's __dict__: its BlockWatch, or None (not watched)
WATCHED = "_vxperf_watched"  # ... and what keeps its probes: (_Watched, block totals, widths)
PROBED = "_call_impl"  # where a probe sits on a block


class CacheReader(typing.NamedTuple):
    """What an integration sees of caches (diffusers' hook registry)."""

    # skippable(model) -> [module]: the modules of `model` whose own forward a cache hook may skip
    skippable: Callable[[nn.Module], list[nn.Module]]
    # count_runs(module, probe): registers, innermost on the module, what calls probe.ran()
    count_runs: Callable[[nn.Module, _ext.BlockProbe], None]
    # counting(module) -> whether that counter is on the module now
    counting: Callable[[nn.Module], bool]


CACHE_READERS: list[CacheReader] = []
# A sequence-parallel reader: (degree, {id(module)}) of a model (see SHARD_READERS).
ShardReader = Callable[[Any], tuple[int, set[int]]]


def _own_sequence_shards(model: Any) -> tuple[int, set[int]]:
    """VideoX-Fun's transformers keep their sequence-parallel degree as `sp_world_size` and chunk
    the sequence before their blocks."""
    degree = getattr(model, "sp_world_size", 1)
    return (degree if isinstance(degree, int) and degree > 1 else 1), set()


# Sequence-parallel layouts an integration can see: shards(model) -> (degree, {id(module)}) the
# degree of sequence parallelism `model` runs in (1: none) and the modules that split their own
# input (they receive the whole sequence; the rest a 1/degree shard of it).
SHARD_READERS: list[ShardReader] = [_own_sequence_shards]


def block_lists(model: nn.Module) -> list[tuple[str, nn.ModuleList]]:
    """[(name, ModuleList)] of a model's blocks: every ModuleList whose entries each hold an
    attention module, outside the text-only towers and not inside another's entries."""
    import torch

    found: list[tuple[str, nn.ModuleList]] = []
    for name, sub in model.named_modules():
        if not isinstance(sub, torch.nn.ModuleList) or len(sub) == 0:
            continue
        if any(tower in name.lower() for tower in _reading.TEXT_ONLY_TOWERS):
            continue
        if any(name.startswith(outer + ".") for outer, _ in found):
            continue
        if all(any(True for _ in _reading.attention_modules(entry)) for entry in sub):
            found.append((name, sub))
    return found


def _compiled(module: Any) -> bool:
    return module.__dict__.get("_compiled_call_impl") is not None


def _under_compile() -> bool:
    """Whether the calling code runs inside torch.compile (a frame of dynamo's on the stack): a
    model first called there is not watched."""
    frame: types.FrameType | None = sys._getframe(1)
    for _ in range(64):
        if frame is None:
            return False
        if "torch/_dynamo" in frame.f_code.co_filename.replace("\\", "/"):
            return True
        frame = frame.f_back
    return False


class _Watched:
    """A watched model's probes, what its watch asks (verify) when a call ran no block: whether
    every probe still sits where its block's calls reach it."""

    __slots__ = ("model", "names", "blocks", "probes", "parts")

    def __init__(self, model: nn.Module, lists: list[tuple[str, nn.ModuleList]]) -> None:
        self.model = model
        self.names = [name for name, _ in lists]
        self.blocks = [block for _, blocks in lists for block in blocks]
        # id(module) -> (module, probe, what its _call_impl was before)
        self.probes: dict[int, tuple[nn.Module, _ext.BlockProbe, Any]] = {}
        self.parts: set[int] = set()  # ids of the parts probed

    def __call__(self) -> bool:
        """What a call in which no block ran asks: False when the probes are no longer where the
        calls reach them; the model is then unwatched until its next priced call watches it
        again (that call is priced from its inputs)."""
        if self.in_place():
            return True
        self.remove()
        self.model.__dict__.pop(WATCH, None)
        self.model.__dict__.pop(WATCHED, None)
        return False

    def current_blocks(self) -> list[nn.Module] | None:
        """The model's blocks as its lists hold them now (None: a list is gone)."""
        blocks: list[nn.Module] = []
        for name in self.names:
            try:
                blocks.extend(self.model.get_submodule(name))
            except Exception:
                return None
        return blocks

    def in_place(self) -> bool:
        if _compiled(self.model):
            return False
        blocks = self.current_blocks()
        if blocks is None or len(blocks) != len(self.blocks):
            return False
        for block, held in zip(blocks, self.blocks):
            if block is not held or _compiled(block):
                return False
        for module, probe, _ in self.probes.values():
            if module.__dict__.get(PROBED) is not probe:
                return False
        return True

    def remove(self) -> None:
        """Takes every probe off (where nothing replaced it since)."""
        for module, probe, before in self.probes.values():
            if module.__dict__.get(PROBED) is probe:
                if before is None:
                    del module.__dict__[PROBED]
                else:
                    object.__setattr__(module, PROBED, before)
        self.probes.clear()
        self.parts.clear()


def _size(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _widths(module: nn.Module, attention: dict[int, tuple[int, bool]]) -> tuple[int, int]:
    """(self, cross) query widths of `module`'s attention modules, as the model's reading
    classified them (`attention`: {id(module): (width, cross)})."""
    self_width = cross_width = 0
    for sub in module.modules():
        found = attention.get(id(sub))
        if found is not None:
            if found[1]:
                cross_width += found[0]
            else:
                self_width += found[0]
    return self_width, cross_width


class _Shares:
    """A module's share of the blocks' linear, self- and cross-attention terms."""

    def __init__(self, totals: tuple[float, float, float], size: int,
                 widths: tuple[int, int]) -> None:
        self.linear = size / totals[0] if totals[0] else 0.0
        self.self_attn = widths[0] / totals[1] if totals[1] else self.linear
        self.cross = widths[1] / totals[2] if totals[2] else self.linear


def _costs(model: nn.Module) -> tuple[float, float, float]:
    """(linear, self_attn, cross_attn): the model's cost per sample over T tokens, linear*T +
    self_attn*T^2 + cross_attn*T, by the engine's cost model (its widths only where attention is
    priced). Only their ratios matter here: the engine prices the call."""
    params = _params.count_params(model)
    widths = _reading.priced_widths(model, f"the blocks of {type(model).__name__}")
    if not widths:
        return 2.0 * params, 0.0, 0.0
    density = getattr(model, "_vxperf_attn_density", None) or 1.0
    text = _reading.text_tokens(model)
    return 2.0 * params, 4.0 * widths[0] * float(density), 4.0 * text * widths[1]


def _install(watched: _Watched, watch: _ext.BlockWatch, module: nn.Module, shares: _Shares,
             part: bool) -> _ext.BlockProbe:
    current = module.__dict__.get(PROBED)
    if isinstance(current, _ext.BlockProbe):  # one left by a watch no longer held: what it wraps
        wrapped = current.__wrapped__
        own = (getattr(wrapped, "__self__", None) is module
               and getattr(wrapped, "__func__", None) is type(module)._call_impl)  # type: ignore[union-attr]
        current = None if own else wrapped
    if current is None:
        func, self_arg = type(module)._call_impl, module
    else:
        func, self_arg = current, None
    probe = _ext.BlockProbe(func, self_arg, watch, part, shares.linear, shares.self_attn,
                            shares.cross)
    object.__setattr__(module, PROBED, probe)
    watched.probes[id(module)] = (module, probe, current)
    if part:
        watched.parts.add(id(module))
    return probe


def _build(model: nn.Module, lists: list[tuple[str, nn.ModuleList]]) -> _ext.BlockWatch:
    """The watch of `model` whose blocks are `lists`, its probes set."""
    attention = {id(sub): (width, cross) for sub, width, cross in
                 _reading.attention_modules(model)}
    blocks = [block for _, entries in lists for block in entries]
    sizes = [_size(block) for block in blocks]
    widths = [_widths(block, attention) for block in blocks]
    totals = (float(sum(sizes)), float(sum(w[0] for w in widths)),
              float(sum(w[1] for w in widths)))
    uniform = len(set(sizes)) == 1 and len(set(widths)) == 1
    linear, self_attn, cross_attn = _costs(model)
    watched = _Watched(model, lists)
    watch = _ext.BlockWatch(len(blocks), linear, self_attn, cross_attn, uniform, watched)
    for block, size, width in zip(blocks, sizes, widths):
        _install(watched, watch, block, _Shares(totals, size, width), False)
    model.__dict__[WATCH] = watch
    model.__dict__[WATCHED] = (watched, totals, attention)
    return watch


def _refresh(model: nn.Module, watch: _ext.BlockWatch) -> None:
    """What changes between requests: the modules a cache may skip now (counted innermost), and
    the sequence shards each block's input arrives in."""
    watched, totals, attention = model.__dict__[WATCHED]
    # the blocks' modules, by id: made only for a part a cache may skip
    inside: set[int] | None = None
    for reader in CACHE_READERS:
        for module in reader.skippable(model):
            key = id(module)
            if key not in watched.probes and inside is None:
                inside = {id(sub) for block in watched.blocks for sub in block.modules()}
            if key in watched.probes:
                probe = watched.probes[key][1]
            elif inside is not None and key in inside:  # made just above
                shares = _Shares(totals, _size(module), _widths(module, attention))
                probe = _install(watched, watch, module, shares, True)
            else:
                continue  # outside the blocks: priced with them
            if not reader.counting(module):
                reader.count_runs(module, probe)
    # A probe waits for the counter only where one is on its module now (a registry taken off
    # since takes the counter with it).
    for module, probe, _ in watched.probes.values():
        probe.inner = any(reader.counting(module) for reader in CACHE_READERS)
    degree = 1
    splitting: set[int] = set()
    for shards in SHARD_READERS:
        found, own = shards(model)
        if found > 1:
            degree, splitting = found, own
            break
    for module, probe, _ in watched.probes.values():
        probe.shard = 1 if id(module) in splitting else degree


def unwatch(model: Any) -> None:
    """Takes `model`'s probes off and marks it unwatched."""
    held = model.__dict__.pop(WATCHED, None)
    if held is not None:
        held[0].remove()
    model.__dict__[WATCH] = None


def watch(model: nn.Module) -> _ext.BlockWatch | None:
    """Watches `model`'s blocks, or refreshes the watch it has (the caches on it, its sequence
    shards; probes set again where its blocks changed). Returns its BlockWatch, or None when it
    has no blocks or runs compiled (then it is marked unwatched)."""
    if not _state.on:
        return None
    try:
        held: _ext.BlockWatch | None = model.__dict__.get(WATCH)
        watched = model.__dict__.get(WATCHED)
        if _compiled(model) or any(_compiled(block) for block in
                                   (watched[0].blocks if watched else ())):
            unwatch(model)
            return None
        if held is None or watched is None or not watched[0].in_place():
            unwatch(model)
            lists = block_lists(model)
            if not lists:
                return None
            held = _build(model, lists)
        _refresh(model, held)
        # What the blocks' inputs are held to (_reading.block_dtype), read again as the watch is.
        model.__dict__[_reading.WEIGHTS] = _reading.param_dtype(model)
        return held
    except Exception as error:
        _state.warn(("blocks", id(model)),
                    f"cannot see the blocks of {type(model).__name__} ({error!r}); its calls are "
                    "priced from their inputs")
        try:
            unwatch(model)
        except Exception:
            model.__dict__[WATCH] = None
        return None


def first_priced(model: nn.Module) -> None:
    """The engine's factory: a model priced for the first time (the trained model's first
    forward) is watched, unless it runs under torch.compile."""
    if _under_compile():
        model.__dict__[WATCH] = None
        return
    watch(model)


_registered: list[bool] = []


@_state.when_on
def register() -> None:
    """Hands the extension what its probes read (torch's tensor and module types) and its factory,
    once torch is imported: metrics on, and a model about to be priced (idempotent)."""
    torch = sys.modules.get("torch")
    if _registered or torch is None or not hasattr(torch, "nn"):
        return
    _ext.set_block_types(torch.Tensor, torch.nn.Module, _reading.block_dtype)
    _ext.set_watch_factory(first_priced)
    _registered.append(True)
