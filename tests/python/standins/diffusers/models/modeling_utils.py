"""Stand-in for diffusers.models.modeling_utils (see ../../README.md)."""
import torch


class ModelMixin(torch.nn.Module):
    """What marks a diffusers model class (a whole model, not a building block)."""
