"""Which pipeline does what: the benchmark (targets × runs → report, now and then) and the retraining pipeline a
schedule runs every day (one production target, trained once, then promoted). Both come from the one DAG
definition (`pipelines.ranking`); these sections say how they differ."""

from __future__ import annotations

from pydantic import Field

from configs.base import StrictModel


class BenchmarkConfig(StrictModel):
    """The benchmark pipeline compares hardware; it promotes nothing unless asked (comparing five configs in one
    runs directory used to promote each of them in turn into one registry, worse ones included)."""

    promote: bool = Field(
        False, description="promote the benchmark's best run after the report (with promotion.enabled)",
    )


class RetrainingConfig(StrictModel):
    """The retraining pipeline: preprocess the day's window → train `target` once (warm from the champion with
    `training.warm_start: champion`) → report on that run → promote (with promotion.enabled)."""

    target: str | None = Field(
        None, description="the production target, one of `targets[].name`; the benchmark report names a candidate",
    )
    run_index: int = Field(
        0, ge=0, le=99, description="which run's seed the daily training uses (the benchmark's run k has seed "
        "seed + k)",
    )
