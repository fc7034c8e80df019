"""A task's `ExecutorInput`, built as the Vertex driver builds it, and the outputs read back after it ran.

    inputs.parameterValues   compiled constants (pipeline placeholders in them resolved), upstream output
                             parameters, pipeline parameters, then the component's defaults
    inputs.artifacts         the upstream task's output artifacts (URI and metadata as it left them)
    outputs.artifacts        one artifact per output, URI `<task root>/<output name>` under the pipeline root
    outputs.parameters       a file per output parameter (the launcher writes `gcp_resources` there)
    outputs.outputFile       `<task root>/executor_output.json`, which the KFP executor writes

Vertex gives `outputFile` as a `/gcs/` path (the KFP executor's own comment on gcsfuse says so for custom
jobs); here it is the local directory that path maps to, since only KFP's artifact paths are mapped.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ops.spec_executor.job_context import PipelineJobContext
from ops.spec_executor.pipeline_spec import ITEM_FIELD_SELECTOR, SpecTask
from ops.spec_executor.placeholders import PLACEHOLDER, BrokenPlaceholder
from ops.spec_executor.storage import CloudStorageRoot

EXECUTOR_OUTPUT_FILE = "executor_output.json"


@dataclass
class TaskOutputs:
    """What a finished task left for its consumers."""

    artifacts: dict[str, list[dict]] = field(default_factory=dict)
    parameters: dict[str, object] = field(default_factory=dict)


class MissingInput(ValueError):
    """A required input has no value: its producer did not run or did not write it."""


def with_pipeline_values(value, pipeline_values: dict[str, str], task: str):
    """`value` with every `{{$.pipeline_*}}` placeholder in its strings resolved (lists and dicts walked)."""
    if isinstance(value, list):
        return [with_pipeline_values(item, pipeline_values, task) for item in value]
    if isinstance(value, dict):
        return {key: with_pipeline_values(item, pipeline_values, task) for key, item in value.items()}
    if not isinstance(value, str):
        return value

    def pipeline_value(match: re.Match) -> str:
        body = match.group("body")
        if not body.startswith(".pipeline_"):
            return match.group(0)  # the executor input or an input: resolved in the command
        if body[1:] not in pipeline_values:
            raise BrokenPlaceholder(f"task '{task}': unknown pipeline placeholder {match.group(0)}")
        return pipeline_values[body[1:]]

    return PLACEHOLDER.sub(pipeline_value, value)


def typed(value, parameter_type: str):
    """A compiled value as its declared type (YAML and JSON carry every number as a double)."""
    if parameter_type == "NUMBER_INTEGER" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass
class DagScope:
    """What the tasks of one DAG take their inputs from: the DAG's own inputs (the pipeline's parameters at
    the root), the outputs its finished tasks left, and their final states for exit handlers."""

    parameters: dict[str, object] = field(default_factory=dict)
    artifacts: dict[str, list[dict]] = field(default_factory=dict)
    outputs: dict[str, TaskOutputs] = field(default_factory=dict)
    final_status: dict[str, dict] = field(default_factory=dict)  # task → PipelineTaskFinalStatus as JSON


def input_parameters(task: SpecTask, pipeline_values: dict[str, str], scope: DagScope,
                     given: tuple[str, ...] = ()) -> dict[str, object]:
    """The task's input parameter values: compiled constants (pipeline placeholders resolved), upstream
    outputs, the DAG's inputs, final statuses, then the component's defaults. Names in `given` (a loop's
    item input) are left to the caller."""
    definitions = task.component.get("inputDefinitions", {})
    parameters: dict[str, object] = {}
    for name, definition in definitions.get("parameters", {}).items():
        if name in given:
            continue
        compiled = task.inputs.get("parameters", {}).get(name)
        if compiled is not None:
            value = _parameter_value(task, name, compiled, scope)
            selector = compiled.get("parameterExpressionSelector")
            if selector is not None:
                value = _item_field(task, name, value, selector)
        elif "defaultValue" in definition:
            value = definition["defaultValue"]
        elif definition.get("isOptional"):
            continue
        else:
            raise MissingInput(f"task '{task.name}': required parameter '{name}' has no value in the spec")
        parameters[name] = typed(with_pipeline_values(value, pipeline_values, task.name),
                                 definition.get("parameterType", ""))
    unknown = set(task.inputs.get("parameters", {})) - set(definitions.get("parameters", {}))
    if unknown:
        raise MissingInput(f"task '{task.name}' passes parameters its component does not take: {sorted(unknown)}")
    return parameters


def input_artifacts(task: SpecTask, scope: DagScope) -> dict[str, list[dict]]:
    """The task's input artifacts: an upstream task's output or one of the DAG's own input artifacts."""
    artifacts: dict[str, list[dict]] = {}
    for name, definition in task.component.get("inputDefinitions", {}).get("artifacts", {}).items():
        compiled = task.inputs.get("artifacts", {}).get(name)
        if compiled is None:
            if definition.get("isOptional"):
                continue
            raise MissingInput(f"task '{task.name}': required artifact input '{name}' is not connected")
        if "componentInputArtifact" in compiled:
            key = compiled["componentInputArtifact"]
            if not scope.artifacts.get(key):
                raise MissingInput(f"task '{task.name}': input '{name}' expects the DAG's input artifact '{key}', "
                                   "which has none")
            artifacts[name] = scope.artifacts[key]
            continue
        source = compiled.get("taskOutputArtifact")
        if source is None:
            raise MissingInput(f"task '{task.name}': artifact input '{name}' is not a task output (importers and "
                               "pipeline artifact inputs are not supported)")
        produced = scope.outputs.get(source["producerTask"], TaskOutputs()).artifacts.get(source["outputArtifactKey"])
        if not produced:
            raise MissingInput(f"task '{task.name}': input '{name}' expects output '{source['outputArtifactKey']}' "
                               f"of task '{source['producerTask']}', which has none")
        artifacts[name] = produced
    return artifacts


