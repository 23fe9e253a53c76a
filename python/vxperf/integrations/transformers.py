"""transformers: its model base class. A training model class that is a transformers model and not
a diffusers one is a text encoder (an LLM or T5 tower), as the reference classifies it."""

from __future__ import annotations


from .. import _training


def pretrained_base() -> type | None:
    """transformers.PreTrainedModel, or None when transformers is not importable."""
    return _training.library_class("transformers", "PreTrainedModel")


def register() -> None:
    _training.MODEL_BASES["transformers"] = pretrained_base
