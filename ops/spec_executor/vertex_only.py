"""Steps that only act on Vertex services with no stand-in here: resolved and checked, recorded, not started.

`join experiment` puts the run into `vertex.experiment` (components.experiment.membership) and `model version` labels
and aliases the Model Registry version the promotion registered (components.lineage.model_version); no Vertex
endpoint is reachable here, and the promotion step registers into a local registry (model_registry). The
executor resolves their inputs and placeholders like any task's and records the task with this stand-in; no
task reads their outputs.
"""

from __future__ import annotations

# the step function's name (the executor's --function_to_execute) → what Vertex does that is not done here
VERTEX_ONLY_STEPS = {
    "join_experiment_step": "Vertex Experiment: the run joins it on Vertex; there is none to join here",
    "model_version_step": "Vertex Model Registry version: labelled, aliased and linked on Vertex; the local "
                          "registry has no aliases",
}


def vertex_only_stand_in(container: dict) -> str | None:
    """What the task would do on Vertex, when it is one of `VERTEX_ONLY_STEPS`; None for any other task."""
    args = container.get("args", [])
    if "--function_to_execute" not in args:
        return None
    function = args[args.index("--function_to_execute") + 1] if args.index("--function_to_execute") + 1 < len(args) \
        else ""
    return VERTEX_ONLY_STEPS.get(function)
