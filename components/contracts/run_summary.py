"""The train → report contract: one `RunSummary` JSON per training run (written by `components.train`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from components.contracts.base import Contract
from components.contracts.calibrator import Calibrator
from components.contracts.time_split import TimeSplit

SUMMARY_FILE = "run_summary.json"


class TableCarryOver(Contract):
    table: str
    rows: int
    copied: int
    new: int


class WarmStartSummary(Contract):
    """What a warm-started run took from the champion (RunSummary.warm_start)."""

    source: str
    tables: list[TableCarryOver]
    dense_copied: int
    dense_skipped: list[str]

    @property
    def rows_copied(self) -> int:
        return sum(t.copied for t in self.tables)

    @property
    def rows_new(self) -> int:
        return sum(t.new for t in self.tables)

    def describe(self) -> str:
        tables = ", ".join(f"{t.table} {t.copied:,}/{t.rows:,}" for t in self.tables)
        skipped = f", {len(self.dense_skipped)} skipped (shape changed)" if self.dense_skipped else ""
        return (f"warm start from {self.source}: embedding rows copied {self.rows_copied:,}, new {self.rows_new:,} "
                f"({tables}); dense weights copied {self.dense_copied}{skipped}")


class HardwareSeen(Contract):
    """What the runtime reported, never what the target asked for."""

    device_kind: str = Field(description="'CPU', 'GPU' or 'TPU', from tf.config / the TPU resolver")
    device_count: int
    device_names: list[str] = Field(default_factory=list)
    device_descriptions: list[str] = Field(default_factory=list, description="e.g. GPU model names")
    strategy: str
    replicas: int
    host: str = Field("", description="the host of the process that wrote the summary (the chief's)")
    processes: int = Field(1, description="the processes (hosts, CustomJob replicas) that trained the run together")
    simulated: bool = Field(False, description="the devices were slices of one host's CPU (JAX's forced host-platform "
                            "devices, TensorFlow's logical CPUs; a local scaling sweep, components/train/"
                            "simulated_devices.py), not separate hardware")


class TaskMetrics(Contract):
    logloss: float
    auc: float
    normalized_entropy: float
    calibration: float = Field(description="mean prediction / observed positive rate")
    examples: int
    positive_rate: float
    roc: list[tuple[float, float, float]] = Field(
        default_factory=list, description="(fpr, tpr, threshold) points, see components.evaluate.metrics.roc_curve"
    )
    mean_prediction: float | None = Field(None, description="mean predicted probability on the eval split")
    reliability: list[tuple[float, float, int]] = Field(
        default_factory=list,
        description="(mean prediction, observed rate, examples) per equal-count bin, see "
        "components.evaluate.metrics.reliability_curve",
    )
    uncalibrated_logloss: float | None = Field(
        None, description="log-loss before the calibration step (None when training.calibration is none)"
    )
    uncalibrated_calibration: float | None = Field(None, description="mean prediction / rate before calibration")


class CurvePoint(Contract):
    step: int
    loss: float = Field(description="mean training loss of the chunk ending at `step`")
    epoch: int | None = Field(None, description="the epoch (1-based) this chunk completes, if it ends one")
    eval_logloss: float | None = Field(None, description="eval log-loss after the epoch (mean over tasks)")


class EmbeddingTableMemory(Contract):
    """One stacked embedding table (the tables of one dim) and its optimizer's slots."""

    name: str
    tables: list[str] = Field(default_factory=list, description="the feature tables stacked in it")
    rows: int
    embedding_dim: int
    parameter_bytes: int
    optimizer_slot_bytes: int = Field(description="e.g. lazy Adam 2x the table, row-wise Adagrad 1/dim of it")
    shards: int = 1
    devices: list[str] = Field(default_factory=list)


class TablePlacementSeen(Contract):
    """Where the run's embedding tables lived and who updated them, read from the runtime (never from the target):
    the TPU embedding API or SparseCore (`embedding_hardware`: the accelerator's embedding hardware held them) or
    ordinary arrays updated by the trainer's sparse row updates."""

    implementation: str = Field(description="e.g. 'stacked variables, sparse optimizer', 'TPU embedding API', "
                                "'SparseCore (keras-rs DistributedEmbedding)', 'stacked arrays, sparse row updates'")
    embedding_hardware: bool = Field(description="whether the tables were on the accelerator's embedding hardware")
    detail: str = ""


