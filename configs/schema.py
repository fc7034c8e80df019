"""`AdrankConfig`: the one validated object every entry point loads (see `configs.loader`)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator, model_validator

from configs.base import StrictModel
from configs.bounds import at_most
from configs.embedding_memory import check_embedding_memory
from configs.errors import ConfigError
from configs.features import Feature, FeaturesConfig, HistoryFeature
from configs.logs import EVENT_TYPES, LogsConfig, SplitConfig, TaskConfig
from configs.pipelines import BenchmarkConfig, RetrainingConfig
from configs.preprocess import PreprocessConfig
from configs.promotion import PromotionConfig
from configs.report import ReportConfig
from configs.retry import RetryConfig
from configs.scaling import configured_index, scale_points
from configs.shuffle_coverage import warn_on_partial_shuffle
from configs.training import (
    ModelConfig,
    TargetConfig,
    TrainingConfig,
    effective_batch_size,
    find_target,
    resolve_target,
)
from configs.vertex import VertexConfig, check_target_machine
from configs.vertex_names import experiment_run_problem, training_job_name_problem

# The name becomes the KFP pipeline name, the Vertex display name and a label value: at most 63 characters.
PIPELINE_NAME = re.compile(r"^[a-z]([a-z0-9-]*[a-z0-9])?$")
MAX_NAME_LENGTH = 63


class AdrankConfig(StrictModel):
    name: str = Field(description="pipeline name; also the Vertex display name and the adrank-pipeline label")
    seed: Annotated[int, at_most(
        2**31 - 1, "seed + run index seeds NumPy and TensorFlow, which take 32-bit seeds")] = Field(0, ge=0)
    logs: LogsConfig = LogsConfig()
    tasks: list[TaskConfig] = Field(min_length=1)
    split: SplitConfig = SplitConfig()
    features: list[Feature] = Field(min_length=1)
    preprocess: PreprocessConfig = PreprocessConfig()
    model: ModelConfig = ModelConfig()
    training: TrainingConfig = TrainingConfig()
    targets: list[TargetConfig] = Field(min_length=1)
    runs_per_target: Annotated[int, at_most(
        100, "every run trains the target's model once more; repeated-run statistics settle well before")] = Field(
        3, ge=1)
    report: ReportConfig = ReportConfig()
    promotion: PromotionConfig = PromotionConfig()
    benchmark: BenchmarkConfig = BenchmarkConfig()
    retraining: RetrainingConfig = RetrainingConfig()
    retry: RetryConfig = RetryConfig()
    vertex: VertexConfig | None = None

    @field_validator("name")
    @classmethod
    def _valid_pipeline_name(cls, name: str) -> str:
        if len(name) > MAX_NAME_LENGTH:
            raise ValueError(f"{len(name)} characters, over {MAX_NAME_LENGTH} (the Vertex label value limit)")
        if not PIPELINE_NAME.match(name):
            raise ValueError(f"'{name}' is not a pipeline name: lowercase letters, digits and '-', starting with a "
                             "letter and not ending with '-'")
        return name

    @field_validator("targets")
    @classmethod
    def _sweep_points(cls, targets: list[TargetConfig], info: ValidationInfo) -> list[TargetConfig]:
        """A swept target (`targets[].scale`) becomes its points (`configs.scaling`); every rule below sees them."""
        training = info.data.get("training")
        if training is None or not any(target.scale for target in targets):
            return targets  # the training section's own error is reported
        return scale_points(targets, training)

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
        if self.retraining.target is not None and self.retraining.target not in targets:
            raise ValueError(f"retraining.target: '{self.retraining.target}' is not one of the targets {targets}")
        for target in self.targets:
            if target.vertex is not None:
                try:
                    check_target_machine(target.kind, target.vertex)
                except ValueError as error:
                    raise ValueError(f"target '{target.name}': {error}") from None
        self._check_task_labels()
        self._check_history_features()
        self._check_history_burn_in()
        self._check_vertex_names()
        for index, target in enumerate(self.targets):
            resolved = resolve_target(self.model, self.training, target)
            check_embedding_memory(self.features, resolved.model, resolved.training, target.name)
            self._check_calibration_data(resolved.training, index)
        warn_on_partial_shuffle(self.logs, self.split, self.model, self.training, self.targets)
        return self

    def _check_calibration_data(self, training: TrainingConfig, target_index: int) -> None:
        """A calibration fitted on the latest train days needs preprocess to write them (split.calibration_days)."""
        if training.calibration == "none" or training.calibration_data != "latest_train_days":
            return
        overridden = self.targets[target_index].training
        field = ("training.calibration_data" if overridden is None or overridden.calibration_data is None
                 else f"targets.{configured_index(self.targets, target_index)}.training.calibration_data")
        if self.split.calibration_days == 0:
            raise ValueError(f"{field}: latest_train_days needs split.calibration_days ≥ 1 (the days preprocess "
                             "writes as the calibration split); it is 0")
        if self.logs.source == "synthetic":
            train_days = min(self.logs.synthetic.days, self.logs.lookback_days or self.logs.synthetic.days) \
                - self.split.eval_days - self.split.history_burn_in_days
            if self.split.calibration_days > train_days:
                raise ValueError(f"split.calibration_days: {self.split.calibration_days} days, but the synthetic logs "
                                 f"leave {train_days} train days")

    def _check_history_features(self) -> None:
        """A history feature counts an id that the logs carry (a categorical feature of this config), the labels of
        a configured task, over windows no longer than the logs read."""
        single_ids = [f.name for f in self.features if f.kind == "categorical"]
        tasks = [t.name for t in self.tasks]
        days_read, what_is_read = self._days_read()
        for index, feature in enumerate(self.features):
            if not isinstance(feature, HistoryFeature):
                continue
            for id_name in feature.ids:
                if id_name not in single_ids:
                    raise ValueError(f"features.{index}.ids: '{id_name}' is not an id the logs carry (a categorical "
                                     f"feature of this config: {single_ids})")
            if len(set(feature.ids)) != len(feature.ids):
                raise ValueError(f"features.{index}.ids: an id pair needs two different ids, got {feature.ids}")
            if feature.task is not None and feature.task not in tasks:
                raise ValueError(f"features.{index}.task: '{feature.task}' is not a task ({tasks})")
            if days_read is not None and max(feature.windows_hours) > days_read * 24:
                raise ValueError(f"features.{index}.windows_hours: a window of {max(feature.windows_hours):g} h is "
                                 f"longer than the logs read ({what_is_read} = {days_read * 24} h)")

    def _days_read(self) -> tuple[int | None, str]:
        """How many days of logs preprocess reads (None: every day the files hold), and the field that says so."""
        if self.logs.lookback_days is not None:
            return self.logs.lookback_days, f"logs.lookback_days {self.logs.lookback_days}"
        if self.logs.source == "synthetic":
            return self.logs.synthetic.days, f"logs.synthetic.days {self.logs.synthetic.days}"
        return None, ""

    def _check_history_burn_in(self) -> None:
        """Burn-in days feed history but are not trained on: the logs read must hold more days than burn-in and
        eval together, or no train day is left."""
        burn_in = self.split.history_burn_in_days
        days_read, what_is_read = self._days_read()
        if burn_in == 0 or days_read is None:
            return
        if burn_in + self.split.eval_days >= days_read:
            raise ValueError(f"split.history_burn_in_days: {burn_in} days of burn-in and split.eval_days "
                             f"{self.split.eval_days} leave no train day in the {days_read} days read ({what_is_read}); "
                             "the logs read must hold more days than burn-in and eval together")

    def _check_task_labels(self) -> None:
        """Every task must be able to get a positive label from the configured logs."""
        mode = self.logs.label_mode
        known = list(self.logs.event_types)
        if self.logs.source == "synthetic":
            known = [event for event in known if event in EVENT_TYPES]
        for index, task in enumerate(self.tasks):
            if mode == "outcome" and task.label_column is None:
                raise ValueError(f"tasks.{index}.label_column: task '{task.name}' needs a label_column "
                                 "(logs.label_mode is 'outcome')")
            if mode == "engagements" and task.event_type is None:
                raise ValueError(f"tasks.{index}.event_type: task '{task.name}' needs an event_type "
                                 "(logs.label_mode is 'engagements')")
            if mode == "engagements" and task.event_type not in known:
                where = ("the synthetic generator writes " + ", ".join(EVENT_TYPES)
                         + (f" and logs.event_types keeps {known}" if known != list(EVENT_TYPES) else "")
                         if self.logs.source == "synthetic" else f"logs.event_types is {known}")
                raise ValueError(f"tasks.{index}.event_type: '{task.event_type}' never occurs in the logs ({where}); "
                                 "its labels would all be 0")

    def _check_vertex_names(self) -> None:
        """Names built from two fields (see configs.vertex_names) stay within Vertex's limits."""
        for index, target in enumerate(self.targets):
            problem = training_job_name_problem(self.name, target.name)
            if problem:  # a sweep point's name is its target's with `-x<N>`: the field to shorten is the same
                raise ValueError(f"targets.{configured_index(self.targets, index)}.name: {problem}")
        experiment = self.vertex.experiment if self.vertex else None
        problem = experiment_run_problem(experiment, self.name) if experiment else ""
        if problem:
            raise ValueError(f"vertex.experiment: {problem}")

    def target(self, name: str) -> TargetConfig:
        return find_target(self.targets, name)

    def retraining_target(self) -> TargetConfig:
        """The production target the retraining pipeline trains; a config without one cannot build that pipeline."""
        if self.retraining.target is None:
            raise ConfigError(f"retraining.target: config '{self.name}' names no production target; the retraining "
                              "pipeline trains one (e.g. `retraining: {target: NAME}`, NAME one of "
                              f"{[t.name for t in self.targets]}; the benchmark report suggests one)")
        return self.target(self.retraining.target)

    def batch_size(self, target: TargetConfig) -> int:
        """The global batch `target` trains with (`configs.training.effective_batch_size`)."""
        return effective_batch_size(self.training, target)
