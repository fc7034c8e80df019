"""What each pipeline step receives: the part of the config it reads, not the whole `AdrankConfig`.

A step's inputs decide its cache key on Vertex, so a step given the whole config re-runs when anything
changes (a report label re-ran preprocessing and every training run). The plain functions take their slice
and nothing else (`generate_logs()` and `preprocess()`: `PreprocessStepConfig`; `train()`: `TrainStepConfig`;
`write_report()`: `ReportStepConfig`; `promote_best_run()` and `champion_model_dir()`: `PromoteStepConfig`);
a caller holding the whole config cuts the slice with `<Slice>.of(config)`. Each slice keeps the
`AdrankConfig` attribute names for the sections it holds. Slices are cut from a validated config; the full
config's hash travels only to the steps that label with it (report, promotion).

How a slice travels (`to_parameter` / `from_parameter`): as a step's input parameter, which Vertex and the local
engine put into the step's command line (KFP's executor input, one argument, `{{$}}`), where Linux allows one
argument at most 131,072 bytes (MAX_ARG_STRLEN). A slice grows about 190 bytes per feature (1,000 features:
149 KB). Up to `PLAIN_SLICE_BYTES` it travels as its canonical JSON, as it always has (compiled specs, and so
Vertex's cache keys, unchanged); past that, as that JSON bzip2-compressed and base64-encoded behind
`COMPRESSED_PREFIX` (5,000 features: 787 KB of JSON, 16 KB on the command line). Either form is a function of the
slice's content alone (bzip2's output has not changed since libbzip2 1.0, unlike deflate's, which differs between
zlib and zlib-ng), so the parameter, and with it a step's cache key, changes exactly when the slice does. A slice
still above `MAX_SLICE_PARAMETER_BYTES` compressed (about 30,000 features) fails the compile naming it.
"""

from __future__ import annotations

import base64
import bz2
from collections.abc import Sequence
from typing import Self

from pydantic import Field

from configs.base import StrictModel
from configs.features import Feature
from configs.loader import config_hash
from configs.logs import LogsConfig, SplitConfig, TaskConfig
from configs.preprocess import PreprocessConfig
from configs.promotion import PromotionConfig
from configs.report import ReportConfig, SkippedTarget
from configs.schema import AdrankConfig
from configs.training import ModelConfig, TargetConfig, TrainingConfig, effective_batch_size, find_target
from configs.vertex import VertexConfig
from foundation.canonical_json import canonical_json

PLAIN_SLICE_BYTES = 32_768  # up to this, a slice parameter is its JSON
COMPRESSED_PREFIX = "bz2+base64:"
MAX_SLICE_PARAMETER_BYTES = 98_304  # a step's whole executor input must stay below Linux's 131,072 per argument


class SliceTooLarge(ValueError):
    """A config slice that no step's command line can carry, even compressed."""


class _Slice(StrictModel):
    def to_json(self) -> str:
        """Canonical JSON (sorted keys), so an unchanged slice compiles to the same bytes."""
        return canonical_json(self.model_dump(mode="json"))

    def to_parameter(self) -> str:
        """The slice as a step's input parameter (module docstring): its canonical JSON, or past
        PLAIN_SLICE_BYTES that JSON bzip2-compressed (level 9) behind COMPRESSED_PREFIX."""
        text = self.to_json()
        if len(text.encode()) <= PLAIN_SLICE_BYTES:
            return text
        compressed = COMPRESSED_PREFIX + base64.b64encode(bz2.compress(text.encode(), 9)).decode("ascii")
        if len(compressed) > MAX_SLICE_PARAMETER_BYTES:
            raise SliceTooLarge(
                f"the {type(self).__name__} of config '{getattr(self, 'name', '?')}' is {len(text.encode()):,} bytes "
                f"of JSON, {len(compressed):,} compressed: more than a step's command line carries "
                f"({MAX_SLICE_PARAMETER_BYTES:,} bytes; Linux allows 131,072 per argument)")
        return compressed

    @classmethod
    def from_parameter(cls, parameter: str) -> Self:
        """The slice a step received (`to_parameter`'s either form)."""
        if parameter.startswith(COMPRESSED_PREFIX):
            parameter = bz2.decompress(base64.b64decode(parameter[len(COMPRESSED_PREFIX):])).decode()
        return cls.model_validate_json(parameter)


class PreprocessStepConfig(_Slice):
    """`generate logs` and `preprocess`: where the logs are, the labels, the split, the features, Beam."""

    name: str
    seed: int
    logs: LogsConfig
    tasks: list[TaskConfig]
    split: SplitConfig
    features: list[Feature]
    preprocess: PreprocessConfig

    @classmethod
    def of(cls, config: AdrankConfig) -> PreprocessStepConfig:
        return cls(name=config.name, seed=config.seed, logs=config.logs, tasks=config.tasks, split=config.split,
                   features=config.features, preprocess=config.preprocess)


class TrainStepConfig(_Slice):
    """One training target: its own settings (overrides unresolved, as `train()` resolves them), the shared
    model and training sections, the seed, and the features (the trainer checks the table rows the examples'
    manifest gives each against the config's, `components.train.table_rows_check`)."""

    name: str
    seed: int
    model: ModelConfig
    training: TrainingConfig
    targets: list[TargetConfig] = Field(min_length=1, max_length=1)
    features: list[Feature]

    @classmethod
    def of(cls, config: AdrankConfig, target: str) -> TrainStepConfig:
        return cls(name=config.name, seed=config.seed, model=config.model, training=config.training,
                   targets=[config.target(target)], features=config.features)

    def target(self, name: str) -> TargetConfig:
        if self.targets[0].name != name:
            raise KeyError(f"this training step is for target '{self.targets[0].name}', not '{name}'")
        return self.targets[0]

    def batch_size(self, target: TargetConfig) -> int:
        """The global batch `target` trains with (`configs.training.effective_batch_size`)."""
        return effective_batch_size(self.training, target)


class ReportStepConfig(_Slice):
    """The report: targets (names, order, prices), tasks, report settings, the full config's hash, and the
    targets the DAG could not run on its backend or machine (listed in the report with the reason)."""

    name: str
    config_hash: str
    tasks: list[TaskConfig]
    targets: list[TargetConfig]
    report: ReportConfig
    skipped_targets: list[SkippedTarget] = Field(default_factory=list)

    @classmethod
    def of(cls, config: AdrankConfig, skipped_targets: Sequence[SkippedTarget] = ()) -> ReportStepConfig:
        return cls(name=config.name, config_hash=config_hash(config), tasks=config.tasks, targets=config.targets,
                   report=config.report, skipped_targets=list(skipped_targets))

    def target(self, name: str) -> TargetConfig:
        return find_target(self.targets, name)


class PromoteStepConfig(_Slice):
    """The promotion: its rule, the registry (Vertex section on Vertex), and the full config's hash as a label."""

    name: str
    config_hash: str
    promotion: PromotionConfig
    vertex: VertexConfig | None = None

    @classmethod
    def of(cls, config: AdrankConfig) -> PromoteStepConfig:
        return cls(name=config.name, config_hash=config_hash(config), promotion=config.promotion,
                   vertex=config.vertex)
