"""Stand-in for diffusers (see ../README.md): the pipeline base class."""


class DiffusionPipeline:
    """Pipelines expose their parts as `components`, the modules among them as attributes."""

    component_names = ()

    def __init__(self, **components):
        for name, value in components.items():
            setattr(self, name, value)

    @property
    def components(self):
        return {name: getattr(self, name) for name in self.component_names}
