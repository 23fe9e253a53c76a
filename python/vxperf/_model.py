"""The model description as it crosses into the engine: one dataclass whose fields are named as the
engine's ModelInfo (vxperf/model.h) names them, read by name on the other side."""

import dataclasses
from typing import Any, Optional


@dataclasses.dataclass(frozen=True)
class Model:
    params: int
    # (self, cross, modules): summed query widths over the latents and over the text, and how
    # many attention modules; None prices the linear layers alone.
    widths: Optional[tuple[int, int, int]] = None
    text_tokens: int = 0  # the padded text length cross-attention runs against
    dtype: str = ""  # the engine's dtype name ("bf16", "fp8", ...); "": not read
    storage_dtype: str = ""  # what most weights are stored in, where read ("": not read)
    attn_density: float = 1.0  # share of the self-attention square computed
    trainable: int = -1  # training: parameters that get gradients (-1: all of them)
    checkpointing: bool = False  # training: gradient checkpointing on

    def but(self, **fields: Any) -> "Model":
        """This model with `fields` in place of its own (None leaves one as it is)."""
        return dataclasses.replace(self, **{k: v for k, v in fields.items() if v is not None})
