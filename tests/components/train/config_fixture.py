"""Small configs for trainer tests: the embedded default with a few values changed."""

from __future__ import annotations

from configs import AdrankConfig, load_config


def small_config(user_id_rows: int = 50, **training) -> AdrankConfig:
    config = load_config(None)
    values = config.model_dump()
    values["training"].update({"global_batch_size": 256, "epochs": 2, "min_train_steps": 0, "steps_per_execution": 4,
                               "input_capacity_seconds": 0.25, **training})  # the input capacity, stall and step
    # rate are measured all the same (3 paired rounds at least, whatever the budget), in 0.25 s budgets, not 2 s;
    # the tests size their own steps (the small-split rule, min_train_steps, would raise their epochs)
    # the fixture's examples give user_id 50 table rows (fixture_data.FEATURES; fixture_transform: 30); the trainer
    # checks that the config agrees
    assert values["features"][0]["name"] == "user_id" and values["features"][0]["encoding"] == "hash"
    values["features"][0]["hash_buckets"] = user_id_rows
    return AdrankConfig.model_validate(values)


def with_targets(config: AdrankConfig, *targets: dict) -> AdrankConfig:
    values = config.model_dump()
    values["targets"] = list(targets)
    names = [target["name"] for target in targets]
    if values.get("retraining", {}).get("target") not in names:  # the production target must stay one of them
        values["retraining"] = {**values.get("retraining", {}), "target": names[0]}
    return AdrankConfig.model_validate(values)
