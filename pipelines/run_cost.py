"""What one run of a compiled pipeline is expected to cost, before anything is paid.

Training is priced from the config: for every training task, its target's `price_per_hour` (the whole machine
set: chief, workers, parameter servers, accelerators) × the hours one run is expected to take
(`targets[].vertex.expected_hours`, e.g. a past run's wall time; 1 hour when unset, and the estimate says so).
Preprocessing (Dataflow or the launcher's pod), the report and promotion are not priced: the config has no price
for them, and the estimate names them as left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from configs import AdrankConfig
from pipelines.ranking import PipelineKind, training_plan


@dataclass(frozen=True)
class TrainingCost:
    target: str
    runs: int
    price_per_hour: float
    hours: float
    hours_configured: bool  # False: the 1-hour default of `expected_hours`

    @property
    def usd(self) -> float:
        return self.runs * self.price_per_hour * self.hours


@dataclass(frozen=True)
class RunCost:
    pipeline: PipelineKind
    training: list[TrainingCost]

    @property
    def usd(self) -> float:
        return sum(line.usd for line in self.training)

    @property
    def training_runs(self) -> int:
        return sum(line.runs for line in self.training)

    def describe(self) -> list[str]:
        """The lines `adrank compile` and `adrank schedule create` print."""
        lines = [f"estimated cost of one {self.pipeline} run: ${self.usd:,.2f} "
                 f"({self.training_runs} training run(s); price_per_hour × expected hours per run)"]
        for line in self.training:
            default = "" if line.hours_configured else " (1 h default: set vertex.expected_hours)"
            lines.append(f"  train {line.target}: {line.runs} × {line.hours:g} h{default} × "
                         f"${line.price_per_hour:,.2f}/h = ${line.usd:,.2f}")
        lines.append("  not priced (no price in the config): preprocess, report, promotion")
        return lines


def estimate_run_cost(config: AdrankConfig, pipeline: PipelineKind) -> RunCost:
    """The training cost of one run of `pipeline` as `create_pipeline` builds it for Vertex."""
    plan = training_plan(config, "vertex", pipeline)
    lines = []
    for target in plan.targets:
        runs = sum(1 for name, _ in plan.runs if name == target.name)
        spec = target.vertex
        hours = spec.expected_hours if spec is not None else 1.0
        configured = spec is not None and "expected_hours" in spec.model_fields_set
        lines.append(TrainingCost(target.name, runs, target.price_per_hour, hours, configured))
    return RunCost(pipeline, lines)
