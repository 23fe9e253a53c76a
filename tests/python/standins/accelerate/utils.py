"""Stand-in for accelerate.utils (see ../README.md)."""
from .optimizer import AcceleratedOptimizer


class DeepSpeedOptimizerWrapper(AcceleratedOptimizer):
    """DeepSpeed steps inside backward; this step does nothing of its own."""

    def step(self, closure=None):
        pass
