"""The base every config section derives from: unknown keys are errors, values are immutable."""

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A config section: extra keys fail validation and a loaded config cannot be mutated."""

    model_config = ConfigDict(extra="forbid", frozen=True)
