"""The report → promotion record: every run of the DAG, aggregated per target and compared with the baseline.

This is what `summary.json` holds, what the HTML/Markdown reports render and what the promotion step reads its
challenger from; the report step builds it (`components.report.aggregation.summarize`, the scaling sweeps
`components.report.scaling`).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pydantic import Field, ValidationError

from components.contracts.base import Contract
from components.contracts.sample_statistics import Comparison, SampleStats
from components.contracts.time_split import TimeSplit
from configs.loader import format_validation_error
from configs.report import SkippedTarget


class ScalingPoint(Contract):
    target: str
    factor: int = Field(description="accelerators asked for, relative to point 1 (targets[].scale)")
    devices: int = Field(description="data-parallel devices the runs saw (the runtime's, the fewest over the runs)")
    processes: int = Field(1, description="processes (hosts) the runs trained over")
    simulated: bool = Field(False, description="the devices were slices of one host's CPU (components/train/"
                            "simulated_devices.py): their throughput says nothing of real accelerators")
    global_batch_size: int
    learning_rate: float
    runs: int
    examples_per_second_mean: float | None = Field(description="None when no run timed a steady step (a run too "
                                                   "short: its only execution was start-up)")
    examples_per_second_std: float | None
    speedup: float | None = Field(None, description="examples/s over point 1's")
    efficiency: float | None = Field(None, description="examples/s over (device ratio × point 1's)")
    price_per_hour: float
    cost_per_million_examples_usd: float | None
    logloss_mean: float
    logloss_std: float | None
    vs_first: Comparison | None = Field(None, description="log-loss against point 1 (Welch's t-test over runs)")


class ScalingSweep(Contract):
    """One swept target's points, in factor order (point 1 first)."""

    target: str
    batch: str = Field(description="scale_batch: per_device (the global batch grows with N) or global")
    points: list[ScalingPoint]

    @property
    def simulated(self) -> bool:
        return any(point.simulated for point in self.points)


class TaskStats(Contract):
    logloss: SampleStats
    auc: SampleStats
    normalized_entropy: SampleStats
    calibration: SampleStats
    calibration_ci95: tuple[float, float] | None = Field(
        None, description="95% interval of the calibration over the runs and the eval labels' binomial spread "
        "(components.evaluate.calibration_interval)")
    vs_baseline: Comparison | None = None
    uncalibrated_calibration: SampleStats | None = Field(None, description="before the calibration step, if any")
    uncalibrated_logloss: SampleStats | None = Field(None, description="before the calibration step, if any")
    calibration_method: str | None = Field(None, description="training.calibration of the runs (None: none)")
    reliability: list[tuple[float, float, int]] = Field(
        default_factory=list, description="(mean prediction, observed rate, examples) per bin, mean over runs"
    )


class EpochsRaised(Contract):
    """The small-split rule at work: `configured` epochs were too few steps, the runs trained `epochs`."""

    configured: int
    epochs: int
    steps_per_epoch: int
    min_train_steps: int


class TargetSummary(Contract):
    name: str
    kind: str
    backend: str = Field("tensorflow", description="the training lane of the runs (targets[].backend)")
    global_batch_size: int
    learning_rate: float = Field(description="effective (batch-scaled) peak learning rate of the runs")
    learning_rate_note: str = Field("", description="how it was scaled, e.g. '0.001 × sqrt(1024/512)'")
    eval_curve: list[tuple[int, float]] = Field(
        default_factory=list, description="(epoch, eval log-loss mean over runs) for every evaluated epoch"
    )
    dropped_steps: int = Field(0, description="full batches left untrained by step chunking, per run")
    epochs_raised: EpochsRaised | None = Field(None, description="how the small-split rule raised the runs' epochs "
                                               "(training.min_train_steps); None: they trained the epochs as set")
    price_per_hour: float
    runs: int
    hardware_seen: list[str]
    logloss_mean: float
    logloss_std: float | None
    logloss_ci95: tuple[float, float] | None
    auc_mean: float
    examples_per_second_mean: float
    examples_per_second_std: float | None
    wall_time_seconds_mean: float
    cost_per_run_usd: float
    cost_per_million_examples_usd: float | None
    relative_throughput: float | None
    relative_cost: float | None
    tasks: dict[str, TaskStats]
    embedding_memory_mib: float | None = None  # one run's embedding tables + optimizer slots
    input_stall_mean: float | None = Field(
        None, description="share of step time spent waiting for input, mean over the runs that measured it"
    )
    input_examples_per_second_mean: float | None = Field(
        None, description="what the input pipeline delivered alone, mean over the runs that measured it"
    )
    step_examples_per_second_mean: float | None = Field(
        None, description="what the step consumes when it never waits, mean over the runs that measured it"
    )
    input_format: str | None = Field(None, description="the records the runs read: blocks or tf.Example")
    input_cache_mib: float = Field(0.0, description="memory of the cached train blocks (0: not cached)")
    time_split: TimeSplit | None = Field(None, description="mean seconds per phase over the runs that recorded one")
    table_placement: list[str] = Field(default_factory=list, description="where the runs' tables lived (from the "
                                       "runtime), each distinct placement once")
    tables_on_embedding_hardware: bool | None = Field(
        None, description="whether every run's tables were on the accelerator's embedding hardware (None: unknown)")


