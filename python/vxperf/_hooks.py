"""Where a component's timer sits, so that whatever else wraps the module keeps it.

accelerate (cpu_offload, enable_model_cpu_offload, dispatch_model), diffusers' hook registry
(caches, group offloading, layerwise casting) and peft all replace a module's `forward`, and some
put the old one back later: a timer set as the instance's `forward` is thrown away by the first
hook removal. So the timer replaces the instance's `_call_impl` instead (torch >= 2.1, whose
Module.__call__ goes through `self._call_impl`), or its `_compiled_call_impl` after
`module.compile()`. Nothing else touches those, and the timer then runs around whatever `forward`
the instance has at call time, as a torch module hook does.

The timer of a module is kept in its `__dict__` (never through a wrapper's attribute forwarding,
as torch.compile's OptimizedModule does), so a module is timed once whatever pipelines share it."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable, Optional

from . import _ext

if TYPE_CHECKING:
    from torch import nn

# What prices a call from its arguments (vxperf._reading.infer_tokens), or None.
Infer = Optional[Callable[..., Any]]

# Keys in a module's __dict__.
TIMER = "_vxperf_timer"  # {attribute: TimedCall} this module is timed through

# torch >= 2.1: Module.__call__ looks the implementation up on the instance.
_INSTANCE_CALL: bool | None = None


def instance_call() -> bool:
    """Whether Module.__call__ reaches the instance's `_call_impl` (torch >= 2.1)."""
    global _INSTANCE_CALL
    if _INSTANCE_CALL is None:
        import torch

        module = torch.nn.Module
        wrapped = getattr(module, "_wrapped_call_impl", None)
        _INSTANCE_CALL = wrapped is not None and module.__call__ is wrapped
    return _INSTANCE_CALL


def require_instance_call() -> None:
    """Raises, naming the torch found, where a component's calls cannot be timed (torch < 2.1)."""
    if not instance_call():
        import torch

        raise RuntimeError(f"vxperf times module calls on torch >= 2.1; this is torch "
                           f"{torch.__version__}")


def owner_key(module: Any) -> Any:
    """The module whose work a call is: torch.compile's wrapper times its original module, so a
    timer on each never counts one call twice."""
    for _ in range(8):
        if type(module).__name__ != "OptimizedModule":
            return module
        try:
            module = module.__dict__["_modules"]["_orig_mod"]
        except (KeyError, TypeError):
            return module
    return module


def _timed_call(function: Callable[..., Any], module: nn.Module, stage: str, flags: int,
                infer: Infer, bound: bool) -> _ext.TimedCall:
    # `bound`: `function` is the plain function of a method of `module` (module goes in front).
    return _ext.TimedCall(function, module if bound else None, owner_key(module), stage, flags, -1,
                          infer)


def _wrap(module: nn.Module, attribute: str, stage: str, flags: int,
          infer: Infer) -> _ext.TimedCall:
    """Sets a timer of `module`'s current `attribute` (a method or a callable) on the instance."""
    current = getattr(module, attribute)
    if inspect.ismethod(current) and current.__self__ is module:
        timer = _timed_call(current.__func__, module, stage, flags, infer, True)
    else:
        timer = _timed_call(current, module, stage, flags, infer, False)
    object.__setattr__(module, attribute, timer)
    return timer


def timers(module: Any) -> dict[str, _ext.TimedCall]:
    """{attribute: timer} of a module vxperf times (empty when it times none)."""
    return module.__dict__.get(TIMER) or {}


def timer_of(module: Any) -> _ext.TimedCall | None:
    """The timer of a module's calls (its `_call_impl` or `_compiled_call_impl` one), None when
    it has none."""
    held = timers(module)
    for attribute in ("_compiled_call_impl", "_call_impl"):
        if attribute in held:
            return held[attribute]
    return None


def _compiled_over(compiled: object, timer: object) -> bool:
    """Whether a compiled call implementation runs `timer` (module.compile() after vxperf hooked:
    torch.compile captured the timer)."""
    return getattr(compiled, "_torchdynamo_orig_callable", None) is timer or reaches(compiled,
                                                                                    timer)


