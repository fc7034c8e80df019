"""The run parameters a Vertex pipeline run records: what an Experiment row compares runs by.

The SDK builds a pipeline run's Experiment row with its parameters from the run's `system.Run` execution, whose
metadata holds the pipeline's inputs as `input:<name>` (`PipelineJob._query_experiment_row`); values compiled into
the steps' config slices never appear there. So the Vertex DAG declares these pipeline inputs (the parameters of
`pipelines.ranking`'s Vertex pipeline), with the config's values as defaults: the config hash, the targets, the batch size, the learning rate, the log window and the runs
per target. No step reads them (every step reads its config slice); `adrank submit --param` refuses to set them,
since a value other than the config's would record a run that did not happen.
"""

from __future__ import annotations

from configs import AdrankConfig, config_hash

# The names `run_parameters` records (a value passed for one would be recorded but read by no step).
RECORDED_ONLY = ("config_hash", "targets", "model", "global_batch_size", "learning_rate", "window_days",
                 "runs_per_target")


def run_parameters(config: AdrankConfig) -> dict[str, str | int | float]:
    """Name → value of the parameters a run records (a scalar each: an Experiment row holds scalars)."""
    parameters: dict[str, str | int | float] = {
        "config_hash": config_hash(config),
        "targets": ",".join(target.name for target in config.targets),
        "model": config.model.kind,
        "global_batch_size": config.training.global_batch_size,
        "learning_rate": config.training.learning_rate,
        "window_days": config.logs.lookback_days or 0,
        "runs_per_target": config.runs_per_target,
    }
    assert tuple(parameters) == RECORDED_ONLY
    return parameters
