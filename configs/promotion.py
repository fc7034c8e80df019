"""When a daily run's best model becomes the default version in the model registry."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from configs.base import StrictModel


class PromotionConfig(StrictModel):
    """After the report, the best run's model (the challenger) and the current default (the champion) are both
    scored, through their raw serving signatures, on today's eval examples. The challenger becomes the default
    when the upper end of the 95% confidence interval of the paired per-example log-loss difference
    (challenger − champion) is at most `logloss_tolerance`: with 0.001, "not worse by more than 0.001 nats, with
    95% confidence" (a fresher model wins ties); with a negative value, "better by at least that much"."""

    enabled: bool = True
    logloss_tolerance: float = Field(
        0.001, ge=-1.0, le=1.0,
        description="largest upper 95% bound of mean(challenger − champion) log-loss that still promotes (nats)",
    )
    on_unscorable_champion: Literal["promote", "keep"] = Field(
        "promote", description="when the default cannot be loaded or cannot read today's features: promote the "
        "challenger (the champion could not serve today's traffic either) or keep the default",
    )
    local_registry: str = Field("runs/registry", description="the local backend's registry directory")