def build_executor_input(
    task: SpecTask,
    task_path: str,
    context: PipelineJobContext,
    storage: CloudStorageRoot,
    scope: DagScope,
    local_dir: Path,
) -> dict:
    """`task_path` names the task within the job (`outer/inner` for a task of a nested DAG)."""
    parameters = input_parameters(task, context.pipeline_placeholders(task_path), scope)
    artifacts = {name: {"artifacts": produced} for name, produced in input_artifacts(task, scope).items()}
    task_root = context.task_root(task_path)
    outputs = task.component.get("outputDefinitions", {})
    output_artifacts = {
        name: {"artifacts": [{
            "name": f"projects/{context.project}/locations/{context.location}/metadataStores/default/artifacts/"
                    f"{uuid.uuid4().hex}",
            "type": definition["artifactType"],
            "uri": f"{task_root}/{name}",
            "metadata": {},
        }]}
        for name, definition in outputs.get("artifacts", {}).items()
    }
    output_parameters = {name: {"outputFile": str(local_dir / "outputs" / name)}
                         for name in outputs.get("parameters", {})}
    return {
        "inputs": {"parameterValues": parameters, "artifacts": artifacts},
        "outputs": {
            "artifacts": output_artifacts,
            "parameters": output_parameters,
            "outputFile": str(storage.local_path(f"{task_root}/{EXECUTOR_OUTPUT_FILE}")),
        },
    }


def _parameter_value(task: SpecTask, name: str, compiled: dict, scope: DagScope):
    if "runtimeValue" in compiled:
        return compiled["runtimeValue"]["constant"]
    if "taskOutputParameter" in compiled:
        source = compiled["taskOutputParameter"]
        produced = scope.outputs.get(source["producerTask"], TaskOutputs()).parameters
        if source["outputParameterKey"] not in produced:
            raise MissingInput(f"task '{task.name}': parameter '{name}' expects output "
                               f"'{source['outputParameterKey']}' of task '{source['producerTask']}', which has none")
        return produced[source["outputParameterKey"]]
    if "componentInputParameter" in compiled:
        key = compiled["componentInputParameter"]
        if key not in scope.parameters:
            raise MissingInput(f"task '{task.name}': pipeline parameter '{key}' has no value")
        return scope.parameters[key]
    if "taskFinalStatus" in compiled:
        producer = compiled["taskFinalStatus"]["producerTask"]
        if producer not in scope.final_status:
            raise MissingInput(f"task '{task.name}': parameter '{name}' expects the final status of task "
                               f"'{producer}', which has not ended")
        return scope.final_status[producer]
    raise MissingInput(f"task '{task.name}': parameter '{name}' has an input form this executor does not run: "
                       f"{sorted(compiled)}")


