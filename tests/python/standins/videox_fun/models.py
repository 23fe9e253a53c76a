"""The framework's model classes (see ../README.md): the tiny models of tiny_models.py under the
framework's names, as diffusers / transformers models."""
import diffusers.models.modeling_utils as _diffusers
import transformers as _transformers

import tiny_models as _tm

WanBlock = _tm.WanBlock  # a building block: not a whole model, never wrapped


class WanTransformer3DModel(_diffusers.ModelMixin, _tm.WanTransformer3DModel):
    pass


class AutoencoderKLWan(_diffusers.ModelMixin, _tm.VideoVAE):
    pass


class WanT5EncoderModel(_transformers.PreTrainedModel, _tm.TextEncoder):
    pass


WanTransformer = WanTransformer3DModel  # an alias: the same class, wrapped once
