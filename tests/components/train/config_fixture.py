"""Small configs for trainer tests: the embedded default with a few values changed."""

from __future__ import annotations

from configs import AdrankConfig, load_config


def small_config(**training) -> AdrankConfig:
    config = load_config(None)
    values = config.model_dump()
    values["training"].update({"global_batch_size": 256, "epochs": 2, "steps_per_execution": 4, **training})
    return AdrankConfig.model_validate(values)


def with_targets(config: AdrankConfig, *targets: dict) -> AdrankConfig:
    values = config.model_dump()
    values["targets"] = list(targets)
    return AdrankConfig.model_validate(values)
