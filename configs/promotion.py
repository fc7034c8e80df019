"""When a daily run's best model becomes the default version in the model registry."""

from __future__ import annotations

from pydantic import Field

from configs.base import StrictModel


class PromotionConfig(StrictModel):
    """After the report, the best run's model is registered as a new version; it becomes the default
    only if its log-loss is not worse than the current default's by more than `logloss_tolerance`."""

    enabled: bool = True
    logloss_tolerance: float = Field(0.001, ge=0.0, description="absolute log-loss a new default may lose")
    local_registry: str = Field("runs/registry", description="the local backend's registry directory")
