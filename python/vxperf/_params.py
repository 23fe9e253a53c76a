"""Parameter counts of a model as it was before sharding, from the sharding's own metadata.

Never a local count times the world size: shards are padded, and ranks hold different amounts.
- FSDP1 keeps a unit's parameters in one FlatParameter, which knows the size of every original
  parameter it holds (`_numels`, padding excluded); with use_orig_params=True the originals stay
  registered as views into the local shard (`_params`), and are counted through their flat one.
- FSDP2, HSDP and tensor parallel hold DTensors: numel() is already the global count.
- DeepSpeed ZeRO-3 keeps the global count on each parameter (`ds_numel`).
A model only partly sharded is counted part by part. A module that looks sharded but carries none
of that metadata is counted as it is, and said once (VIDEOX_PERF_DIT_PARAMS is the way out)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from . import _state

if TYPE_CHECKING:
    from torch import nn


class Count:
    """What a model's parameters come to: `params` in all, `trainable` of them (requires_grad),
    `lora` of them (names holding `lora_`), and the sharding kinds seen ("fsdp1", "dtensor",
    "zero3")."""

    __slots__ = ("params", "trainable", "lora", "kinds")

    def __init__(self) -> None:
        self.params = self.trainable = self.lora = 0
        self.kinds: set[str] = set()

    def add(self, name: str, numel: int, requires_grad: bool) -> None:
        self.params += numel
        if requires_grad:
            self.trainable += numel
        if "lora_" in name:
            self.lora += numel


def _class(module_name: str, class_name: str) -> Any:
    """A class of a torch module already imported, or None (nothing is imported here)."""
    module = sys.modules.get(module_name)
    return getattr(module, class_name, None) if module is not None else None


def _is_flat(param: object, flat_class: type | None) -> bool:
    if flat_class is not None:
        return isinstance(param, flat_class)
    return hasattr(param, "_numels") and hasattr(param, "_unpadded_unsharded_size")


def _dtensor_class() -> Any:
    return (_class("torch.distributed.tensor", "DTensor")
            or _class("torch.distributed._tensor.api", "DTensor"))


def _fsdp1_units(module: nn.Module) -> list[tuple[str, nn.Module]]:
    """[(qualified name, FSDP1 unit)] inside `module` (itself included)."""
    fsdp = _class("torch.distributed.fsdp.fully_sharded_data_parallel", "FullyShardedDataParallel")
    if fsdp is None:
        return []
    return [(name, sub) for name, sub in module.named_modules() if isinstance(sub, fsdp)]


def looks_sharded(module: nn.Module) -> bool:
    """Whether some wrapper in `module` says its parameters are sharded (FSDP1, FSDP2, a
    look-alike holding `_fsdp_wrapped_module`)."""
    fsdp2 = _class("torch.distributed.fsdp._fully_shard._fully_shard", "FSDPModule")
    for sub in module.modules():
        if hasattr(sub, "_fsdp_wrapped_module") or type(sub).__name__ == "FullyShardedDataParallel":
            return True
        if fsdp2 is not None and isinstance(sub, fsdp2):
            return True
    return False


def _add_flat(count: Count, prefix: str, flat: Any) -> None:
    """The original parameters one FlatParameter holds, at their unsharded, unpadded sizes."""
    numels = tuple(int(n) for n in flat._numels)
    fqns = tuple(getattr(flat, "_fqns", None) or ("",) * len(numels))
    originals = getattr(flat, "_params", None)
    for index, numel in enumerate(numels):
        if originals:  # use_orig_params=True: each keeps its own requires_grad
            requires_grad = bool(originals[index].requires_grad)
        else:  # one flat parameter, one requires_grad for all it holds
            requires_grad = bool(flat.requires_grad)
        name = f"{prefix}.{fqns[index]}" if prefix else fqns[index]
        count.add(name, numel, requires_grad)
    count.kinds.add("fsdp1")


def count(module: nn.Module) -> Count:
    """The Count of `module`'s parameters as they were before sharding."""
    flat_class = _class("torch.distributed.fsdp._flat_param", "FlatParameter")
    dtensor = _dtensor_class()
    result = Count()
    counted: set[int] = set()  # ids of parameters already in the count (flat ones and their views)

    def take_flat(prefix: str, flat: Any) -> None:
        if flat is None or id(flat) in counted or not _is_flat(flat, flat_class):
            return
        counted.add(id(flat))
        for view in list(getattr(flat, "_params", None) or ()) + list(
                getattr(flat, "_shared_params", None) or ()):
            counted.add(id(view))
        _add_flat(result, prefix, flat)

    # use_orig_params=True registers the originals, not the flat parameter: find it on its unit.
    for prefix, unit in _fsdp1_units(module):
        handle = getattr(unit, "_handle", None)
        take_flat(prefix, getattr(handle, "flat_param", None))
    empty = 0
    for name, param in module.named_parameters():
        if id(param) in counted:
            continue
        if _is_flat(param, flat_class):
            take_flat(name.rsplit(".", 1)[0] if "." in name else "", param)
            continue
        if dtensor is not None and isinstance(param, dtensor):
            result.kinds.add("dtensor")
            numel = int(param.numel())  # the global shape's
        elif hasattr(param, "ds_numel"):
            result.kinds.add("zero3")
            numel = int(param.ds_numel)
        else:
            numel = int(param.numel())
            empty += numel == 0
        result.add(name, numel, param.requires_grad)
    if (not result.kinds and looks_sharded(module)) or empty:
        what = (f"{empty} of its parameters are empty" if empty else
                "it is wrapped for sharding but holds no FlatParameter, DTensor or ZeRO-3 "
                "parameter")
        _state.warn(("sharding", id(module)),
                    f"cannot read how {type(module).__name__} is sharded ({what}); its "
                    f"{result.params} parameters are counted as this rank holds them: set "
                    "VIDEOX_PERF_DIT_PARAMS to the unsharded count")
    return result


def count_params(module: nn.Module) -> int:
    """All parameters of the model, as before sharding."""
    return count(module).params

