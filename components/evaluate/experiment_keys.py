"""The keys figures have in a Vertex Experiment row, unique per target, run and task.

The SDK builds a pipeline run's row by merging the metadata of every `system.Metrics` artifact of the run into
one dict (`PipelineJob._query_experiment_row`: `row.metrics.update(artifact.metadata)`), so two artifacts with
the same key keep one arbitrary value. Every training task and every per-target report artifact therefore names
its figures with the target (and run) they belong to:

    <target>/run<n>/<task>/logloss        a training run's figure of one task (run numbers from 1, as displayed)
    <target>/run<n>/examples_per_second   a training run's figure of no task
    <target>/<task>/logloss_mean          the report's aggregate over a target's runs, of one task
    <target>/examples_per_second_mean     the report's aggregate of no task

The report's run-level figures (`best_logloss`, ...) and the promotion figures (`challenger_logloss`, ...) come
from one task each, so their keys are unique as they are; a daily Experiment charts them across days.
"""

from __future__ import annotations

import re
from typing import Any

SEPARATOR = "/"
RUN_PREFIX = "run"
TRAINING_KEY = re.compile(r"^(?P<target>[^/]+)/run(?P<run>\d+)/(?:(?P<task>[^/]+)/)?(?P<figure>[^/]+)$")


def training_key(target: str, run_index: int, figure: str, task: str | None = None) -> str:
    """`cpu/run1/engagement/logloss` (`run_index` from 0, shown from 1), or `cpu/run1/examples_per_second`."""
    return SEPARATOR.join([target, f"{RUN_PREFIX}{run_index + 1}", *([task] if task else []), figure])


def training_figures(target: str, run_index: int, run: Any) -> dict[str, float]:
    """Key → value of what a training task logs: per task log-loss and AUC, examples per second and devices.
    `run`: the run's `components.contracts.run_summary.RunSummary`."""
    figures: dict[str, float] = {}
    for task, values in run.metrics.items():
        figures[training_key(target, run_index, "logloss", task)] = values.logloss
        figures[training_key(target, run_index, "auc", task)] = values.auc
    figures[training_key(target, run_index, "examples_per_second")] = run.examples_per_second
    figures[training_key(target, run_index, "devices")] = run.hardware.device_count
    return figures


def target_key(target: str, figure: str, task: str | None = None) -> str:
    """`cpu/engagement/logloss_mean`, or `cpu/examples_per_second_mean` for a figure of no task."""
    return SEPARATOR.join([target, *([task] if task else []), figure])


def training_figure(key: str) -> tuple[str, int, str | None, str] | None:
    """(target, run index from 0, task or None, figure) of a training key; None for any other key."""
    match = TRAINING_KEY.match(key)
    if match is None:
        return None
    return match["target"], int(match["run"]) - 1, match["task"], match["figure"]
