"""Fan-in without `dsl.Collected`: the report step has one input per upstream training task.

KFP 2.16 cannot fan targets with different machines into one `dsl.Collected` input (docs/spec_executor.md,
"Fan-in"), so the DAG is fanned out with a static
Python loop and fanned in by a component whose signature has one `Input[Artifact]` per training run,
named after its target and run (`summary_cpu_run_1`), and one `Output[Metrics]` per target
(`metrics_cpu`). This module names those inputs and outputs; `pipelines.steps.report_function` writes
the report component with them, and `pipelines.ranking` wires each training task to its input.
"""

from __future__ import annotations


def _identifier(target: str) -> str:
    return target.replace("-", "_")  # target names are [a-z][a-z0-9-]*, so this is one-to-one


def summary_input_name(target: str, run_index: int) -> str:
    """The report input fed by `train · <target> · run <run_index + 1>`."""
    return f"summary_{_identifier(target)}_run_{run_index + 1}"


def target_metrics_name(target: str) -> str:
    """The report's Metrics output for one target (its runs' figures, for the Vertex UI)."""
    return f"metrics_{_identifier(target)}"
