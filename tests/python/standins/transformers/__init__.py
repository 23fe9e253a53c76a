"""Stand-in for transformers (see ../README.md)."""
import torch


class PreTrainedModel(torch.nn.Module):
    """What marks a transformers model class (text encoders, vision towers)."""
