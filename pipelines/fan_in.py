"""Fan-out and fan-in with KFP's own idiom: one `dsl.ParallelFor` over the training runs, `dsl.Collected` into
the report.

The loop's items are the training runs (target, run index) of the plan, as a pipeline input parameter
(`training_runs`, its default compiled from the config): KFP 2.16's compiler accepts a `dsl.If` on an item's
field inside a loop only when the items come from a pipeline input (with items compiled into the loop it fails
with "component_input_parameter: pipelinechannel--loop-item-param-1 not found"). Inside the loop the item's
`target` chooses that target's training component (`dsl.If`/`dsl.Elif`/`dsl.Else`: on Vertex each target is its
own CustomJob with its machines, fixed at compile time), `dsl.OneOf` takes the summary of the branch that ran,
and the `record run` step checks it and produces the run's record; the report takes every record as one
`Input[List[Artifact]]` (`dsl.Collected`), a signature that no longer depends on the config.

Item fields are strings in KFP (a loop item's field is typed STRING), so the run index travels as its decimal
text. `display_name` names the iteration on the local engine's console (`train · cpu · run 1`); no step reads it.
"""

from __future__ import annotations

TRAINING_RUNS = "training_runs"  # the pipeline input the loop iterates over (a parameter of ranking.py's pipelines)


def training_run_items(runs: list[tuple[str, int]]) -> list[dict[str, str]]:
    """The loop's items for the training runs `(target, run_index)`, in DAG order."""
    items = [{"target": target, "run_index": str(run_index), "display_name": run_label(target, run_index)}
             for target, run_index in runs]
    if len({(item["target"], item["run_index"]) for item in items}) != len(items):
        raise ValueError(f"a training run is listed twice: {runs}")
    return items


def run_label(target: str, run_index: int) -> str:
    """How a training run is named to people: `cpu · run 1`."""
    return f"{target} · run {run_index + 1}"