def reaches(callable_: object, timer: object, limit: int = 24) -> bool:
    """Whether calling `callable_` goes through `timer`, following the links wrappers leave:
    `__wrapped__` (functools.wraps, accelerate, diffusers), partials, bound methods, and
    diffusers' hook chains (the closures that hold their function references)."""
    stack: list[Any] = [callable_]
    seen: set[int] = set()
    while stack and len(seen) < limit:
        item = stack.pop()
        if item is None or id(item) in seen:
            continue
        if item is timer:
            return True
        seen.add(id(item))
        if isinstance(item, _ext.TimedCall):
            stack.append(item.__wrapped__)
            continue
        if isinstance(item, functools.partial):
            stack.append(item.func)
            stack.extend(a for a in item.args if callable(a))
        for link in ("__wrapped__", "__func__", "forward", "original_forward"):
            try:
                stack.append(inspect.getattr_static(item, link))
            except AttributeError:
                pass
            except Exception:
                pass
        for cell in getattr(item, "__closure__", None) or ():
            try:
                stack.append(cell.cell_contents)
            except ValueError:
                pass
    return False


def in_place(module: Any, attribute: str, timer: object) -> bool:
    """Whether `timer` still times the calls that reach `module`'s `attribute`."""
    current = module.__dict__.get(attribute)
    if current is timer:
        return True
    if attribute == "_call_impl":
        return False
    # A forward or VAE method replaced since: still timed if the replacement calls through it.
    if current is None:
        current = getattr(module, attribute, None)
    if reaches(current, timer):
        return True
    old = module.__dict__.get("_old_forward") if attribute == "forward" else None
    return old is not None and reaches(old, timer)


def hook_calls(module: nn.Module, stage: str, flags: int, infer: Infer) -> list[str]:
    """Times every call of `module` as `stage`. Returns the attributes newly timed."""
    require_instance_call()
    held = dict(timers(module))
    done = []
    compiled = module.__dict__.get("_compiled_call_impl")
    call_timer = held.get("_call_impl")
    if call_timer is None or module.__dict__.get("_call_impl") is not call_timer:
        held["_call_impl"] = _wrap(module, "_call_impl", stage, flags, infer)
        call_timer = held["_call_impl"]
        done.append("_call_impl")
    # module.compile() before vxperf hooked: __call__ goes to the compiled implementation, which
    # holds the class's _call_impl, not the timer.
    if compiled is not None and not _compiled_over(compiled, call_timer):
        if held.get("_compiled_call_impl") is not compiled:
            held["_compiled_call_impl"] = _wrap(module, "_compiled_call_impl", stage, flags, infer)
            done.append("_compiled_call_impl")
    object.__setattr__(module, TIMER, held)
    return done


def hook_methods(module: nn.Module, methods: Iterable[tuple[str, str]], flags: int) -> list[str]:
    """Times `module`'s methods [(name, stage)] (a VAE's encode/decode) from now on. Returns the
    names newly timed."""
    held = dict(timers(module))
    done = []
    for name, stage in methods:
        if not callable(getattr(module, name, None)):
            continue
        timer = held.get(name)
        if timer is not None and in_place(module, name, timer):
            continue
        held[name] = _wrap(module, name, stage, flags, None)
        done.append(name)
    object.__setattr__(module, TIMER, held)
    return done


def lost(module: Any) -> list[str]:
    """The attributes whose timer no longer times `module`'s calls (replaced since, and not
    called through)."""
    held = timers(module)
    gone = []
    for attribute, timer in held.items():
        if attribute == "_compiled_call_impl":
            compiled = module.__dict__.get("_compiled_call_impl")
            if compiled is not timer and not (compiled is not None and _compiled_over(compiled,
                                                                                      timer)):
                gone.append(attribute)
        elif not in_place(module, attribute, timer):
            gone.append(attribute)
    if "_call_impl" in held:
        compiled = module.__dict__.get("_compiled_call_impl")
        # Compiled after vxperf hooked, around the class's implementation: calls bypass it.
        if compiled is not None and "_compiled_call_impl" not in held and not _compiled_over(
                compiled, held["_call_impl"]):
            gone.append("_compiled_call_impl")
    return gone


def unhook(module: Any) -> None:
    """Puts back what vxperf replaced on `module` (where nothing replaced it since)."""
    for attribute, timer in timers(module).items():
        if module.__dict__.get(attribute) is timer:
            del module.__dict__[attribute]
            if attribute == "_compiled_call_impl":
                object.__setattr__(module, attribute, timer.__wrapped__)
    module.__dict__.pop(TIMER, None)
