"""The train → report contract: one `RunSummary` JSON per training run."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

SUMMARY_FILE = "run_summary.json"


class HardwareSeen(BaseModel):
    """What the runtime reported, never what the target asked for."""

    model_config = ConfigDict(extra="forbid")

    device_kind: str = Field(description="'CPU', 'GPU' or 'TPU', from tf.config / the TPU resolver")
    device_count: int
    device_names: list[str] = Field(default_factory=list)
    device_descriptions: list[str] = Field(default_factory=list, description="e.g. GPU model names")
    strategy: str
    replicas: int
    host: str = ""


class TaskMetrics(BaseModel):
    model_config = ConfigDict(extra="forbid")

    logloss: float
    auc: float
    normalized_entropy: float
    calibration: float = Field(description="mean prediction / observed positive rate")
    examples: int
    positive_rate: float
    roc: list[tuple[float, float, float]] = Field(
        default_factory=list, description="(fpr, tpr, threshold) points, see components.evaluate.metrics.roc_curve"
    )


class CurvePoint(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: int
    loss: float
    eval_logloss: float | None = None


class RunSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: str
    target_kind: str
    run_index: int
    seed: int
    hardware: HardwareSeen
    model_kind: str
    global_batch_size: int
    learning_rate: float
    steps: int
    epochs: int
    train_examples: int
    wall_time_seconds: float
    examples_per_second: float
    input_stall_fraction: float | None = Field(None, description="share of step time spent waiting for input")
    metrics: dict[str, TaskMetrics]
    curve: list[CurvePoint] = Field(default_factory=list)
    model_uri: str = ""

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
