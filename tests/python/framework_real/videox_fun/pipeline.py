"""The pipeline classes of the framework (the real ones)."""
from diffusers import CogVideoXPipeline, WanImageToVideoPipeline, WanPipeline

__all__ = ["CogVideoXPipeline", "WanImageToVideoPipeline", "WanPipeline"]
