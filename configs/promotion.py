"""When a daily run's best model becomes the default version in the model registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from configs.base import StrictModel

DEFAULT_RELATIVE_TOLERANCE = 0.001
ToleranceForm = Literal["relative", "absolute"]


class PromotionConfig(StrictModel):
    """After the report, the best run's model (the challenger) and the current default (the champion) are both
    scored, through their raw serving signatures, on today's eval examples. The challenger becomes the default
    when the upper end of the 95% confidence interval of the paired per-example log-loss difference
    (challenger − champion) is at most the tolerance, stated in one of two forms:

    - `logloss_tolerance_relative` (the default, 0.001): a fraction of the champion's log-loss on those same
      examples, so the gate means the same at a 10% click rate and at a 0.2% install rate (0.1% of 0.35 nats
      and 0.1% of 0.0075 nats). Both models are scored on the same examples, so this is also the tolerance on
      their normalized entropy (NE = log-loss / entropy of the examples' base rate, one denominator for both).
    - `logloss_tolerance` (absolute nats): set it instead to keep a fixed threshold, right only where the
      log-loss level never moves (a frozen benchmark set).

    Negative values mean "better by at least that much, with 95% confidence". Setting both is an error.

    The interval is a paired bootstrap over the eval examples (`components.registry.paired_bootstrap`), which holds
    when a few positives carry the difference; and below `min_eval_positives` positives of the task the rule judges,
    no interval is trusted: the champion stays unless `on_few_positives: promote` says otherwise."""

    enabled: bool = True
    logloss_tolerance_relative: float | None = Field(
        DEFAULT_RELATIVE_TOLERANCE, ge=-0.5, le=0.5,
        description="largest upper 95% bound of mean(challenger − champion) log-loss that still promotes, as a "
        "fraction of the champion's log-loss on the same examples (0.001 = 0.1%)",
    )
    logloss_tolerance: float | None = Field(
        None, ge=-1.0, le=1.0,
        description="the same bound in absolute nats; set it instead of logloss_tolerance_relative",
    )
    on_unscorable_champion: Literal["promote", "keep"] = Field(
        "keep", description="when the default cannot be loaded or cannot read today's features: keep the default "
        "(registry unchanged, the decision and a console warning say why) or promote the challenger without a "
        "comparison (an explicit choice: the champion could not serve today's traffic either)",
    )
    min_eval_positives: int = Field(
        100, ge=1, le=10_000_000,
        description="fewest eval positives of the primary task a challenger may be promoted on over a champion: "
        "below it a few examples carry the whole difference and no interval of it is trustworthy",
    )
    on_few_positives: Literal["keep", "promote"] = Field(
        "keep", description="when the eval split has fewer than min_eval_positives positives: keep the champion "
        "(the decision says why) or promote by the rule anyway (an explicit choice, e.g. for a rare event whose "
        "every day is small)",
    )
    bootstrap_resamples: int = Field(
        2000, ge=200, le=100_000,
        description="resamples of the paired bootstrap behind the 95% interval (seeded: the same examples and "
        "models give the same interval)",
    )
    scoring_batch_size: int = Field(
        4096, ge=1, le=1_000_000,
        description="eval examples per scoring batch: both models are scored batch by batch, never the whole day "
        "in memory",
    )
    max_eval_examples: int | None = Field(
        None, ge=2, le=10_000_000_000,
        description="score at most this many eval examples (the first ones in file order); None: all of them",
    )
    local_registry: str = Field("runs/registry", description="the local backend's registry directory")

    @model_validator(mode="before")
    @classmethod
    def _absolute_replaces_relative(cls, data: Any) -> Any:
        """An absolute tolerance given without a relative one replaces the relative default."""
        if isinstance(data, dict) and data.get("logloss_tolerance") is not None \
                and "logloss_tolerance_relative" not in data:
            return {**data, "logloss_tolerance_relative": None}
        return data

    @model_validator(mode="after")
    def _one_tolerance(self) -> PromotionConfig:
        if self.logloss_tolerance is not None and self.logloss_tolerance_relative is not None:
            raise ValueError("logloss_tolerance_relative and logloss_tolerance are both set: keep one "
                             "(relative: a fraction of the champion's log-loss; absolute: nats)")
        if self.logloss_tolerance is None and self.logloss_tolerance_relative is None:
            raise ValueError("set logloss_tolerance_relative (a fraction of the champion's log-loss) or "
                             "logloss_tolerance (nats)")
        return self

    def registry_overrides(self, registry: Path) -> list[str]:
        """The `--set` that moves a registry left at its default (`runs/registry`) to `registry`, so runs and
        their registry stay together; none when the config names its own."""
        if self.local_registry != type(self).model_fields["local_registry"].default:
            return []
        return [f"promotion.local_registry={json.dumps(str(registry.resolve()))}"]  # a JSON string is a YAML one

    @property
    def tolerance_form(self) -> ToleranceForm:
        return "absolute" if self.logloss_tolerance is not None else "relative"

    def tolerance_nats(self, champion_logloss: float) -> float:
        """The tolerance in nats against a champion with this log-loss on the eval examples."""
        if self.logloss_tolerance is not None:
            return self.logloss_tolerance
        assert self.logloss_tolerance_relative is not None
        return self.logloss_tolerance_relative * champion_logloss

    def stated_tolerance(self) -> str:
        """The tolerance as the config states it, for the rule in words."""
        if self.logloss_tolerance is not None:
            return f"{self.logloss_tolerance:g} nats (promotion.logloss_tolerance)"
        return (f"{self.logloss_tolerance_relative:g} × the champion's log-loss "
                "(promotion.logloss_tolerance_relative)")
