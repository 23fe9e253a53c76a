"""The framework's pipeline classes (see ../README.md)."""
from diffusers import DiffusionPipeline

import tiny_models as _tm


class WanPipeline(DiffusionPipeline, _tm.WanPipeline):
    component_names = _tm.WanPipeline.component_names

    def __call__(self, *args, **kwargs):
        return _tm.WanPipeline.__call__(self, *args, **kwargs)


class WanFunPipeline(WanPipeline):
    """Inherits its __call__: measured through WanPipeline's."""


WanI2VPipeline = WanPipeline  # an alias
