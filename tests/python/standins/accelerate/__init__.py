"""Stand-in for accelerate (see ../README.md): gradient accumulation, loss scaling, clipping and
optimizer stepping as accelerate does them on one process."""
import contextlib

import torch

from .optimizer import AcceleratedOptimizer


class GradientState:
    def __init__(self):
        self.sync_gradients = True


class Accelerator:
    def __init__(self, gradient_accumulation_steps=1, cpu=False):
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.gradient_state = GradientState()
        self.device = torch.device("cpu")
        self._micro = 0

    @property
    def sync_gradients(self):
        return self.gradient_state.sync_gradients

    def prepare(self, *objects):
        prepared = tuple(AcceleratedOptimizer(o, self.gradient_state)
                         if isinstance(o, torch.optim.Optimizer) else o for o in objects)
        return prepared if len(prepared) != 1 else prepared[0]

    @contextlib.contextmanager
    def accumulate(self, *models):
        self._micro += 1
        self.gradient_state.sync_gradients = self._micro % self.gradient_accumulation_steps == 0
        yield

    def backward(self, loss, **kwargs):
        (loss / self.gradient_accumulation_steps).backward(**kwargs)

    def clip_grad_norm_(self, parameters, max_norm, norm_type=2):
        return torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type=norm_type)
