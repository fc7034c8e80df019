"""The base of every JSON record one step hands to another (manifest, run summary, benchmark summary, promotion
decision, calibrator, replay series, run record): a field this adrank does not know is an error, never dropped.

A record read from an artifact fails loudly when it was written by a different schema instead of losing what it
does not understand. Unlike a config section (`configs.base.StrictModel`) a record may hold a non-finite figure
(an undefined ratio) and is built up by its step, so it is neither finite-only nor frozen; a record that must be
hashable adds `model_config = ConfigDict(frozen=True)`, which pydantic merges with this one.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Contract(BaseModel):
    """A record passed between steps: unknown keys are validation errors."""

    model_config = ConfigDict(extra="forbid")