class RunSummary(Contract):
    target: str
    target_kind: str
    backend: str = Field("tensorflow", description="the training lane: tensorflow or jax (targets[].backend)")
    run_index: int
    seed: int
    hardware: HardwareSeen
    model_kind: str
    global_batch_size: int
    learning_rate: float = Field(description="effective peak learning rate of dense weights, after batch scaling")
    configured_learning_rate: float | None = Field(None, description="training.learning_rate before scaling")
    learning_rate_scaling: str | None = Field(None, description="none, linear or sqrt in global / reference batch")
    embedding_learning_rate: float | None = Field(None, description="effective embedding-table rate, if separate")
    steps: int
    epochs: int
    configured_epochs: int | None = Field(None, description="training.epochs as set, when the small-split rule "
                                          "(training.min_train_steps) raised `epochs`; None: the run trained as set")
    min_train_steps: int = Field(0, description="the small-split rule's floor of steps for this split "
                                 "(training.min_train_steps resolved; sqrt: the square root of the train examples)")
    steps_per_epoch: int | None = None
    steps_per_execution: int | None = None
    dropped_steps: int = Field(0, description="full batches of the epochs left untrained by chunking (normally 0)")
    train_examples: int
    wall_time_seconds: float
    examples_per_second: float = Field(description="steady-state training throughput: train steps only, after the "
                                       "first execution (tracing, compilation), evaluation, checkpoints and input "
                                       "checks timed apart (time_split)")
    time_split: TimeSplit | None = Field(None, description="the run's wall time by phase (components/train/"
                                         "run_clock.py); None: written before it was recorded")
    table_placement: TablePlacementSeen | None = Field(None, description="where the tables lived, from the runtime")
    input_stall_fraction: float | None = Field(
        None, description="share of step time the input cost: 1 − the median over alternating rounds of (step time "
        "fed from memory / step time fed from the run's pipeline), by the host clock around the train function after "
        "training (components/train/input_capacity.py; None: not measured)",
    )
    input_examples_per_second: float | None = Field(
        None, description="what the run's input pipeline delivered alone on this host, read for "
        "training.input_capacity_seconds before training (None: not measured)",
    )
    step_examples_per_second: float | None = Field(
        None, description="what the training step consumes when it never waits: examples per second of the same "
        "model's steps fed from batches held in memory, after training (the memory rounds' steps over their seconds, "
        "all paired rounds together, as the headline is taken; None: not measured)",
    )
    input_format: str | None = Field(None, description="'blocks' or 'tf.Example': the records the trainer read")
    input_cache_bytes: int = Field(0, description="memory the cached decoded train blocks take (0: not cached)")
    metrics: dict[str, TaskMetrics]
    curve: list[CurvePoint] = Field(default_factory=list)
    embedding_tables: list[EmbeddingTableMemory] = Field(default_factory=list, description="table memory")
    model_uri: str | None = Field(None, description="the exported serving model; None when nothing was exported")
    warm_start: WarmStartSummary | None = Field(None, description="what was carried over from the champion")
    calibrators: dict[str, Calibrator] = Field(
        default_factory=dict, description="per task, the calibration the serving signatures apply (none: empty)"
    )
    calibration_skipped: dict[str, str] = Field(
        default_factory=dict, description="per task, why the configured calibration step was fitted but not kept "
        "(it did not lower log-loss on held-out examples it was not fitted on); such a task serves the model as is",
    )
    deterministic: bool | None = Field(
        None, description="whether the run trained under op determinism (training.deterministic): the same config "
        "and seed then give the same log-loss on the same machine; None: written before this was recorded",
    )

    def write(self, directory: str | Path) -> Path:
        path = Path(directory) / SUMMARY_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.model_dump_json(indent=2))
        return path

    @classmethod
    def read(cls, path: str | Path) -> RunSummary:
        path = Path(path)
        if path.is_dir():
            path = path / SUMMARY_FILE
        return cls.model_validate_json(path.read_text())
