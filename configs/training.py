"""The model, how it trains, and the hardware targets it trains on.

A target may override any model or training setting (a batch-size or learning-rate sweep is just more
targets); `resolve_target` is the one place those overrides are applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional

from pydantic import Field, create_model, field_validator, model_validator

from configs.base import StrictModel
from configs.bounds import at_most
from configs.features import MAX_TABLE_ROWS
from configs.vertex import VertexTargetSpec
from configs.vertex_names import target_name_problem

# Upper bounds that catch typos (1e8 for 8) at load time instead of an out-of-memory crash hours later.
MAX_EMBEDDING_DIM = 4096
MAX_LAYER_WIDTH = 65536
MAX_LEARNING_RATE = 10.0
MAX_BATCH_SIZE = 2**24
BATCH_REASON = "examples in one step; a batch this large fits no accelerator's memory"
MAX_STEPS = 10**9
# the small-split rule (training.min_train_steps): the most epochs it raises a run to
MAX_RAISED_EPOCHS = 32
BYTES_REASON = "bytes of one table (1 TiB); above it no host or parameter server holds the table"
LayerWidths = list[Annotated[int, Field(ge=1, le=MAX_LAYER_WIDTH)]]
# machine-type prefixes whose TPUs Vertex documents for JAX and PyTorch only (TPU v6e, Trillium)
TENSORFLOW_REFUSED_MACHINES = ("ct6e-",)


class ModelConfig(StrictModel):
    """Which ranking model and its shape. Table sizes come from the transform output, never from here."""

    kind: Literal["dcn", "ple", "linear"] = "dcn"
    embedding_dim: int = Field(8, ge=1, le=MAX_EMBEDDING_DIM)
    output_bias: Literal["label_rate", "zero"] = Field(
        "label_rate",
        description="label_rate: each task's logit starts at the log-odds of its train positive rate; zero: at 0 (p=0.5)",
    )
    embedding_initializer: Literal["uniform", "truncated_normal"] = Field(
        "uniform",
        description="uniform: Keras's Embedding default U(-0.05, 0.05); truncated_normal: N(0, 1/dim) truncated",
    )
    # DCN-v2
    cross_layers: int = Field(2, ge=0, le=64)
    cross_structure: Literal["stacked", "parallel"] = Field(
        "stacked", description="stacked: cross then deep; parallel: cross and deep side by side"
    )
    cross_projection_dim: int | None = Field(
        None, ge=1, le=MAX_LAYER_WIDTH,
        description="None: full-rank cross weight; an int: low-rank U·V^T of this rank",
    )
    cross_experts: int = Field(1, ge=1, le=64, description=">1: mixture of low-rank cross experts with a gate")
    deep_layers: LayerWidths = Field(default_factory=lambda: [64, 32])
    shared_tables: dict[str, list[str]] = Field(
        default_factory=dict, description="table name → categorical features looked up in that one table"
    )
    # PLE
    ple_levels: int = Field(2, ge=1, le=16, description="stacked CGC extraction layers")
    ple_shared_experts: int = Field(2, ge=1, le=64)
    ple_task_experts: int = Field(1, ge=1, le=64, description="experts owned by each task, per level")
    ple_expert_layers: LayerWidths = Field(default_factory=lambda: [32])
    ple_tower_layers: LayerWidths = Field(default_factory=lambda: [16])

    @model_validator(mode="after")
    def _mixture_needs_rank(self) -> ModelConfig:
        if self.cross_experts > 1 and self.cross_projection_dim is None:
            raise ValueError("cross_experts > 1 needs cross_projection_dim (the rank of each expert)")
        return self


class TrainingConfig(StrictModel):
    global_batch_size: Annotated[int, at_most(MAX_BATCH_SIZE, BATCH_REASON)] = Field(512, ge=1)
    epochs: Annotated[int, at_most(
        10_000, "passes over the train split; a run needing more is a typo and would train until killed",
    )] = Field(2, ge=1)
    min_train_steps: int | Literal["sqrt"] = Field(
        "sqrt", description="on a small train split, the fewest steps a run trains: its epochs are raised to the "
        f"fewest that reach this many steps, at most {MAX_RAISED_EPOCHS} (never lowered). sqrt: the square root of "
        "the train examples (on click logs of 2,256, 7,472 and 18,770 train examples the eval log-loss was lowest "
        "after 60, 84 and 144 steps; docs/quality.md, 'Epochs on a small log'); a number: that many steps; 0: "
        "training.epochs as set",
    )
    learning_rate: float = Field(
        0.003, gt=0, le=MAX_LEARNING_RATE, description="learning rate at reference_batch_size"
    )
    reference_batch_size: Annotated[int, at_most(MAX_BATCH_SIZE, BATCH_REASON)] = Field(
        512, ge=1, description="batch size `learning_rate` was tuned at")
    learning_rate_scaling: Literal["none", "linear", "sqrt"] = Field(
        "sqrt", description="how the learning rate grows with global_batch_size / reference_batch_size"
    )
    warmup_steps: Annotated[int, at_most(MAX_STEPS, "training steps; 10^9 steps is years of training")] = Field(
        0, ge=0, description="linear warm-up from 0 to the scaled learning rate")
    embedding_learning_rate: float | None = Field(
        None, gt=0, le=MAX_LEARNING_RATE,
        description="separate rate for embedding tables (scaled the same way); None: same as dense",
    )
    optimizer: Literal["adam", "adagrad"] = "adam"
    embedding_optimizer: Literal["lazy_adam", "rowwise_adagrad", "adagrad", "sgd"] = Field(
        "lazy_adam",
        description="sparse optimizer of the embedding tables (only looked-up rows are updated). lazy_adam: Adam "
        "moments per looked-up row, the closest to Keras's dense Adam (benchmarks/quality.py); rowwise_adagrad: one "
        "accumulator per row (slots 1/dim of the table); at Adam's learning rates it barely moves the tables",
    )
    host_table_bytes: Annotated[int | None, at_most(2**40, BYTES_REASON)] = Field(
        4 * 2**30, ge=1, description="on GPU, stacked tables above this many bytes live in host memory"
    )
    ps_table_shard_bytes: Annotated[int, at_most(2**40, BYTES_REASON)] = Field(
        64 * 2**20, ge=1, description="with parameter servers, tables above this are split over every ps task"
    )
    gradient_clip_norm: float | None = Field(None, gt=0, description="global-norm clipping per variable group")
    shuffle_buffer: Annotated[int, at_most(
        10**8, "examples held in memory by each input pipeline to draw the order from")] = Field(10000, ge=1)
    cache: Literal["auto", "memory", "none"] = Field(
        "auto", description="keep the train split's decoded blocks in memory after the first epoch. auto: when they "
        "fit cache_memory_mb; memory: always; none: never (docs/input.md)",
    )
    cache_memory_mb: Annotated[int, at_most(
        10**6, "MiB of host memory for the cached split; a terabyte is a typo")] = Field(
        2048, ge=0, description="memory budget of training.cache: auto (MiB)")
    input_capacity_seconds: float = Field(
        2.0, ge=0.0, le=60.0, description="at the start of a run, read the input pipeline alone this long to measure "
        "what it delivers (RunSummary.input_examples_per_second), and after training time the step fed from memory "
        "this long, in rounds paired with as many fed from the run's pipeline (step_examples_per_second, "
        "input_stall_fraction); 0: none of them measured",
    )
    steps_per_execution: Annotated[int, at_most(
        10_000, "steps run in one call between progress and checkpoint checks")] = Field(
        32, ge=1, description="steps in one call of the train function (the plan takes the largest divisor of a "
        "chunk up to this). Fewer calls, less host overhead per step: on the default config, 32 (29 a call) trained "
        "1.79x the examples/s of 8 (3 a call) on the TensorFlow lane and 1.16x on the JAX lane "
        "(benchmarks/train_clock.py)")
    checkpoints_per_epoch: Annotated[int, at_most(
        1_000, "each checkpoint writes every variable; more is a typo")] = Field(1, ge=1)
    checkpoint_every_minutes: float | None = Field(
        None, gt=0, le=24 * 60, description="write a chunk's checkpoint only when this many minutes have passed since "
        "the last one (the run's last chunk is always written); None: after every chunk. A resumed run continues "
        "from the last one written",
    )
    eval_every_epochs: Annotated[int, at_most(10_000, "epochs between evaluations")] = Field(
        1, ge=1, description="evaluate on the eval split after every this many epochs (the curve's points; the final "
        "evaluation always runs); at most `epochs`",
    )
    eval_sample_examples: Annotated[int | None, at_most(10**9, "eval examples read between epochs")] = Field(
        None, ge=1, description="between epochs, evaluate on the eval split's first this many examples (a bounded "
        "cost per epoch); the final evaluation reads the whole split. None: the whole split every time",
    )
    deterministic: bool = Field(
        True, description="op determinism (tf.config.experimental.enable_op_determinism): the same config and seed "
        "give the same eval log-loss on the same machine, so two configs can be compared run by run; false: "
        "TensorFlow may pick faster non-deterministic kernels (mostly on GPU) and repeated runs differ slightly",
    )
    warm_start: Literal["none", "champion"] = Field(
        "none", description="champion: start from the registry's default model (dense weights where shapes match, "
        "embedding rows by vocabulary token); none: start cold",
    )
    mixed_precision: Literal["auto", "off", "on"] = Field(
        "auto", description="auto: mixed_float16 on GPU, mixed_bfloat16 on TPU, float32 on CPU"
    )
    max_embedding_memory_gb: float = Field(
        16.0, gt=0, description="load-time limit on the estimated embedding tables + optimizer slots (GiB), "
        "see configs.embedding_memory",
    )
    untruncated_vocabulary_rows: Annotated[int, at_most(
        MAX_TABLE_ROWS, "an int32 id indexes at most 2^31-1 table rows")] = Field(
        100_000, ge=1, description="tokens assumed for a vocabulary feature without top_k in that estimate",
    )
    calibration: Literal["none", "intercept", "platt"] = Field(
        "none",
        description="post-hoc calibration fitted on a held-out slice of the train split and applied in the exported "
        "model's serving signatures (components.train.posthoc_calibration). intercept: shift the log-odds; platt: scale "
        "and shift them",
    )
    calibration_holdout_fraction: float = Field(
        0.1, gt=0, le=0.5,
        description="share of train examples (by a hash of each example) held out of training when calibration is "
        "not none: with holdout the step is fitted and cross-checked on it; with latest_train_days it is fitted on "
        "the rest of the latest days and kept only if it lowers log-loss on their held-out part",
    )
    calibration_shrinkage_positives: float = Field(
        100.0, ge=0,
        description="the calibration fit is pulled toward no change by positives / (positives + this): fitted on "
        "100 positives it keeps half its move, on 10,000 nearly all (0: no shrinkage)",
    )
    calibration_data: Literal["holdout", "latest_train_days"] = Field(
        "holdout",
        description="what the calibration step is fitted on. holdout: a hashed slice of the train split kept out of "
        "training (calibration_holdout_fraction); latest_train_days: the last split.calibration_days days of the "
        "train split (trained on, less their held-out part, which decides whether the step is kept), so the "
        "calibration follows the most recent base rate (the closest day to the one served next when the click "
        "rate drifts)",
    )
    calibration_backtest: Literal["report", "enforce"] = Field(
        "report",
        description="with calibration_data latest_train_days, a day-ahead backtest over the train split's own days "
        "(each predicted from the days before it) says whether moving to the latest split.calibration_days days' "
        "rate lowered log-loss (components.train.calibration_backtest; it needs split.calibration_days + 2 train "
        "days). report: recorded with the step and in the report, the step served as fitted; enforce: where it did "
        "not, that move is taken out of the step, which then corrects the model's bias toward the train rate only",
    )

    @field_validator("min_train_steps")
    @classmethod
    def _steps_in_range(cls, value: int | str) -> int | str:
        if isinstance(value, int) and not 0 <= value <= MAX_STEPS:
            raise ValueError(f"{value:,} steps is outside 0 to {MAX_STEPS:,} (sqrt: the square root of the train "
                             "examples; 0: the rule off)")
        return value

    @model_validator(mode="after")
    def _cadence_within_the_run(self) -> TrainingConfig:
        if self.eval_every_epochs > self.epochs:
            raise ValueError(f"training.eval_every_epochs: {self.eval_every_epochs} is beyond the run's {self.epochs} "
                             f"epochs (training.epochs), so no evaluation between epochs would run; at most "
                             f"{self.epochs}")
        return self


def _overrides_of(model: type[StrictModel], name: str, exclude: tuple[str, ...] = ()) -> type[StrictModel]:
    """A model with the same fields as `model`, all optional (None = not overridden)."""
    fields: dict[str, Any] = {  # the field's constraints and bounds (its metadata) apply to an override too
        field_name: (Optional[Annotated[field.annotation, *field.metadata]] if field.metadata
                     else Optional[field.annotation], None)
        for field_name, field in model.model_fields.items()
        if field_name not in exclude
    }
    return create_model(name, __base__=StrictModel, __doc__=f"Per-target overrides of {model.__name__}.", **fields)


ModelOverrides = _overrides_of(ModelConfig, "ModelOverrides")
# The batch size has its own target field (`global_batch_size`), kept as the one way to override it.
TrainingOverrides = _overrides_of(TrainingConfig, "TrainingOverrides", exclude=("global_batch_size",))


class LocalClusterShape(StrictModel):
    """The processes a `cpu-ps` target's train step starts on 127.0.0.1 on the local backend (the step itself
    is the chief)."""

    workers: int = Field(2, ge=1, le=32)
    parameter_servers: int = Field(1, ge=1, le=16)


MAX_SCALE = 1024  # a sweep point: accelerators relative to the target's own (a v5e 2x2 to 16x16 is 64x)


class ScalePoint(StrictModel):
    """One point of a target's scaling sweep (`targets[].scale`), written when the config loads
    (`configs.scaling`): the swept target and how many times its accelerators this point trains on."""

    of: str = Field(description="the swept target's name (the point of factor 1 keeps it)")
    factor: int = Field(ge=1, le=MAX_SCALE, description="accelerators relative to the sweep's first point")
    batch: Literal["per_device", "global"] = Field(description="the sweep's `scale_batch`")


class TargetConfig(StrictModel):
    """A hardware target. `kind` says what hardware it needs; what actually ran is read at run time."""

    name: str = Field(description="also the adrank-target label on Vertex and part of the training job's name")
    kind: Literal["cpu", "gpu", "tpu", "cpu-ps"] = "cpu"
    backend: Literal["tensorflow", "jax"] = Field(
        "tensorflow", description="the training lane: tensorflow (tf.distribute, the TPU embedding API on TPU v2-v5e, "
        "parameter servers) or jax (a jitted step with sparse row updates; keras-rs on SparseCore for TPU v5p/v6e; "
        "the only lane Vertex offers on TPU v6e). The model classes are the same (docs/backends.md)",
    )
    global_batch_size: Annotated[int | None, at_most(MAX_BATCH_SIZE, BATCH_REASON)] = Field(
        None, ge=1, description="overrides training.global_batch_size")
    price_per_hour: float = Field(0.0, ge=0, description="USD per hour of the whole machine set, for cost")
    vertex: VertexTargetSpec | None = Field(None, description="the Vertex CustomJob machines (vertex backend)")
    allow_cpu_fallback: bool = Field(
        False, description="train on the CPU when the target's accelerator is absent instead of failing"
    )
    local_cluster: LocalClusterShape | None = Field(
        None, description="cpu-ps on the local backend: the worker and ps processes the train step starts; default: "
        "the replica counts of the `vertex` pools, else 2 workers and 1 parameter server",
    )
    scale: list[Annotated[int, Field(ge=1, le=MAX_SCALE)]] | None = Field(
        None, min_length=1, max_length=16,
        description="a scaling sweep: train this target at these multiples of its accelerators (1 first, rising), "
        "each point a target of its own (`<name>` for 1, `<name>-x<N>`): on Vertex a larger TPU slice (v5e, v6e) or "
        "N times the machines (`vertex.replica_count`), priced N times; locally, on the CPU, N simulated devices "
        "(docs/scaling.md). The report's scaling table compares the points",
    )
    scale_batch: Literal["per_device", "global"] = Field(
        "per_device", description="the global batch of sweep point N: per_device keeps each device's batch (N times "
        "the target's global batch, as Snap's large synchronous batches; the learning rate follows "
        "training.learning_rate_scaling); global keeps the global batch and splits it over N times the devices "
        "(N must divide it)",
    )
    scale_point: ScalePoint | None = Field(
        None, description="set when the config loads, for each point of a `scale` sweep; not written by hand")
    # ModelOverrides / TrainingOverrides are built by pydantic.create_model from the sections' fields, so mypy
    # sees variables, not classes:
    model: ModelOverrides | None = None  # type: ignore[valid-type]  # a class made at import (above)
    training: TrainingOverrides | None = None  # type: ignore[valid-type]  # a class made at import (above)

    @field_validator("name")
    @classmethod
    def _target_name(cls, name: str) -> str:
        """A target name is a Vertex label value (`adrank-target`) and part of KFP task and job names."""
        problem = target_name_problem(name)
        if problem:
            raise ValueError(problem)
        return name

    @model_validator(mode="after")
    def _local_cluster_is_for_parameter_servers(self) -> TargetConfig:
        if self.local_cluster is not None and self.kind != "cpu-ps":
            raise ValueError(f"local_cluster is for 'cpu-ps' targets, not '{self.kind}'")
        return self

    @model_validator(mode="after")
    def _backend_fits_the_hardware(self) -> TargetConfig:
        """The lanes reach different hardware (docs/backends.md): no JAX parameter servers; TPU v6e (`ct6e-*`), which
        Vertex trains with JAX and PyTorch only, never on the TensorFlow lane."""
        if self.backend == "jax" and self.kind == "cpu-ps":
            raise ValueError("backend: jax has no parameter servers (asynchronous training is TensorFlow's "
                             "ParameterServerStrategy): use kind: cpu for a JAX target, or backend: tensorflow")
        machine = self.vertex.machine.machine_type if self.vertex is not None else ""
        if self.backend == "tensorflow" and machine.startswith(TENSORFLOW_REFUSED_MACHINES):
            raise ValueError(f"vertex.machine.machine_type {machine} is TPU v6e (Trillium), which Vertex trains with "
                             "JAX and PyTorch only (TensorFlow's TPU build stopped at 2.20): set backend: jax")
        return self

    @model_validator(mode="after")
    def _a_sweep_from_one(self) -> TargetConfig:
        if self.scale is None:
            return self
        if self.scale_point is not None:
            raise ValueError("scale: a sweep point (scale_point) is not swept again")
        if self.scale[0] != 1 or any(b <= a for a, b in zip(self.scale, self.scale[1:])):
            raise ValueError(f"scale: {self.scale}: the sweep starts at 1 (the target as configured, every other "
                             "point's reference) and rises, e.g. [1, 2, 4]")
        if self.kind == "cpu-ps":
            raise ValueError("scale: a cpu-ps target trains asynchronously; sweep its parameter-server workers "
                             "(vertex.workers.replica_count) as targets of their own")
        return self

    def local_cluster_shape(self) -> LocalClusterShape:
        """The local cluster of a `cpu-ps` target (see `local_cluster`)."""
        if self.local_cluster is not None:
            return self.local_cluster
        if self.vertex is not None and self.vertex.workers is not None and self.vertex.parameter_servers is not None:
            return LocalClusterShape(workers=self.vertex.workers.replica_count,
                                     parameter_servers=self.vertex.parameter_servers.replica_count)
        return LocalClusterShape()


@dataclass(frozen=True)
class ResolvedTarget:
    """A target with every override applied: what one training run actually uses."""

    target: TargetConfig
    model: ModelConfig
    training: TrainingConfig
    configured_epochs: int | None = None  # training.epochs as set, when the small-split rule raised `training.epochs`


def find_target(targets: list[TargetConfig], name: str) -> TargetConfig:
    """The target called `name`; a KeyError listing the target names when there is none."""
    for target in targets:
        if target.name == name:
            return target
    raise KeyError(f"no target named '{name}' (targets: {[t.name for t in targets]})")


def effective_batch_size(training: TrainingConfig, target: TargetConfig) -> int:
    """The global batch `target` trains with: its own `global_batch_size` when it sets one, else the training
    section's (the one place this rule lives; `resolve_target` and the config slices use it)."""
    return target.global_batch_size or training.global_batch_size


def resolve_target(model: ModelConfig, training: TrainingConfig, target: TargetConfig) -> ResolvedTarget:
    """Apply `target`'s overrides to the pipeline-wide model and training sections (the one place)."""

    def merged(base: StrictModel, override: StrictModel | None, **extra: Any) -> dict[str, Any]:
        values = base.model_dump()
        if override is not None:
            values.update(override.model_dump(exclude_none=True))
        values.update({k: v for k, v in extra.items() if v is not None})
        return values

    return ResolvedTarget(
        target=target,
        model=ModelConfig.model_validate(merged(model, target.model)),
        training=TrainingConfig.model_validate(
            merged(training, target.training, global_batch_size=effective_batch_size(training, target))
        ),
    )
