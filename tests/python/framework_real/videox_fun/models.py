"""The model classes a training script of the framework builds (the real ones)."""
from diffusers import AutoencoderKLWan, CogVideoXTransformer3DModel, WanTransformer3DModel
from transformers import T5EncoderModel, UMT5EncoderModel

__all__ = ["AutoencoderKLWan", "CogVideoXTransformer3DModel", "T5EncoderModel",
           "UMT5EncoderModel", "WanTransformer3DModel"]
