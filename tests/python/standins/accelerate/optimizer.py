"""Stand-in for accelerate.optimizer (see ../README.md)."""


class AcceleratedOptimizer:
    """Steps only on the micro-step that syncs gradients (a pass-through otherwise)."""

    def __init__(self, optimizer, gradient_state):
        self.optimizer = optimizer
        self.gradient_state = gradient_state

    def step(self, closure=None):
        if self.gradient_state.sync_gradients:
            self.optimizer.step(closure)

    def zero_grad(self, set_to_none=True):
        if self.gradient_state.sync_gradients:
            self.optimizer.zero_grad(set_to_none=set_to_none)