def _item_field(task: SpecTask, name: str, value, selector: str):
    """`parseJson(string_value)["a"]`: field `a` of a ParallelFor item that is a dict (or its JSON)."""
    match = ITEM_FIELD_SELECTOR.match(selector)
    assert match is not None  # other expressions are refused at load
    item = json.loads(value) if isinstance(value, str) else value
    if not isinstance(item, dict) or match.group("field") not in item:
        raise MissingInput(f"task '{task.name}': parameter '{name}' selects field '{match.group('field')}' of "
                           f"{value!r}, which has none")
    return item[match.group("field")]


def loop_items(task: SpecTask, parameters: dict[str, object]) -> list:
    """The items a ParallelFor task iterates over: the compiled list, or the input parameter it names."""
    assert task.loop is not None
    if task.loop.raw_items is not None:
        items = json.loads(task.loop.raw_items)
    else:
        items = parameters.get(task.loop.items_parameter or "")
        if isinstance(items, str):
            try:
                items = json.loads(items)
            except ValueError:
                pass
    if not isinstance(items, list):
        raise MissingInput(f"task '{task.name}': a loop (dsl.ParallelFor) over {items!r}, which is not a list")
    return items


def collected_outputs(task: SpecTask, iterations: list[DagScope]) -> TaskOutputs:
    """A loop's outputs as `dsl.Collected` consumers get them: each `dag.outputs` parameter as the list of its
    iterations' values, each artifact output as the list of their artifacts, in item order."""
    outputs = task.dag.outputs if task.dag else {}
    values: dict[str, list] = {name: [] for name in outputs.get("parameters", {})}
    artifacts: dict[str, list[dict]] = {name: [] for name in outputs.get("artifacts", {})}
    for inner in iterations:
        one = dag_outputs(task, inner)
        for name, collected in values.items():
            if name in one.parameters:
                collected.append(one.parameters[name])
        for name, collected_artifacts in artifacts.items():
            collected_artifacts.extend(one.artifacts.get(name, []))
    return TaskOutputs(artifacts=artifacts, parameters=dict(values))


def dag_outputs(task: SpecTask, inner: DagScope) -> TaskOutputs:
    """What a DAG task surfaces to its consumers: `dag.outputs`, each taken from one of its inner tasks, or
    (`dsl.OneOf`: several selectors) from the first of the listed tasks that produced it — the branch of a
    `dsl.If`/`Elif`/`Else` that ran. An output no listed task produced is absent (its consumer fails naming it)."""
    assert task.dag is not None
    selected = TaskOutputs()
    for name, spec in task.dag.outputs.get("parameters", {}).items():
        sources = ([spec["valueFromParameter"]] if "valueFromParameter" in spec
                   else spec["valueFromOneof"]["parameterSelectors"])
        for source in sources:
            produced = inner.outputs.get(source["producerSubtask"], TaskOutputs()).parameters
            if source["outputParameterKey"] in produced:
                selected.parameters[name] = produced[source["outputParameterKey"]]
                break
    for name, spec in task.dag.outputs.get("artifacts", {}).items():
        for source in spec["artifactSelectors"]:
            produced_artifacts = inner.outputs.get(source["producerSubtask"], TaskOutputs()).artifacts
            if produced_artifacts.get(source["outputArtifactKey"]):
                selected.artifacts[name] = produced_artifacts[source["outputArtifactKey"]]
                break
    return selected


def read_task_outputs(executor_input: dict, reported_uri=lambda uri: uri) -> TaskOutputs:
    """The outputs as the driver records them: executor_output.json overrides the URIs and metadata it names
    (`reported_uri` turns a URI as the task saw it back into the job's); output parameters come from their files
    or from executor_output's parameterValues."""
    outputs = executor_input["outputs"]
    artifacts = {name: [dict(a) for a in spec["artifacts"]] for name, spec in outputs["artifacts"].items()}
    parameters: dict[str, object] = {}
    output_file = Path(outputs["outputFile"])
    if output_file.exists():
        written = json.loads(output_file.read_text() or "{}")
        for name, spec in written.get("artifacts", {}).items():
            if name in artifacts:
                for declared, reported in zip(artifacts[name], spec.get("artifacts", [])):
                    declared["metadata"] = reported.get("metadata", declared["metadata"])
                    declared["uri"] = reported_uri(reported.get("uri")) if reported.get("uri") else declared["uri"]
        parameters.update(written.get("parameterValues", {}))
    for name, spec in outputs.get("parameters", {}).items():
        path = Path(spec["outputFile"])
        if name not in parameters and path.exists():
            parameters[name] = path.read_text()
    return TaskOutputs(artifacts=artifacts, parameters=parameters)
