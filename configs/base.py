"""The base every config section derives from: unknown keys are errors, values are immutable, numbers finite; and
the one canonical JSON that config slices, config hashes, block layouts and cache keys are written in."""

import json

from pydantic import BaseModel, ConfigDict


def canonical_json(value: object) -> str:
    """Compact JSON with sorted keys: equal values give equal text (equal compiled YAML, hashes and cache keys)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class StrictModel(BaseModel):
    """A config section: extra keys fail validation, floats must be finite (no `.inf`/`.nan`), and a
    loaded config cannot be mutated."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
