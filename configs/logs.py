"""Where ad-engagement logs come from and how impressions become labelled examples."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, model_validator

from configs.base import StrictModel

EVENT_TYPES = ("swipe", "view", "install", "purchase")


class SyntheticLogsConfig(StrictModel):
    """Size and shape of the synthetic ad server that `adrank logs generate` simulates."""

    start_date: dt.date = dt.date(2026, 1, 1)
    days: int = Field(4, ge=2, le=366)
    users: int = Field(2000, ge=10)
    ads: int = Field(300, ge=10)
    advertisers: int = Field(40, ge=2)
    impressions_per_day: int = Field(20000, ge=100)
    interests: int = Field(50, ge=4, description="size of the user-interest vocabulary")
    max_interests_per_user: int = Field(6, ge=1)
    shards_per_stream: int = Field(2, ge=1)
    malformed_fraction: float = Field(
        0.0, ge=0.0, le=0.5, description="share of extra corrupt log lines, to exercise the dead-letter path"
    )


class LogsConfig(StrictModel):
    """`synthetic`: the local DAG generates logs first. `files`: impressions and engagements already exist."""

    source: Literal["synthetic", "files"] = "synthetic"
    synthetic: SyntheticLogsConfig = SyntheticLogsConfig()
    format: Literal["jsonl"] = "jsonl"
    impressions: str | None = Field(None, description="path glob of impression logs (source: files)")
    engagements: str | None = Field(None, description="path glob of engagement-event logs (source: files)")

    @model_validator(mode="after")
    def _files_need_paths(self) -> LogsConfig:
        if self.source == "files" and not (self.impressions and self.engagements):
            raise ValueError("source 'files' needs both 'impressions' and 'engagements' path globs")
        return self


class TaskConfig(StrictModel):
    """One label: the impression is positive when an event of `event_type` follows it within the window."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    event_type: Literal["swipe", "view", "install", "purchase"]
    attribution_window_seconds: int = Field(3600, gt=0)


class SplitConfig(StrictModel):
    """Time split: the last `eval_days` days of impressions are the evaluation split."""

    eval_days: int = Field(1, ge=1)
