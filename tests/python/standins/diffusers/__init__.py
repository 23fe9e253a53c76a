"""Stand-in for diffusers (see ../README.md): the pipeline base class."""
import tiny_models as _tm


class DiffusionPipeline(_tm.TinyPipeline):
    """Pipelines expose their parts as `components`, the modules among them as attributes (the
    constructor and `components` of the tiny pipelines, which are written the same way)."""
