"""Vertex Experiments, on this machine: the `join experiment` task has no experiment to join here.

On Vertex the DAG's first task puts the run into `vertex.experiment` (components.experiment.join); no Vertex
endpoint is reachable here, so the executor resolves the task's inputs (its placeholders are checked like any
task's) and records it as a stand-in instead of starting it. No other task reads its outputs.
"""

from __future__ import annotations

JOIN_FUNCTION = "join_experiment_step"


def is_experiment_join(container: dict) -> bool:
    args = container.get("args", [])
    return "--function_to_execute" in args and JOIN_FUNCTION in args
