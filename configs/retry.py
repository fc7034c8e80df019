"""How often a failed pipeline task is tried again, and how long to wait between tries.

Compiled into every task of the Vertex spec (`PipelineTask.set_retry`); `adrank run-spec` honours the same policy.
The first retry waits `backoff_seconds`, each later one `backoff_factor` times longer, never more than
`max_backoff_seconds` (KFP and Vertex cap this at one hour)."""

from __future__ import annotations

from pydantic import Field, model_validator

from configs.base import StrictModel

MAX_BACKOFF_SECONDS = 3600  # KFP's `backoff_max_duration` limit


class RetryConfig(StrictModel):
    max_retries: int = Field(2, ge=0, le=10, description="tries after the first failure; 0 fails at once")
    backoff_seconds: int = Field(60, ge=0, le=MAX_BACKOFF_SECONDS, description="wait before the first retry")
    backoff_factor: float = Field(2.0, ge=1.0, le=10.0, description="each later wait is this many times longer")
    max_backoff_seconds: int = Field(
        1800, ge=1, le=MAX_BACKOFF_SECONDS, description="the longest wait between two tries (at most one hour)",
    )

    @model_validator(mode="after")
    def _ordered(self) -> RetryConfig:
        if self.backoff_seconds > self.max_backoff_seconds:
            raise ValueError(f"backoff_seconds {self.backoff_seconds} is above max_backoff_seconds "
                             f"{self.max_backoff_seconds}")
        return self
