"""The run parameters a Vertex pipeline run records: what an Experiment row compares runs by.

The SDK builds a pipeline run's Experiment row with its parameters from the run's `system.Run` execution, whose
metadata holds the pipeline's inputs as `input:<name>` (`PipelineJob._query_experiment_row`); values compiled into
the steps' config slices never appear there. So the Vertex DAG declares these pipeline inputs, with the config's
values as defaults: the config hash, the targets, the batch size, the learning rate, the log window and the runs
per target. No step reads them (every step reads its config slice); `adrank submit --param` refuses to set them,
since a value other than the config's would record a run that did not happen.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

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


def taking_run_parameters(body: Callable[..., None], config: AdrankConfig, read: dict[str, Any]) -> Callable:
    """A pipeline function whose inputs are `window_end` (str, default "": the run's scheduled time decides), the
    inputs in `read` (name → default; steps read them, e.g. the training runs the loop iterates over) and the run
    parameters (defaults: the config's values), and that builds `body(window_end, *read)`'s DAG; KFP reads the
    inputs from the function's signature and passes them in its order."""

    def pipeline(window_end, *rest):  # the channels KFP passes; no step consumes the recorded ones
        body(window_end, *rest[:len(read)])

    pipeline.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter("window_end", inspect.Parameter.POSITIONAL_OR_KEYWORD, default="", annotation=str),
        *(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=value, annotation=type(value))
          for name, value in {**read, **run_parameters(config)}.items())])
    pipeline.__name__ = body.__name__
    pipeline.__doc__ = body.__doc__
    return pipeline
