"""What the cost model needs, read off torch modules and call arguments.

Attention widths, text length, gradient checkpointing and the token count of a transformer call
(parameter counts are `_params`'s). The rules are the reference module's, so that the two price a
model identically; the words and the code are ours."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable

from . import _ext, _stages, _state

if TYPE_CHECKING:
    import torch
    from torch import nn

# Query/key/value projection names, one tuple per role, across the model families measured: Wan
# (q, k, v), diffusers (to_q, ...), transformers towers (q_proj, ...).
QKV_NAMES = (("q", "to_q", "q_proj"), ("k", "to_k", "k_proj"), ("v", "to_v", "v_proj"))
# One matrix for all three; its output is three equal shares, the first being the query.
FUSED_NAMES = ("qkv", "to_qkv", "qkv_proj")
# Attention stacks over the text alone: skipped, their cost does not scale with the latents.
TEXT_ONLY_TOWERS = ("token_refiner", "context_refiner")


def _out_features(module: object) -> int | None:
    width = getattr(module, "out_features", None)
    return width if isinstance(width, int) else None


def query_width(module: object) -> int | None:
    """The query width of an attention module (separate q/k/v first, else a fused qkv whose output
    splits in three), or None when `module` is not one."""
    widths: list[int] = []
    for names in QKV_NAMES:
        for name in names:
            width = _out_features(getattr(module, name, None))
            if width is not None:
                widths.append(width)
                break
        else:
            break
    if len(widths) == 3:
        return widths[0]
    for name in FUSED_NAMES:
        width = _out_features(getattr(module, name, None))
        if width is not None and width % 3 == 0:
            return width // 3
    return None


def attention_modules(module: nn.Module) -> Iterator[tuple[nn.Module, int, bool]]:
    """(submodule, query width, whether it is cross-attention) of each attention module priced:
    outside the text-only towers; cross-attention told by name (`cross`, or a last name part
    `attn2`)."""
    for name, sub in module.named_modules():
        lowered = name.lower()
        if any(tower in lowered for tower in TEXT_ONLY_TOWERS):
            continue
        width = query_width(sub)
        if width is not None:
            yield sub, width, "cross" in lowered or lowered.rsplit(".", 1)[-1] == "attn2"


def attention_widths(module: nn.Module) -> tuple[int, int, int]:
    """(self, cross, modules): summed query widths over the latent sequence and over the text, and
    how many attention modules were found."""
    self_width = cross_width = count = 0
    for _, width, cross in attention_modules(module):
        count += 1
        if cross:
            cross_width += width
        else:
            self_width += width
    return self_width, cross_width, count


TEXT_SEEN = "_vxperf_text_tokens"  # in a module's __dict__: the text length its calls received
# (module) -> None, told when a model's text length was first read off a call: the declarations
# that priced it without one are made again (_inference, integrations/accelerate).
TEXT_LISTENERS: list[Callable[[nn.Module], None]] = []
# The argument a transformer's text arrives in: diffusers' name, then Wan's original one.
TEXT_ARGUMENTS = ("encoder_hidden_states", "context")


def text_tokens(module: object) -> int:
    """The padded text length cross-attention runs against: `text_len` where the model advertises
    it (Wan's own code), else the length its calls' text was seen to have (diffusers' models
    say none), 0 while unknown."""
    value = getattr(module, "text_len", None)
    if isinstance(value, int) and value > 0:
        return value
    seen = getattr(module, "__dict__", {}).get(TEXT_SEEN)
    return seen if isinstance(seen, int) and seen > 0 else 0


def _note_text_length(module: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """Reads, once per module, the length of the text a call hands a model that does not
    advertise it (the `encoder_hidden_states` or `context` argument, by name or position: (B, L,
    D)), and tells the listeners; a model whose calls carry no such tensor is not read again."""
    if module is None or TEXT_SEEN in module.__dict__ or text_tokens(module):
        return
    import inspect

    import torch

    length = 0
    try:
        bound = inspect.signature(type(module).forward).bind_partial(module, *args, **kwargs)
        for name in TEXT_ARGUMENTS:
            text = bound.arguments.get(name)
            if isinstance(text, torch.Tensor) and text.ndim == 3:
                length = int(text.shape[1])
                break
    except (TypeError, ValueError):
        pass
    module.__dict__[TEXT_SEEN] = length
    if length > 0:
        for listener in TEXT_LISTENERS:
            try:
                listener(module)
            except Exception as error:
                _state.warn(("text-listener", type(module).__name__),
                            f"cannot price {type(module).__name__}'s cross-attention at its "
                            f"{length} text tokens ({error!r})")


def checkpointing(module: nn.Module) -> bool:
    return any(bool(getattr(sub, "gradient_checkpointing", False)) for sub in module.modules())


def priced_widths(module: nn.Module, owner_label: str) -> tuple[int, int, int] | None:
    """Attention widths for pricing, or None when attention pricing is off or no self-attention was
    found (then the model is priced linear-only, and that is said once)."""
    if not _state.on or not _ext.attention_pricing():
        return None
    widths = attention_widths(module)
    if not widths[0]:
        _state.warn(
            ("widths", id(module)),
            f"no attention projections found in {owner_label} ({type(module).__name__}); "
            "its FLOPs count the linear layers only",
        )
        return None
    return widths


def _patch_size(module: object) -> tuple[int, ...] | None:
    # The model's config only, as the reference reads it: Wan models carry a `patch_size` of their
    # own but are priced from `seq_len`. A temporal patch of its own (CogVideoX 1.5's
    # `patch_size_t`) joins a square one.
    config = getattr(module, "config", None)
    patch = getattr(config, "patch_size", None)
    if isinstance(patch, int):
        temporal = getattr(config, "patch_size_t", None)
        return (temporal if isinstance(temporal, int) and temporal > 0 else 1, patch, patch)
    if isinstance(patch, (tuple, list)) and len(patch) == 3 and all(
            isinstance(p, int) for p in patch):
        return tuple(patch)
    return None


def _frames_first(module: object, hidden: torch.Tensor) -> bool:
    """Whether a 5-D latent is laid out (B, F, C, H, W), as CogVideoX's are: its third axis is the
    model's input channels and its second is not."""
    channels = getattr(getattr(module, "config", None), "in_channels", None)
    return (isinstance(channels, int) and int(hidden.shape[2]) == channels
            and int(hidden.shape[1]) != channels)


def _warn_layout(module: object, message: str) -> None:
    name = type(module).__name__ if module is not None else "a decorated function"
    _state.warn(("layout", id(module)), f"{name}: {message}; its calls are timed but not priced")


def infer_tokens(module: object, args: Sequence[Any],
                 kwargs: Mapping[str, Any]) -> tuple[int, int, str | None] | None:
    """(latent tokens per sample, samples, dtype) of one transformer call, or None when its inputs
    do not say: the guess a call opens with, which what its blocks receive replaces (_blocks). An
    explicit `seq_len` wins (Wan: the padded length its blocks run on); else a (B, T, D) input
    gives T; else a 5-D latent gives the patch grid of the model's patch size, read (B, C, F, H, W)
    or, where its third axis is the model's input channels, (B, F, C, H, W). `dtype` is what the
    call's matmuls run in when that is not the parameters' dtype (autocast on the input's device,
    an fp8 recipe in effect), else None.

    Called by the extension with the module and the call's arguments; for a decorated function
    whose first argument is a module, that module is the one read."""
    shape = _token_shape(module, args, kwargs)
    if shape is None:
        return None
    if module is None and args and hasattr(args[0], "_call_impl"):
        _note_text_length(args[0], args[1:], kwargs)  # a decorated function: its module first
    else:
        _note_text_length(module, args, kwargs)
    # Inside accelerate's maybe_context_parallel a forward sees a shard of its sample's sequence.
    return shape[0] * _ext.sequence_shards(), shape[1], call_dtype(shape[2])


def _token_shape(module: Any, args: Sequence[Any],
                 kwargs: Mapping[str, Any]) -> tuple[int, int, torch.Tensor] | None:
    """(tokens, samples, the input tensor) of a transformer call, or None."""
    import torch

    if module is None and args and isinstance(args[0], torch.nn.Module):
        module, args = args[0], args[1:]
    hidden: Any = kwargs.get("hidden_states")
    if hidden is None:
        hidden = kwargs.get("x")
    if hidden is None and args:
        hidden = args[0]
    if not torch.is_tensor(hidden):
        _warn_layout(module, "no tensor input to read a token count from")
        return None
    if hidden.ndim < 3:
        _warn_layout(module, f"input of shape {tuple(hidden.shape)} has no token axis")
        return None
    batch = int(hidden.shape[0])
    seq_len = kwargs.get("seq_len")
    if isinstance(seq_len, int) and seq_len > 0:
        return seq_len, batch, hidden
    if hidden.ndim == 3:
        return int(hidden.shape[1]), batch, hidden
    if hidden.ndim == 5:
        patch = _patch_size(module)
        if patch is None:
            _warn_layout(module, "a (B, C, F, H, W) latent but no readable patch_size")
            return None
        frames, height, width = (int(s) for s in hidden.shape[2:])
        if _frames_first(module, hidden):
            frames = int(hidden.shape[1])  # (B, F, C, H, W): CogVideoX's layout
        return (frames // patch[0]) * (height // patch[1]) * (width // patch[2]), batch, hidden
    _warn_layout(module,
                 f"input of shape {tuple(hidden.shape)} is not (B, T, D) or (B, C, F, H, W)")
    return None


# The engine's dtype table (include/vxperf/cost_model.h): its names, which pick the peak an MFU is
# taken against.
DTYPE_NAMES = tuple(_ext.dtype_names())
# a spelling -> the engine's name or None, as read by the engine once
_dtype_names: dict[str, str | None] = {}


def dtype_name(dtype: object) -> str | None:
    """The engine's name ("bf16", "fp16", "fp8", "tf32", "fp32") of a torch dtype or of one of
    those names and spellings (its table's); None for anything else (integers, float64: no peak
    to compare with)."""
    if dtype is None:
        return None
    text = str(dtype)
    if text not in _dtype_names:
        _dtype_names[text] = _ext.parse_dtype(text)
    return _dtype_names[text]


# Readers the integrations add (vxperf/integrations): a library that decides what a module's
# weights compute in, or what a call's matmuls run in, says so here, the core knowing no library.
#   WEIGHT_DTYPE_READERS: module -> {submodule id: compute torch dtype} of the submodules whose
#                         weights are stored in another dtype (diffusers' layerwise casting)
#   CALL_DTYPE_READERS:   a call's main input -> the engine's dtype name, or None (an fp8 recipe)
WEIGHT_DTYPE_READERS: list[Callable[[nn.Module], Mapping[int, Any]]] = []
CALL_DTYPE_READERS: list[Callable[[Any], str | None]] = []


def param_dtype(module: nn.Module) -> str | None:
    """The floating dtype most of a module's weights compute in: their own dtype, or the compute
    dtype a weight reader says (diffusers' layerwise casting stores them in another); weights
    stored in fp8 with no reader's word are cast for their matmuls, to the dtype of the rest
    (norms and biases the cast left alone), which is taken. Autocast and what the blocks receive,
    read at each priced call, win over this. None when no parameter is floating."""
    cast: dict[int, Any] = {}
    for reader in WEIGHT_DTYPE_READERS:
        try:
            cast.update(reader(module))
        except Exception as error:
            _state.warn(("cast", type(module).__name__),
                        f"cannot read the layerwise casting of {type(module).__name__} "
                        f"({error!r}); priced at its parameters' dtype")
    if cast:
        pairs = ((cast.get(id(sub)), p) for sub in module.modules()
                 for p in sub.parameters(recurse=False))
        return _most((compute if compute is not None else param.dtype, param.numel())
                     for compute, param in pairs)
    stored = storage_dtype(module)
    if stored != "fp8":
        return stored
    return _most((param.dtype, param.numel()) for param in module.parameters()
                 if dtype_name(param.dtype) != "fp8")


# the engine's dtypes a matmul runs in, narrowest first
_MATMUL_WIDTHS = {"fp16": 16, "bf16": 16, "tf32": 19, "fp32": 32}
WEIGHTS = "_vxperf_weights"  # in a watched model's __dict__: param_dtype() as its watch read it


def block_dtype(model: nn.Module, hidden: Any) -> str | None:
    """What a watched model's matmuls run in, read off its first block's input while the call runs
    (a dtype read, no synchronize): an fp8 recipe or autocast in effect there (accelerate's enters
    inside the call); else the activations' dtype where it is narrower than the weights' or where
    no matmul of torch's own runs in the weights' dtype (fp8 or int8 storage cast for each
    layer): F.linear takes two operands of one dtype, so the narrower one is what the other was
    cast to. None: nothing beyond what the weights say."""
    found = call_dtype(hidden)
    if found is not None:
        return found
    if not getattr(hidden, "is_floating_point", lambda: False)():
        return None
    ran = dtype_name(hidden.dtype)
    weights = model.__dict__.get(WEIGHTS)
    if ran is None or ran == weights or ran not in _MATMUL_WIDTHS:
        return None
    if weights not in _MATMUL_WIDTHS or _MATMUL_WIDTHS[ran] < _MATMUL_WIDTHS[weights]:
        return ran
    return None


def storage_dtype(module: nn.Module) -> str | None:
    """The floating dtype most of a module's weights are stored in (fp8 too, which no matmul of
    torch's own runs in: such weights are cast for each layer's), or None."""
    return _most((param.dtype, param.numel()) for param in module.parameters())


def _most(weighted: Iterator[tuple[Any, int]]) -> str | None:
    """The engine's name of the dtype with the most elements among (dtype, count) pairs, None
    when none has a name (integers, float64)."""
    counts: dict[str, int] = {}
    for dtype, count in weighted:
        name = dtype_name(dtype)
        if name is not None:
            counts[name] = counts.get(name, 0) + count
    return max(counts, key=counts.__getitem__) if counts else None


def _autocast_reader() -> Callable[[str], Any]:
    """A function device_type -> torch dtype or None: what autocast runs matmuls in there now."""
    import torch

    if hasattr(torch, "get_autocast_dtype"):  # torch >= 2.4: one API for every device type
        def read(device_type: str) -> Any:
            if not torch.is_autocast_enabled(device_type):
                return None
            return torch.get_autocast_dtype(device_type)
        return read

    def read_apart(device_type: str) -> Any:  # torch 2.1 to 2.3: CUDA and CPU autocast apart
        if device_type == "cuda":
            return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None
        if device_type == "cpu":
            return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None
        return None
    return read_apart


_autocast: list[Callable[[str], Any]] = []


def autocast_dtype(device_type: str) -> str | None:
    """The engine's name of the dtype autocast runs matmuls in on `device_type` now, or None when
    autocast is off there or its state cannot be read (said once)."""
    try:
        if not _autocast:
            _autocast.append(_autocast_reader())
        return dtype_name(_autocast[0](device_type))
    except Exception as error:
        _state.warn(("autocast", device_type),
                    f"cannot read the autocast state on {device_type} ({error!r}); calls are "
                    "priced at the parameters' dtype")
        return None


def call_dtype(hidden: object) -> str | None:
    """What a call whose main input is `hidden` runs its matmuls in, when something other than
    the parameters decides: a recipe an integration reads (Transformer Engine's fp8 autocast),
    else torch autocast on the input's device. None: the parameters' dtype."""
    for reader in CALL_DTYPE_READERS:
        found = reader(hidden)
        if found is not None:
            return found
    device = getattr(hidden, "device", None)
    return autocast_dtype(device.type) if device is not None else None


def module_device(module: nn.Module) -> int:
    """The CUDA index a module's parameters live on, -1 for the host."""
    for param in module.parameters():
        if param.device.type == "cuda":
            return param.device.index if param.device.index is not None else 0
        return -1
    return -1


def pipeline_device(pipe: Any) -> torch.device | None:
    """The CUDA device a pipeline computes on, or None to make no CUDA call at all.

    Read from the pipeline's own modules (under multi-GPU, torch's current device is often 0 while
    the model lives elsewhere), then from its execution device (CPU offload); None on a CPU run or
    while CUDA is not initialized, so that measuring never brings a context up."""
    import torch

    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return None
    # Its transformers (a component is timed as the stage of its name), then a UNet or a VAE.
    for name in (*_stages.PRICED, "unet", "vae"):
        module = getattr(pipe, name, None)
        if isinstance(module, torch.nn.Module):
            for param in module.parameters():
                if param.device.type == "cuda":
                    return param.device
    try:
        device = pipe._execution_device
    except Exception:
        return None
    return device if getattr(device, "type", None) == "cuda" else None
