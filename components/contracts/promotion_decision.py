"""The promotion step's record: what was registered and whether the challenger became the default, with the figures
the rule weighed (`components.registry.promotion_rule`); what `runs show`, the reports and the Experiment show."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from components.contracts.base import Contract
from configs.promotion import ToleranceForm

DECISION_FILE = "promotion.json"


ChampionStatus = Literal["none", "scored", "unscorable"]


class PromotionDecision(Contract):
    """The decision record: the promotion step's output, what `runs show`, the reports and the Experiment show."""

    model: str
    version: str | None = Field(description="the registered version; None when nothing was registered")
    registered: bool
    promoted: bool = Field(description="the challenger became the default version")
    reason: str
    rule: str = Field(description="the rule in words, with its tolerance")
    tolerance: float | None = Field(description="the tolerance applied, in nats (a relative tolerance times the "
                                    "champion's log-loss); None when no champion was scored under a relative one")
    tolerance_relative: float | None = Field(
        None, description="the same tolerance as a fraction of the champion's log-loss on the eval examples")
    tolerance_form: ToleranceForm = Field(
        "absolute", description="how the config states it (records written before relative tolerances: absolute)")
    challenger_target: str
    challenger_run_index: int
    challenger_model_uri: str
    challenger_logloss: float | None = Field(description="on today's eval examples, through the raw serving signature")
    champion_version: str | None = None
    champion_status: ChampionStatus
    champion_logloss: float | None = Field(None, description="the champion on the same examples")
    difference: float | None = Field(None, description="mean per-example log-loss, challenger − champion")
    difference_ci95: tuple[float, float] | None = None
    relative_difference: float | None = Field(None, description="difference / champion log-loss")
    relative_difference_ci95: tuple[float, float] | None = None
    eval_examples: int
    eval_examples_cap: int | None = Field(None, description="promotion.max_eval_examples when it applied")
    eval_positives: int
    eval_positives_by_task: dict[str, int] = Field(
        default_factory=dict, description="eval positives of every task (the primary one's is `eval_positives`)")
    min_eval_positives: int | None = Field(None, description="promotion.min_eval_positives when decided")
    interval_method: str | None = Field(None, description="how difference_ci95 was made")
    primary_task: str
    day: str | None = Field(None, description="the last UTC day of the window the run read (YYYY-MM-DD): the key of "
                            "the day's decision; None for a run that read every day")
    model_resource_name: str | None = Field(
        None, description="the registry model (Vertex: projects/P/locations/L/models/ID)")
    decided_by: str | None = Field(
        None, description="the pipeline job that took this day's decision, when known (Vertex)")
    reused: bool = Field(False, description="this run found the day's decision already recorded and registered "
                         "nothing new")

    def write(self, path: str | Path) -> None:
        Path(path).write_text(self.model_dump_json(indent=2))

    @classmethod
    def read(cls, path: str | Path) -> PromotionDecision:
        return cls.model_validate_json(Path(path).read_text())

    def metrics(self) -> dict[str, float]:
        """The figures a Vertex Experiment charts across days (scalars only; absent figures left out)."""
        values = {
            "challenger_logloss": self.challenger_logloss, "champion_logloss": self.champion_logloss,
            "difference": self.difference, "eval_examples": float(self.eval_examples),
            "eval_positives": float(self.eval_positives), "promoted": float(self.promoted),
        }
        if self.difference_ci95 is not None:
            values["difference_ci95_low"], values["difference_ci95_high"] = self.difference_ci95
        if self.relative_difference_ci95 is not None:
            values["relative_difference"] = self.relative_difference
            values["relative_difference_ci95_high"] = self.relative_difference_ci95[1]
        if self.tolerance is not None:
            values["tolerance"] = self.tolerance
        return {name: float(value) for name, value in values.items() if value is not None}
