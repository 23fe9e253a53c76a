"""The engine's well-known stages (include/vxperf/stages.h), read from the extension: the names
components are timed under, which of them are priced, and the training phase of each one's calls.
Whether any other stage name is priced is the extension's is_priced_stage()."""
from typing import NamedTuple

from . import _ext


class Stage(NamedTuple):
    """A row of the stage table: its name, id, whether it is priced and its calls' phase."""

    name: str
    id: int
    priced: bool
    phase: str


# In the engine's order, one name per row of its table (KnownStage): a row's index is its id.
STAGES = tuple(Stage(*row) for row in _ext.stages())
TRANSFORMER, TRANSFORMER_2, TEXT_ENCODER, VAE_ENCODE, VAE_DECODE, VISION, AUX = STAGES
# The priced stages: the pipeline components a FLOPs price is read from, by name.
PRICED = tuple(stage.name for stage in STAGES if stage.priced)
