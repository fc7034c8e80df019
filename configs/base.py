"""The base every config section derives from: unknown keys are errors, values are immutable, numbers finite."""

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A config section: extra keys fail validation, floats must be finite (no `.inf`/`.nan`), and a
    loaded config cannot be mutated."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
