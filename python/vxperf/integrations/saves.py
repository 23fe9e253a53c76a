"""What writes a model or its state to disk in a training process, timed as a checkpoint's save
(vxperf.checkpoint()): outside the steps, with the bytes written. A diffusers or transformers
model's `save_pretrained` and a diffusers pipeline's (one save, its components' inside it), and
the files `torch.save` and safetensors' `save_file` write, as a training script's final save, a
LoRA's weights and a hook of accelerate's save_state write them. Only once a training loop runs
in the process (an inference program that saves a tensor is left alone) and on its main thread;
one inside another save (accelerate's save_state writing through torch.save) is part of it."""

from __future__ import annotations

import functools
import os
import time
from typing import Any, Callable

from .. import _ext, _state, _training


def _saving() -> bool:
    return _state.on and _state.on_main_thread() and _ext.training_active()


def folder_bytes(path: Any, since: float | None = None) -> int:
    """Bytes of the files under `path` (those modified at or after `since`, a time.time(), when
    given); -1 when it cannot be read."""
    try:
        total = 0
        for root, _, files in os.walk(path):
            for name in files:
                info = os.stat(os.path.join(root, name))
                if since is None or info.st_mtime >= since:
                    total += info.st_size
        return total
    except (OSError, TypeError, ValueError):
        return -1


def save_to_folder(save: Callable[[], Any], folder_of: Callable[[Any], Any]) -> Any:
    """Runs `save` as a checkpoint's save whose folder `folder_of(its result)` names: its bytes
    those of the folder's files written during the call (by any rank sharing it), to the second
    before it began, as filesystems keep mtimes that coarse."""
    began = time.time() - 1.0
    with _training.checkpoint("save") as scope:
        result = save()
        folder = folder_of(result)
        scope.bytes = folder_bytes(os.fspath(folder), began) if folder else None
        scope.path = folder
    return result


def _file_size(path: Any) -> int:
    try:
        return os.path.getsize(path)
    except (OSError, TypeError, ValueError):
        return -1


def _writes_file(function: Callable[..., Any], target_at: int,
                 target_name: str) -> Callable[..., Any]:
    """`function` timed as a save when its target (argument `target_at`, or keyword
    `target_name`) is a path: a file-like target (a buffer being serialized) is not a save."""
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        target = args[target_at] if len(args) > target_at else kwargs.get(target_name)
        if not (_saving() and isinstance(target, (str, os.PathLike))):
            return function(*args, **kwargs)
        with _training.checkpoint("save", path=target) as scope:
            result = function(*args, **kwargs)
            scope.bytes = _file_size(target)
        return result

    timed._vxperf_patched = True  # type: ignore[attr-defined]
    return timed


def _writes_folder(function: Callable[..., Any]) -> Callable[..., Any]:
    """A `save_pretrained(save_directory, ...)` method timed as a save of that folder."""
    @functools.wraps(function)
    def save_pretrained(self: Any, *args: Any, **kwargs: Any) -> Any:
        folder = args[0] if args else kwargs.get("save_directory")
        if not (_saving() and isinstance(folder, (str, os.PathLike))):
            return function(self, *args, **kwargs)
        return save_to_folder(lambda: function(self, *args, **kwargs), lambda _: folder)

    save_pretrained._vxperf_patched = True  # type: ignore[attr-defined]
    return save_pretrained


def patch_save_pretrained(cls: type) -> str | None:
    """Times the `save_pretrained` class `cls` defines, once. Returns its name, or None when it
    defines none."""
    function = cls.__dict__.get("save_pretrained")
    if function is None or not callable(function):
        return None
    if not getattr(function, "_vxperf_patched", False):
        cls.save_pretrained = _writes_folder(function)  # type: ignore[attr-defined]
    return f"{cls.__name__}.save_pretrained"


def patch(model_bases: dict[str, type]) -> list[str]:
    """Patches torch.save, safetensors' save_file and the `save_pretrained` of `model_bases` (the
    libraries' model base classes) once. Returns what was patched."""
    import torch

    patched = []
    if not getattr(torch.save, "_vxperf_patched", False):
        torch.save = _writes_file(torch.save, 1, "f")
    patched.append("torch.save")
    if _training.present("safetensors"):
        try:
            import safetensors.torch as safetensors_torch

            if not getattr(safetensors_torch.save_file, "_vxperf_patched", False):
                safetensors_torch.save_file = _writes_file(safetensors_torch.save_file, 1,
                                                           "filename")
            patched.append("safetensors.torch.save_file")
        except Exception:
            pass
    for base in model_bases.values():
        name = patch_save_pretrained(base)
        if name is not None:
            patched.append(name)
    return patched
