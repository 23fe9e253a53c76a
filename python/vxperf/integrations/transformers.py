"""transformers: its model base class. A training model class that is a transformers model and not
a diffusers one is a text encoder (an LLM or T5 tower), as the reference classifies it."""

from .. import _training


def pretrained_base():
    """transformers.PreTrainedModel, or None when transformers is not importable."""
    if not _training.present("transformers"):
        return None
    try:
        from transformers import PreTrainedModel
    except Exception:
        return None
    return PreTrainedModel


def register():
    _training.MODEL_BASES["transformers"] = pretrained_base
