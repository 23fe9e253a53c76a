"""Stand-in for diffusers.hooks (see ../../README.md): the hook registry and two caches over it."""
from .first_block_cache import FirstBlockCacheConfig, apply_first_block_cache
from .hooks import HookRegistry, ModelHook
from .skip_cache import SkipCacheConfig, apply_skip_cache

__all__ = ["FirstBlockCacheConfig", "HookRegistry", "ModelHook", "SkipCacheConfig",
           "apply_first_block_cache", "apply_skip_cache"]
