"""The compiled `PipelineSpec` as the Vertex backend reads it: the root DAG and the DAGs nested in it, each
task's component and executor, its caching, retry and trigger policies, and the order tasks run in.

A task runs either a container (`deploymentSpec.executors`) or a DAG component (a nested pipeline, or the
group `dsl.ExitHandler` compiles, a `dsl.ParallelFor`, a `dsl.If`/`Elif`/`Else` branch). A condition is read
here (`conditions.parse_condition`); a DAG output may select from several tasks (`dsl.OneOf`: the one that ran).
Anything the executor cannot run the way Vertex would (loops over artifacts, importers, a condition outside the
CEL subset KFP compiles) is refused by name at load time, before any task starts, rather than run differently. A file that is not readable YAML is refused in one line naming the file (`UnreadableSpec`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ops.spec_executor.conditions import Condition, UnsupportedCondition, parse_condition
from ops.spec_executor.task_retry_policy import BadRetryPolicy, RetryPolicy, retry_policy

ALL_UPSTREAM_TASKS_COMPLETED = "ALL_UPSTREAM_TASKS_COMPLETED"  # an exit handler's trigger
# the one CEL form the KFP compiler writes for a field of a ParallelFor item (`item.a`)
ITEM_FIELD_SELECTOR = re.compile(r'^parseJson\(string_value\)\["(?P<field>[^"]+)"\]$')


class UnsupportedSpec(ValueError):
    """The spec uses a construct this executor does not run; says which task and construct."""


class UnreadableSpec(UnsupportedSpec):
    """The file is not a YAML document this executor can read (syntax, a tab, binary bytes)."""


@dataclass(frozen=True)
class SpecTask:
    """One task of a DAG: its inputs as compiled, and the container or the inner DAG it runs."""

    name: str
    display_name: str
    component_name: str
    component: dict
    container: dict | None  # None for a DAG component
    inputs: dict  # {"parameters": {...}, "artifacts": {...}} as in the spec
    dependent_tasks: tuple[str, ...]
    dag: Dag | None = None
    enable_cache: bool = False  # cachingOptions.enableCache as compiled
    retry: RetryPolicy | None = None
    trigger_strategy: str = ""  # "" = all upstream tasks succeeded (the default)
    loop: ParameterLoop | None = None  # dsl.ParallelFor: the DAG runs once per item
    condition: Condition | None = None  # dsl.If/Elif/Else: the task runs only when it holds

    @property
    def upstream(self) -> set[str]:
        """Every task this one waits for: `dependentTasks`, the producers of its inputs, the task whose final
        status it receives."""
        producers = set(self.dependent_tasks)
        for kind, key in (("parameters", "taskOutputParameter"), ("artifacts", "taskOutputArtifact"),
                          ("parameters", "taskFinalStatus")):
            for spec in self.inputs.get(kind, {}).values():
                if key in spec:
                    producers.add(spec[key]["producerTask"])
        return producers

    @property
    def runs_after_failures(self) -> bool:
        """An exit handler: it runs once its upstream tasks are done, whether they failed or not."""
        return self.trigger_strategy == ALL_UPSTREAM_TASKS_COMPLETED


@dataclass(frozen=True)
class ParameterLoop:
    """A `parameterIterator`: the items (a JSON list compiled in, or one of the task's input parameters) and
    the inner DAG's input each item is given as."""

    item_input: str
    raw_items: str | None = None
    items_parameter: str | None = None


@dataclass(frozen=True)
class Dag:
    """The tasks of one DAG and how its outputs are taken from them (`dag.outputs`)."""

    tasks: dict[str, SpecTask]
    outputs: dict = field(default_factory=dict)

    def order(self) -> list[SpecTask]:
        """Tasks in a topological order; ties broken by name, so every run walks the DAG the same way."""
        pending = {name: set(task.upstream) for name, task in self.tasks.items()}
        for name, upstream in pending.items():
            unknown = upstream - set(self.tasks)
            if unknown:
                raise UnsupportedSpec(f"task '{name}' depends on tasks not in its DAG: {sorted(unknown)}")
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


@dataclass
class PipelineSpec:
    name: str
    pipeline_root: str | None
    root: Dag
    root_parameters: dict[str, dict] = field(default_factory=dict)
    source: Path | None = None

    @property
    def tasks(self) -> dict[str, SpecTask]:
        return self.root.tasks

    def order(self) -> list[SpecTask]:
        return self.root.order()


def planned_container_tasks(spec: PipelineSpec) -> int:
    """How many container tasks a run of `spec` starts at most, for a progress line: a loop's body once per item
    (its compiled items, or the default of the pipeline parameter it iterates over, passed down nested DAGs), of
    condition branches (which `dsl.If`/`Elif`/`Else` make exclusive) the largest; a task skipped or not run
    lowers the real count."""
    defaults = {name: definition.get("defaultValue") for name, definition in spec.root_parameters.items()}
    return _planned(spec.root, defaults)


def _planned(dag: Dag, parameters: dict) -> int:
    always, branches = 0, []
    for task in dag.tasks.values():
        inner = {name: parameters.get(compiled.get("componentInputParameter", ""))
                 for name, compiled in task.inputs.get("parameters", {}).items()}  # what a nested DAG is given
        count = 1 if task.dag is None else _planned(task.dag, inner)
        if task.loop is not None:
            count *= len(_planned_items(task, parameters))
        if task.condition is not None:
            branches.append(count)
        else:
            always += count
    return always + max(branches, default=0)


def _planned_items(task: SpecTask, parameters: dict) -> list:
    assert task.loop is not None
    if task.loop.raw_items is not None:
        items = json.loads(task.loop.raw_items)
    else:
        compiled = task.inputs.get("parameters", {}).get(task.loop.items_parameter or "", {})
        items = parameters.get(compiled.get("componentInputParameter", ""))
    return items if isinstance(items, list) else [None]


def load_pipeline_spec(path: Path) -> PipelineSpec:
    documents = _yaml_documents(Path(path))
    if not documents or not isinstance(documents[0], dict) or "root" not in documents[0]:
        raise UnsupportedSpec(f"{path}: not a compiled KFP PipelineSpec (no 'root')")
    spec = documents[0]
    if documents[1:]:
        raise UnsupportedSpec(f"{path}: platform-specific sections (kubernetes/vertex platform specs) are not run")
    components = spec.get("components", {})
    executors = spec.get("deploymentSpec", {}).get("executors", {})
    root = spec["root"]
    return PipelineSpec(
        name=spec.get("pipelineInfo", {}).get("name", "pipeline"),
        pipeline_root=spec.get("defaultPipelineRoot"),
        root=_dag(root.get("dag", {}), components, executors, within=()),
        root_parameters=root.get("inputDefinitions", {}).get("parameters", {}),
        source=Path(path),
    )


def _yaml_documents(path: Path) -> list:
    """The YAML documents of `path`; any reason it cannot be read is one line naming the file."""
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        raise UnreadableSpec(f"{path}: cannot be read ({error.strerror or error})") from None
    except UnicodeDecodeError as error:
        raise UnreadableSpec(f"{path}: not a YAML text file (byte {error.start} is not UTF-8; binary input?)") \
            from None
    if "\x00" in text:
        raise UnreadableSpec(f"{path}: not a YAML text file (it contains NUL bytes; binary input?)")
    try:
        return [d for d in yaml.safe_load_all(text) if d]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise UnreadableSpec(f"{path}: not valid YAML{where}: {problem}") from None


def _dag(dag: dict, components: dict, executors: dict, within: tuple[str, ...]) -> Dag:
    tasks = {name: _task(name, task, components, executors, within)
             for name, task in dag.get("tasks", {}).items()}
    return Dag(tasks=tasks, outputs=dag.get("outputs", {}))


def _task(name: str, task: dict, components: dict, executors: dict, within: tuple[str, ...]) -> SpecTask:
    if "artifactIterator" in task:
        raise UnsupportedSpec(f"task '{name}' uses a loop over artifacts (dsl.ParallelFor over a list of artifacts), "
                              "which this executor does not run")
    loop = _parameter_loop(name, task.get("parameterIterator"))
    for input_name, input_spec in task.get("inputs", {}).get("parameters", {}).items():
        selector = input_spec.get("parameterExpressionSelector")
        if selector is not None and not ITEM_FIELD_SELECTOR.match(selector):
            raise UnsupportedSpec(f"task '{name}' input '{input_name}' selects with the expression {selector!r}, "
                                  "which this executor does not evaluate")
    trigger = task.get("triggerPolicy", {})
    condition = _condition(name, trigger.get("condition"))
    component_name = task["componentRef"]["name"]
    component = components.get(component_name)
    if component is None:
        raise UnsupportedSpec(f"task '{name}' refers to component '{component_name}', which the spec lacks")
    if component_name in within:
        raise UnsupportedSpec(f"task '{name}': component '{component_name}' contains itself")
    dag = container = None
    if loop is not None and "dag" not in component:
        raise UnsupportedSpec(f"task '{name}' loops over a component that is not a DAG")
    if "dag" in component:
        dag = _dag(component["dag"], components, executors, within + (component_name,))
        for output, selector in component["dag"].get("outputs", {}).get("artifacts", {}).items():
            if not selector.get("artifactSelectors"):
                raise UnsupportedSpec(f"task '{name}': DAG output '{output}' selects from no task")
        for output, selector in component["dag"].get("outputs", {}).get("parameters", {}).items():
            if "valueFromParameter" not in selector and not selector.get("valueFromOneof", {}).get(
                    "parameterSelectors"):
                raise UnsupportedSpec(f"task '{name}': DAG output parameter '{output}' is taken in a form this "
                                      f"executor does not read: {sorted(selector)}")
    else:
        executor = executors.get(component.get("executorLabel", ""))
        if executor is None or "container" not in executor:
            kind = next(iter(executor), "no executor") if executor else "no executor"
            raise UnsupportedSpec(f"task '{name}': component '{component_name}' has {kind}, not a container")
        container = executor["container"]
    for kind in ("parameters", "artifacts"):
        for input_name, input_spec in task.get("inputs", {}).get(kind, {}).items():
            if "producerSubtask" in str(input_spec):
                raise UnsupportedSpec(f"task '{name}' input '{input_name}' is collected from a sub-DAG (dsl.Collected)")
    try:
        retry = retry_policy(name, task.get("retryPolicy"))
    except BadRetryPolicy as error:
        raise UnsupportedSpec(str(error)) from None
    return SpecTask(
        name=name,
        display_name=task.get("taskInfo", {}).get("name", name),
        component_name=component_name,
        component=component,
        container=container,
        inputs=task.get("inputs", {}),
        dependent_tasks=tuple(task.get("dependentTasks", ())),
        dag=dag,
        enable_cache=bool(task.get("cachingOptions", {}).get("enableCache", False)),
        retry=retry,
        trigger_strategy=trigger.get("strategy", ""),
        loop=loop,
        condition=condition,
    )


def _condition(name: str, expression: str | None) -> Condition | None:
    if not expression:
        return None
    try:
        return parse_condition(expression)
    except UnsupportedCondition as error:
        raise UnsupportedSpec(f"task '{name}': {error}") from None


def _parameter_loop(name: str, iterator: dict | None) -> ParameterLoop | None:
    if iterator is None:
        return None
    items = iterator.get("items", {})
    if "itemInput" not in iterator or not ("raw" in items or "inputParameter" in items):
        raise UnsupportedSpec(f"task '{name}': a loop (dsl.ParallelFor) whose items this executor does not read: "
                              f"{iterator}")
    return ParameterLoop(item_input=iterator["itemInput"], raw_items=items.get("raw"),
                         items_parameter=items.get("inputParameter"))
