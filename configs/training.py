"""The model, how it trains, and the hardware targets it trains on."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from configs.base import StrictModel
from configs.vertex import VertexTargetSpec


class ModelConfig(StrictModel):
    kind: Literal["dcn", "linear"] = "dcn"
    embedding_dim: int = Field(8, ge=1)
    cross_layers: int = Field(2, ge=0)
    deep_layers: list[int] = Field(default_factory=lambda: [64, 32])


class TrainingConfig(StrictModel):
    global_batch_size: int = Field(512, ge=1)
    epochs: int = Field(2, ge=1)
    learning_rate: float = Field(0.003, gt=0)
    shuffle_buffer: int = Field(10000, ge=1)


class TargetConfig(StrictModel):
    """A hardware target. `kind` says what hardware it needs; what actually ran is read at run time."""

    name: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    kind: Literal["cpu", "gpu", "tpu", "cpu-ps"] = "cpu"
    global_batch_size: int | None = Field(None, ge=1, description="overrides training.global_batch_size")
    price_per_hour: float = Field(0.0, ge=0, description="USD per hour of the whole machine set, for cost")
    vertex: VertexTargetSpec | None = Field(None, description="the Vertex CustomJob machines (vertex backend)")