class TaskFloor(Contract):
    bayes_logloss: float | None
    constant_ctr_logloss: float
    train_positive_rate: float
    eval_positive_rate: float


class RunRow(Contract):
    target: str
    backend: str = "tensorflow"
    run_index: int
    seed: int
    hardware: str
    strategy: str
    replicas: int
    global_batch_size: int
    steps: int
    wall_time_seconds: float
    examples_per_second: float
    input_stall_fraction: float | None
    input_examples_per_second: float | None = None
    step_examples_per_second: float | None = None
    logloss: dict[str, float]
    auc: dict[str, float]
    calibration: dict[str, float] = Field(default_factory=dict, description="per task, mean prediction / eval rate")
    calibration_skipped: dict[str, str] = Field(
        default_factory=dict, description="per task, why the run's calibration step was not kept (RunSummary)"
    )
    calibration_backtest: dict[str, str] = Field(
        default_factory=dict, description="per task, what the day-ahead backtest decided about the run's calibration "
        "step (Calibrator.backtest_line)",
    )
    deterministic: bool | None = Field(None, description="trained under op determinism (training.deterministic)")
    learning_rate: float
    dropped_steps: int = 0
    eval_curve: list[tuple[int, float]] = Field(default_factory=list, description="(epoch, eval log-loss)")
    model_uri: str | None
    time_split: TimeSplit | None = None
    table_placement: str | None = None


class BestRun(Contract):
    target: str
    run_index: int
    logloss: float
    model_uri: str | None


class BenchmarkSummary(Contract):
    pipeline: str
    config_hash: str
    generated: dt.datetime
    primary_task: str
    baseline_target: str
    bayes_logloss: float | None
    constant_ctr_logloss: float
    train_examples: int
    eval_examples: int
    tasks: dict[str, TaskFloor]
    targets: dict[str, TargetSummary]
    runs: list[RunRow]
    best_run: BestRun
    best_exported_run: BestRun | None = Field(
        None, description="the best run that exported a model (what promotion registers); None if none did"
    )
    dead_letter: dict[str, int]
    mostly_missing_features: dict[str, float] = Field(
        default_factory=dict, description="features absent from more than preprocess.max_missing_share of examples"
    )
    mostly_unseen_features: dict[str, float] = Field(
        default_factory=dict, description="features whose eval values are mostly never seen in train (share of eval "
        "examples above preprocess.max_unseen_share)",
    )
    skipped_targets: list[SkippedTarget] = Field(
        default_factory=list, description="configured targets this DAG did not train, with the reason"
    )
    scaling: list[ScalingSweep] = Field(
        default_factory=list, description="every swept target's points side by side (targets[].scale; "
        "components/report/scaling.py)")

    @classmethod
    def read(cls, path: str | Path) -> BenchmarkSummary:
        """A report's `summary.json` (what the report step writes and the promotion step reads); a file that is
        not one fails naming the file and each field."""
        try:
            return cls.model_validate_json(Path(path).read_text())
        except ValidationError as error:
            raise ValueError(f"{path}: not a report summary: {format_validation_error(error)}") from None

    def run(self, target: str, run_index: int) -> RunRow | None:
        """The row of one training run, None when the summary has no such run."""
        return next((r for r in self.runs if (r.target, r.run_index) == (target, run_index)), None)
