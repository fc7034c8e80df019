"""`AdrankConfig`: the one validated object every entry point loads (see `configs.loader`)."""

from __future__ import annotations

from pydantic import Field, model_validator

from configs.base import StrictModel
from configs.features import Feature, FeaturesConfig
from configs.logs import LogsConfig, SplitConfig, TaskConfig
from configs.preprocess import PreprocessConfig
from configs.promotion import PromotionConfig
from configs.report import ReportConfig
from configs.training import ModelConfig, TargetConfig, TrainingConfig
from configs.vertex import VertexConfig, check_target_machine


class AdrankConfig(StrictModel):
    name: str = Field(pattern=r"^[a-z][a-z0-9-]*$", description="pipeline name; also the Vertex display name")
    seed: int = 0
    logs: LogsConfig = LogsConfig()
    tasks: list[TaskConfig] = Field(min_length=1)
    split: SplitConfig = SplitConfig()
    features: list[Feature] = Field(min_length=1)
    preprocess: PreprocessConfig = PreprocessConfig()
    model: ModelConfig = ModelConfig()
    training: TrainingConfig = TrainingConfig()
    targets: list[TargetConfig] = Field(min_length=1)
    runs_per_target: int = Field(3, ge=1, le=100)
    report: ReportConfig = ReportConfig()
    promotion: PromotionConfig = PromotionConfig()
    vertex: VertexConfig | None = None

    @model_validator(mode="after")
    def _cross_field_rules(self) -> AdrankConfig:
        FeaturesConfig(features=self.features)  # unique names
        tasks = [t.name for t in self.tasks]
        if len(set(tasks)) != len(tasks):
            raise ValueError(f"task names must be unique, got {tasks}")
        targets = [t.name for t in self.targets]
        if len(set(targets)) != len(targets):
            raise ValueError(f"target names must be unique, got {targets}")
        if self.report.baseline_target is not None and self.report.baseline_target not in targets:
            raise ValueError(f"report.baseline_target '{self.report.baseline_target}' is not one of {targets}")
        for target in self.targets:
            if target.vertex is not None:
                try:
                    check_target_machine(target.kind, target.vertex)
                except ValueError as error:
                    raise ValueError(f"target '{target.name}': {error}") from None
        return self

    def target(self, name: str) -> TargetConfig:
        for target in self.targets:
            if target.name == name:
                return target
        raise KeyError(f"no target named '{name}' (targets: {[t.name for t in self.targets]})")

    def batch_size(self, target: TargetConfig) -> int:
        return target.global_batch_size or self.training.global_batch_size
