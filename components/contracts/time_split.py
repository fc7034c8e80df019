"""The train → report record of where a training run's wall time went, phase by phase (`RunSummary.time_split`;
the phases and how they are timed: `components.train.run_clock`)."""

from __future__ import annotations

from pydantic import Field

from components.contracts.base import Contract

PHASES = ("startup", "input_wait", "training", "evaluation", "checkpoints", "input_check", "export")


class TimeSplit(Contract):
    """A run's wall time by phase, in seconds (`components.train.run_clock`); `other` is what no phase holds."""

    startup: float = 0.0
    input_wait: float = 0.0
    training: float = 0.0
    evaluation: float = 0.0
    checkpoints: float = 0.0
    input_check: float = 0.0
    export: float = 0.0
    other: float = 0.0
    steady_steps: int = Field(0, description="train steps inside `training` (the first execution is start-up)")

    @property
    def wall(self) -> float:
        return sum(getattr(self, phase) for phase in PHASES) + self.other

    def overhead_share(self) -> float | None:
        """The share of the run's wall time that was not training steps."""
        return None if self.wall <= 0 else 1.0 - self.training / self.wall

    def with_export(self, seconds: float) -> TimeSplit:
        """This split with `seconds` of export added (an export step that ran after the training process)."""
        return self.model_copy(update={"export": self.export + seconds})
