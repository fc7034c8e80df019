"""What one run of a compiled pipeline is expected to cost, before anything is paid: every figure an estimate.

    training   for every training task: its target's `price_per_hour` (the whole machine set: chief, workers,
               parameter servers, accelerators) × `targets[].vertex.expected_hours` (1 h when unset, said so); a
               scaling sweep's point N (`configs.scaling`) at N times the price for 1/N of the hours
    Dataflow   (DataflowRunner) up to `preprocess.dataflow.max_workers` workers × the worker machine's price
               (`vertex.cost.dataflow_worker_price_per_hour`, else list prices, `pipelines.list_prices`) ×
               `vertex.cost.preprocess_expected_hours`: an upper bound, autoscaling may run fewer workers
    CPU steps  every other task of the run (resolve window, preprocess launcher, run directory and record run per
               training run, report, promotion, ...) on the machine its CPU and memory request gets, for
               `vertex.cost.step_expected_hours` each (the preprocess step for the preprocess hours)
    run fee    Vertex AI Pipelines' fee per run

Not priced: Dataflow Shuffle, Cloud Storage, network egress, Model Registry storage, and the custom-job launcher
each training task keeps while its job trains. The steps listed here are the tasks `pipelines.ranking` builds
(`tests/pipelines/test_run_cost.py` holds the two to the compiled spec).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from configs import AdrankConfig
from configs.vertex_catalog import compute_engine_shape
from pipelines import list_prices, placement
from pipelines.ranking import PipelineKind, training_plan


@dataclass(frozen=True)
class TrainingCost:
    target: str
    runs: int
    price_per_hour: float
    hours: float
    hours_configured: bool  # False: the 1-hour default of `expected_hours`
    scale_point: tuple[str, int] | None = None  # (the swept target, the point's factor): its hours are the target's / N

    @property
    def usd(self) -> float:
        return self.runs * self.price_per_hour * self.hours


@dataclass(frozen=True)
class DataflowCost:
    workers: int
    machine_type: str
    price_per_worker_hour: float | None  # None: the machine type has no list price here
    price_configured: bool
    hours: float
    hours_configured: bool

    @property
    def usd(self) -> float:
        return self.workers * (self.price_per_worker_hour or 0.0) * self.hours


@dataclass(frozen=True)
class StepCost:
    step: str
    count: int
    machine: str
    price_per_hour: float
    hours: float
    hours_configured: bool

    @property
    def usd(self) -> float:
        return self.count * self.price_per_hour * self.hours


@dataclass(frozen=True)
class RunCost:
    pipeline: PipelineKind
    training: list[TrainingCost]
    dataflow: DataflowCost | None = None
    steps: list[StepCost] = field(default_factory=list)
    run_fee: float = list_prices.PIPELINE_RUN_FEE

    @property
    def training_usd(self) -> float:
        return sum(line.usd for line in self.training)

    @property
    def steps_usd(self) -> float:
        return sum(line.usd for line in self.steps)

    @property
    def usd(self) -> float:
        return self.training_usd + (self.dataflow.usd if self.dataflow else 0.0) + self.steps_usd + self.run_fee

    @property
    def training_runs(self) -> int:
        return sum(line.runs for line in self.training)

    def describe(self) -> list[str]:
        """The lines `adrank compile`, `submit` and `schedule create|update` print."""
        parts = [f"training ${self.training_usd:,.2f}"]
        if self.dataflow is not None:
            parts.append(f"Dataflow up to ${self.dataflow.usd:,.2f}")
        parts += [f"CPU steps ${self.steps_usd:,.2f}", f"run fee ${self.run_fee:,.2f}"]
        lines = [f"estimated cost of one {self.pipeline} run: ${self.usd:,.2f} ({', '.join(parts)}; every figure "
                 "an estimate)"]
        for line in self.training:
            default = "" if line.hours_configured else " (1 h default: set vertex.expected_hours)"
            if line.scale_point is not None and line.scale_point[1] > 1 and line.hours_configured:
                swept, factor = line.scale_point
                default = f" ({swept}'s hours / {factor}: perfect scaling assumed)"
            lines.append(f"  train {line.target}: {line.runs} × {line.hours:g} h{default} × "
                         f"${line.price_per_hour:,.2f}/h (targets[].price_per_hour) = ${line.usd:,.2f}")
        if self.dataflow is not None:
            flow = self.dataflow
            hours = _hours(flow.hours, flow.hours_configured, "vertex.cost.preprocess_expected_hours")
            if flow.price_per_worker_hour is None:
                lines.append(f"  Dataflow: {flow.workers} × {flow.machine_type}: not priced (no list price for the "
                             "machine type: set vertex.cost.dataflow_worker_price_per_hour)")
            else:
                source = ("vertex.cost.dataflow_worker_price_per_hour" if flow.price_configured
                          else f"list price as of {list_prices.PRICES_AS_OF}")
                lines.append(f"  Dataflow: up to {flow.workers} × {flow.machine_type} workers × {hours} × "
                             f"${flow.price_per_worker_hour:,.3f}/h ({source}) = ${flow.usd:,.2f}")
        for step in self.steps:
            lines.append(f"  {step.step}: {step.count} × {step.machine} × {step.hours:g} h × "
                         f"${step.price_per_hour:,.3f}/h = ${step.usd:,.2f}")
        defaults = sorted({"vertex.cost." + ("preprocess_expected_hours" if step.step == "preprocess"
                                             else "step_expected_hours")
                           for step in self.steps if not step.hours_configured})
        if defaults:
            lines.append(f"  step hours are defaults: set {' and '.join(defaults)}")
        lines.append(f"  run fee: ${self.run_fee:,.2f} per pipeline run (Vertex AI Pipelines)")
        lines.append(f"  list prices: us-central1 on-demand as of {list_prices.PRICES_AS_OF} (pipelines/list_prices.py); "
                     "not priced: Dataflow Shuffle, Cloud Storage, network, the training tasks' job launchers")
        return lines


def _hours(hours: float, configured: bool, field_name: str) -> str:
    return f"{hours:g} h" + ("" if configured else f" (default: set {field_name})")


def estimate_run_cost(config: AdrankConfig, pipeline: PipelineKind) -> RunCost:
    """The cost of one run of `pipeline` as `create_pipeline` builds it for Vertex."""
    plan = training_plan(config, "vertex", pipeline)
    lines = []
    for target in plan.targets:
        runs = sum(1 for name, _ in plan.runs if name == target.name)
        spec = target.vertex
        hours = spec.expected_hours if spec is not None else 1.0
        configured = spec is not None and "expected_hours" in spec.model_fields_set
        point = (target.scale_point.of, target.scale_point.factor) if target.scale_point is not None else None
        lines.append(TrainingCost(target.name, runs, target.price_per_hour, hours, configured, point))
    if config.vertex is None:
        return RunCost(pipeline, lines)
    jax_runs = sum(1 for name, _ in plan.runs
                   if next(t for t in plan.targets if t.name == name).backend == "jax")
    return RunCost(pipeline, lines, dataflow_cost(config),
                   step_costs(config, len(plan.runs), plan.promote, jax_runs))


def dataflow_cost(config: AdrankConfig) -> DataflowCost | None:
    flow = config.preprocess.dataflow
    if config.preprocess.runner != "DataflowRunner" or flow is None or config.vertex is None:
        return None
    cost = config.vertex.cost
    hours_configured = "preprocess_expected_hours" in cost.model_fields_set
    price = cost.dataflow_worker_price_per_hour
    if price is None:
        shape = compute_engine_shape(flow.machine_type)
        if shape is not None:
            price = list_prices.dataflow_worker_price(shape.vcpus, shape.memory_gb, flow.disk_size_gb)
    return DataflowCost(flow.max_workers, flow.machine_type, price, cost.dataflow_worker_price_per_hour is not None,
                        cost.preprocess_expected_hours, hours_configured)


def planned_steps(config: AdrankConfig, runs: int, promote: bool,
                  jax_runs: int = 0) -> list[tuple[str, int, tuple[str, str] | None]]:
    """(display name, how many, (CPU, memory) asked or None for the default machine) of every CPU task of a run on
    Vertex, training excepted: the tasks `pipelines.ranking` adds (`jax_runs`: the training runs on the JAX lane, each
    followed by its export step)."""
    vertex = placement.require_vertex(config)
    steps: list[tuple[str, int, tuple[str, str] | None]] = [("resolve window", 1, None)]
    if vertex.experiment:
        steps.append(("join experiment", 1, None))
    if config.logs.source == "synthetic":
        steps.append(("generate logs", 1, None))
    steps.append(("preprocess", 1, placement.preprocess_resources(config)))
    if config.training.warm_start == "champion":
        steps.append(("find champion", 1, None))
    steps += [("run directory", runs, None)]
    if jax_runs:
        steps.append(("export", jax_runs, None))
    steps += [("record run", runs, None), ("report", 1, placement.REPORT_RESOURCES)]
    if promote:
        steps += [("promote model", 1, placement.PROMOTION_RESOURCES), ("model version", 1, None)]
    if vertex.notify_emails:
        steps.append(("notify by e-mail", 1, None))
    return steps


def step_costs(config: AdrankConfig, runs: int, promote: bool, jax_runs: int = 0) -> list[StepCost]:
    vertex = placement.require_vertex(config)
    cost = vertex.cost
    lines = []
    for name, count, resources in planned_steps(config, runs, promote, jax_runs):
        cpus, memory = (float(resources[0]), float(resources[1].rstrip("G"))) if resources else (0.0, 0.0)
        machine, price = list_prices.step_machine(cpus, memory)
        if name == "preprocess":
            hours, configured = cost.preprocess_expected_hours, "preprocess_expected_hours" in cost.model_fields_set
        else:
            hours, configured = cost.step_expected_hours, "step_expected_hours" in cost.model_fields_set
        lines.append(StepCost(name, count, machine, price, hours, configured))
    return lines
