"""The compiled `PipelineSpec` as the Vertex backend reads it: root DAG tasks, their components and executors,
and the order they run in.

Only what `adrank compile --backend vertex` produces is accepted; anything the executor cannot run the way
Vertex would (nested DAGs, loops, `dsl.Collected`, conditions, importers) is refused by name at load time,
before any task starts, rather than run differently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml


class UnsupportedSpec(ValueError):
    """The spec uses a construct this executor does not run; says which task and construct."""


@dataclass(frozen=True)
class SpecTask:
    """One task of the root DAG: its inputs as compiled, and the executor it runs."""

    name: str
    display_name: str
    component_name: str
    component: dict
    container: dict
    inputs: dict  # {"parameters": {...}, "artifacts": {...}} as in the spec
    dependent_tasks: tuple[str, ...]

    @property
    def upstream(self) -> set[str]:
        """Every task this one waits for: `dependentTasks` and the producers of its inputs."""
        producers = set(self.dependent_tasks)
        for kind, key in (("parameters", "taskOutputParameter"), ("artifacts", "taskOutputArtifact")):
            for spec in self.inputs.get(kind, {}).values():
                if key in spec:
                    producers.add(spec[key]["producerTask"])
        return producers


@dataclass
class PipelineSpec:
    name: str
    pipeline_root: str | None
    tasks: dict[str, SpecTask]
    root_parameters: dict[str, dict] = field(default_factory=dict)
    source: Path | None = None

    def order(self) -> list[SpecTask]:
        """Tasks in a topological order; ties broken by name, so every run walks the DAG the same way."""
        pending = {name: set(task.upstream) for name, task in self.tasks.items()}
        for name, upstream in pending.items():
            unknown = upstream - set(self.tasks)
            if unknown:
                raise UnsupportedSpec(f"task '{name}' depends on tasks not in the root DAG: {sorted(unknown)}")
        ordered: list[SpecTask] = []
        done: set[str] = set()
        while pending:
            ready = sorted(name for name, upstream in pending.items() if upstream <= done)
            if not ready:
                raise UnsupportedSpec(f"the DAG has a cycle among {sorted(pending)}")
            for name in ready:
                ordered.append(self.tasks[name])
                done.add(name)
                del pending[name]
        return ordered


def load_pipeline_spec(path: Path) -> PipelineSpec:
    documents = [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
    if not documents or "root" not in documents[0]:
        raise UnsupportedSpec(f"{path}: not a compiled KFP PipelineSpec (no 'root')")
    spec = documents[0]
    platform_specs = documents[1:]
    if platform_specs:
        raise UnsupportedSpec(f"{path}: platform-specific sections (kubernetes/vertex platform specs) are not run")
    components = spec.get("components", {})
    executors = spec.get("deploymentSpec", {}).get("executors", {})
    root = spec["root"]
    tasks: dict[str, SpecTask] = {}
    for name, task in root.get("dag", {}).get("tasks", {}).items():
        tasks[name] = _task(name, task, components, executors)
    return PipelineSpec(
        name=spec.get("pipelineInfo", {}).get("name", "pipeline"),
        pipeline_root=spec.get("defaultPipelineRoot"),
        tasks=tasks,
        root_parameters=root.get("inputDefinitions", {}).get("parameters", {}),
        source=Path(path),
    )


def _task(name: str, task: dict, components: dict, executors: dict) -> SpecTask:
    for key, construct in (("iteratorPolicy", "a loop (dsl.ParallelFor)"), ("parameterIterator", "a loop"),
                           ("artifactIterator", "a loop"), ("triggerPolicy", "a condition (dsl.If)")):
        if key in task:
            raise UnsupportedSpec(f"task '{name}' uses {construct}, which this executor does not run")
    component_name = task["componentRef"]["name"]
    component = components.get(component_name)
    if component is None:
        raise UnsupportedSpec(f"task '{name}' refers to component '{component_name}', which the spec lacks")
    if "dag" in component:
        raise UnsupportedSpec(f"task '{name}' runs a nested pipeline ('{component_name}'), which is not supported")
    executor = executors.get(component.get("executorLabel", ""))
    if executor is None or "container" not in executor:
        kind = next(iter(executor), "no executor") if executor else "no executor"
        raise UnsupportedSpec(f"task '{name}': component '{component_name}' has {kind}, not a container")
    for kind in ("parameters", "artifacts"):
        for input_name, input_spec in task.get("inputs", {}).get(kind, {}).items():
            if "producerSubtask" in str(input_spec):
                raise UnsupportedSpec(f"task '{name}' input '{input_name}' is collected from a sub-DAG (dsl.Collected)")
    return SpecTask(
        name=name,
        display_name=task.get("taskInfo", {}).get("name", name),
        component_name=component_name,
        component=component,
        container=executor["container"],
        inputs=task.get("inputs", {}),
        dependent_tasks=tuple(task.get("dependentTasks", ())),
    )
