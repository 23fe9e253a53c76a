"""Stand-in for diffusers' first-block cache: the first block always runs; when its output moved
less than `threshold` (relative) since the last call, the other blocks are skipped and their last
residual is added instead."""
from dataclasses import dataclass
from typing import Any

from .hooks import HookRegistry, ModelHook

BLOCK_LISTS = ("transformer_blocks", "single_transformer_blocks", "blocks", "layers")


@dataclass
class FirstBlockCacheConfig:
    threshold: float = 0.05


@dataclass
class _Shared:
    """What the blocks' hooks share: the head block's last output and input to the rest, whether
    the rest compute this call, and their last residual."""

    head_output: Any = None
    residual: Any = None
    compute: bool = True
    head_in: Any = None


class _BlockHook(ModelHook):
    def __init__(self, shared):
        super().__init__()
        self.shared = shared


class _Head(_BlockHook):
    def __init__(self, shared, threshold):
        super().__init__(shared)
        self.threshold = threshold

    def new_forward(self, module, x, *args, **kwargs):
        out = self.fn_ref.original_forward(x, *args, **kwargs)
        s = self.shared
        if s.head_output is None or s.residual is None:
            s.compute = True
        else:
            diff = ((out - s.head_output).abs().mean() / s.head_output.abs().mean()).item()
            s.compute = diff > self.threshold
        s.head_output = out
        if not s.compute:
            return out + s.residual
        s.head_in = out
        return out


class _Rest(_BlockHook):
    def __init__(self, shared, tail):
        super().__init__(shared)
        self.tail = tail

    def new_forward(self, module, x, *args, **kwargs):
        if not self.shared.compute:
            return x  # the head already added the cached residual
        out = self.fn_ref.original_forward(x, *args, **kwargs)
        if self.tail:
            self.shared.residual = out - self.shared.head_in
        return out


def apply_first_block_cache(module, config):
    blocks = [block for name, child in module.named_children() if name in BLOCK_LISTS
              for block in child]
    shared = _Shared()
    HookRegistry.check_if_exists_or_initialize(blocks[0]).register_hook(
        _Head(shared, config.threshold), "fbc_leader_block_hook")
    for index, block in enumerate(blocks[1:], 1):
        HookRegistry.check_if_exists_or_initialize(block).register_hook(
            _Rest(shared, index == len(blocks) - 1), "fbc_block_hook")
