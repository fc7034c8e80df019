"""One training run as the report collects it (`dsl.Collected`): the summary the run's training task wrote,
checked against the run the DAG asked for, and written as the run's record with its headline figures.

The DAG picks each run's training component by its target (`dsl.If`/`dsl.Elif`/`dsl.Else`) and hands on the
summary of the branch that ran (`dsl.OneOf`); the record step is where a summary of another run or another
shape stops the pipeline, naming both, before the report mixes it into a target's statistics. The record's
metadata (target, run, hardware seen, per-task log-loss and AUC, examples per second, wall time) shows each
collected run in the Vertex console's lineage without opening the report.
"""

from __future__ import annotations

from pathlib import Path

from components.contracts.run_summary import RunSummary


class RunMismatch(ValueError):
    """The summary belongs to another training run than the one the DAG recorded it for."""


def record_training_run(summary_path: str | Path, target: str, run_index: int,
                        record_dir: str | Path) -> dict[str, str | int | float]:
    """Read and validate the run's `RunSummary`, check it is `target`'s run `run_index` (from 0), write it to
    `record_dir` (what the report reads); returns the record's metadata."""
    run = RunSummary.read(summary_path)  # a summary of another shape fails naming the field
    if (run.target, run.run_index) != (target, run_index):
        raise RunMismatch(f"the training summary at {summary_path} is of {run.target} run {run.run_index + 1}, "
                          f"but the DAG recorded it as {target} run {run_index + 1}")
    run.write(record_dir)
    metadata: dict[str, str | int | float] = {
        "target": run.target, "target_kind": run.target_kind, "run_index": run.run_index, "seed": run.seed,
        "device_kind": run.hardware.device_kind, "device_count": run.hardware.device_count,
        "examples_per_second": run.examples_per_second, "wall_time_seconds": run.wall_time_seconds,
    }
    for task, figures in run.metrics.items():
        metadata[f"{task}_logloss"] = figures.logloss
        metadata[f"{task}_auc"] = figures.auc
    return metadata
