"""Where ad-engagement logs come from and how impressions become labelled examples.

Two label modes:
  `engagements`: two streams, impressions and engagement events; a task's label is 1 when an event of its
                 `event_type` follows the impression within `attribution_window_seconds` (both edges inclusive).
  `outcome`:     one table whose rows already carry the outcome; a task's label is a column's value
                 (`positive_when: truthy`) or whether a column is set (`positive_when: present`),
                 e.g. a click log's `attributed_time`.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import Field, model_validator

from configs.base import StrictModel
from configs.bounds import at_most
from configs.preprocess import EXAMPLES_REASON, MAX_EXAMPLES

EVENT_TYPES = ("swipe", "view", "install", "purchase")
NAME = r"^[a-z][a-z0-9_]*$"

# The names adrank uses for the fields it needs besides features; `*_fields` maps them (and feature names)
# to the columns of the source when those are spelled differently.
IMPRESSION_ID = "impression_id"
TIMESTAMP = "timestamp"
EVENT_TYPE = "event_type"
EVENT_ID = "event_id"

MAX_DAYS = 366
DAYS_REASON = "days of logs; a window above a year (ten for lookbacks) is a typo"
MAX_SYNTHETIC_ENTITIES = 10**8
SYNTHETIC_REASON = "the generator writes and holds this many on this machine before preprocess"


class SyntheticDriftConfig(StrictModel):
    """How the synthetic ad server changes from one day to the next (for daily retraining and its replay).

    All zero (the default): every day follows the same hidden model, and the logs are byte for byte what they
    were before drift existed. The first day is never drifted; each later day moves from the one before it.
    `ground_truth.json` records, per day, the base log-odds shift, the ids that appeared and the Bayes floor.
    """

    base_rate_step: float = Field(
        0.0, ge=0.0, le=3.0,
        description="std of the day-to-day random-walk step of the engagement base log-odds (moves every event's "
        "rate: 0.3 moves the click rate by about 30% a day)",
    )
    effect_drift: float = Field(
        0.0, ge=0.0, le=1.0,
        description="share of each per-id and interaction effect's variance redrawn every day (0: stable effects, "
        "1: new effects each day); the effects' spread stays the same",
    )
    new_users_per_day: Annotated[int, at_most(MAX_SYNTHETIC_ENTITIES, SYNTHETIC_REASON)] = Field(
        0, ge=0, description="users first seen on each day after the first")
    new_ads_per_day: Annotated[int, at_most(MAX_SYNTHETIC_ENTITIES, SYNTHETIC_REASON)] = Field(
        0, ge=0, description="ads first served on each day after the first")

    @property
    def enabled(self) -> bool:
        return bool(self.base_rate_step or self.effect_drift or self.new_users_per_day or self.new_ads_per_day)


class SyntheticHistoryConfig(StrictModel):
    """Clicks that depend on a user's and an ad's recent history (components/logs/history_effects.py); all zero
    (the default): no such effect, the logs are what they were without it."""

    user_propensity_std: float = Field(
        0.0, ge=0.0, le=3.0, description="std of the daily step of each user's latent log-odds propensity",
    )
    persistence: float = Field(
        0.5, ge=0.0, lt=1.0, description="share of yesterday's user propensity kept today (AR(1) coefficient)",
    )
    ad_fatigue: float = Field(
        0.0, ge=0.0, le=3.0, description="log-odds lost per log1p(earlier exposures of the same user to the same ad)",
    )

    @property
    def enabled(self) -> bool:
        return bool(self.user_propensity_std or self.ad_fatigue)


class SyntheticLogsConfig(StrictModel):
    """Size and shape of the synthetic ad server that `adrank logs generate` simulates.

    The defaults write a click-rate (~10% swipes) log with few ids; `configs/examples/low_rate.yaml` shows the
    shape of install/conversion logs (0.1-0.5% positives, Zipf ids with a long tail seen once, strong per-id
    effects, a base rate that moves between days).
    """

    start_date: dt.date = dt.date(2026, 1, 1)
    days: Annotated[int, at_most(MAX_DAYS, DAYS_REASON)] = Field(4, ge=2)
    users: Annotated[int, at_most(MAX_SYNTHETIC_ENTITIES, SYNTHETIC_REASON)] = Field(2000, ge=10)
    ads: Annotated[int, at_most(MAX_SYNTHETIC_ENTITIES, SYNTHETIC_REASON)] = Field(300, ge=10)
    advertisers: Annotated[int, at_most(MAX_SYNTHETIC_ENTITIES, SYNTHETIC_REASON)] = Field(40, ge=2)
    impressions_per_day: Annotated[int, at_most(MAX_SYNTHETIC_ENTITIES, SYNTHETIC_REASON)] = Field(20000, ge=100)
    interests: Annotated[int, at_most(MAX_SYNTHETIC_ENTITIES, SYNTHETIC_REASON)] = Field(
        50, ge=4, description="size of the user-interest vocabulary")
    max_interests_per_user: Annotated[int, at_most(4096, "interests listed on every impression")] = Field(6, ge=1)
    shards_per_stream: Annotated[int, at_most(
        10_000, "files per stream and day; more add file-system load, not parallelism")] = Field(2, ge=1)
    malformed_fraction: float = Field(
        0.0, ge=0.0, le=0.5, description="share of extra corrupt log lines, to exercise the dead-letter path"
    )
    swipe_base_logit: float = Field(
        -2.6, ge=-12.0, le=2.0,
        description="log-odds of a swipe before per-id and interaction effects (-2.6: about 10% swipes; installs "
        "and purchases follow swipes, so this moves every event's rate)",
    )
    id_effect_scale: float = Field(
        1.0, ge=0.0, le=5.0, description="multiplies the spread of the per-user, per-ad and per-advertiser effects",
    )
    user_zipf_exponent: float = Field(
        0.7, ge=0.0, le=3.0, description="impressions per user follow Zipf with this exponent (higher: heavier head)"
    )
    ad_zipf_exponent: float = Field(0.9, ge=0.0, le=3.0, description="impressions per ad follow Zipf")
    drift: SyntheticDriftConfig = SyntheticDriftConfig()
    history: SyntheticHistoryConfig = SyntheticHistoryConfig()


class LogsConfig(StrictModel):
    """`synthetic`: the local DAG generates logs first. `files`: the logs already exist (files or BigQuery)."""

    source: Literal["synthetic", "files"] = "synthetic"
    synthetic: SyntheticLogsConfig = SyntheticLogsConfig()
    label_mode: Literal["engagements", "outcome"] = "engagements"
    format: Literal["jsonl", "csv", "parquet", "bigquery"] = "jsonl"
    impressions: str | None = Field(
        None,
        description="path glob of impression logs (or of the one outcome table); may contain {date} (YYYY-MM-DD), "
        "expanded per day of the lookback; `*` (and `**`) match, every other character is itself (`?`, `[` and `]` "
        "too). With format bigquery: a table `project.dataset.table` or a SQL query",
    )
    engagements: str | None = Field(None, description="path glob (or BigQuery table/query) of engagement events")
    impression_fields: dict[str, str] = Field(
        default_factory=dict, description="adrank name (impression_id, timestamp, a feature) → column in the source"
    )
    engagement_fields: dict[str, str] = Field(
        default_factory=dict, description="adrank name (impression_id, event_type, timestamp, event_id) → column"
    )
    timestamp_format: str = Field(
        "rfc3339",
        description="rfc3339 (ISO 8601; naive = UTC), epoch_seconds, epoch_millis, or a strptime pattern with '%'",
    )
    csv_delimiter: str = Field(",", min_length=1, max_length=1)
    max_record_bytes: Annotated[int, at_most(
        2**30, "a record is held in memory whole while it is read and parsed")] = Field(
        65_536, ge=64, description="a JSONL line or a one-line CSV record longer than this is a dead letter "
        "(record_too_large) keeping its first KiB; a CSV record spanning lines inside quotes is cut back past it "
        "(see max_record_lines)",
    )
    max_record_lines: Annotated[int, at_most(
        1_000_000, "a record is held in memory whole while its quote is open")] = Field(
        64, ge=1, description="a CSV record whose quoted field is still open after this many physical lines (or "
        "max_record_bytes) is cut back to its first line, a bad_csv_row dead letter, and reading restarts at the "
        "next line: one unbalanced quote costs one row",
    )
    event_types: list[str] = Field(
        default_factory=lambda: list(EVENT_TYPES), description="known event types; others are dead letters"
    )
    lookback_days: Annotated[int | None, at_most(MAX_DAYS * 10, DAYS_REASON)] = Field(
        None, ge=1, description="with a window end (scheduled runs), read only this many days of logs before it"
    )
    max_timestamp_skew_days: Annotated[float | None, at_most(MAX_DAYS * 10, DAYS_REASON)] = Field(
        366, gt=0, description="records stamped further than this from the median impression time are dead letters "
        "(timestamp_out_of_range); engagements may be later by the longest attribution window. null: no check",
    )

    @model_validator(mode="after")
    def _files_need_paths(self) -> LogsConfig:
        if self.source == "files":
            if not self.impressions:
                raise ValueError("source 'files' needs an 'impressions' path glob (or BigQuery table/query)")
            if self.label_mode == "engagements" and not self.engagements:
                raise ValueError("label_mode 'engagements' with source 'files' needs an 'engagements' path glob")
        if self.source == "synthetic" and (self.label_mode != "engagements" or self.format != "jsonl"):
            raise ValueError("source 'synthetic' writes two JSONL streams: use label_mode engagements, format jsonl")
        return self

    def impression_column(self, name: str) -> str:
        return self.impression_fields.get(name, name)

    def engagement_column(self, name: str) -> str:
        return self.engagement_fields.get(name, name)


class TaskConfig(StrictModel):
    """One label. Engagements mode: an event of `event_type` within the window after the impression.
    Outcome mode: the row's `label_column` (truthy value, or merely present)."""

    name: str = Field(pattern=NAME)
    event_type: str | None = Field(None, min_length=1)
    attribution_window_seconds: Annotated[int, at_most(
        MAX_DAYS * 86_400, "engagements are read this much past the impression window (a file pattern per day)",
    )] = Field(3600, gt=0)
    label_column: str | None = Field(None, min_length=1)
    positive_when: Literal["truthy", "present"] = "truthy"

    @model_validator(mode="after")
    def _one_label_source(self) -> TaskConfig:
        if (self.event_type is None) == (self.label_column is None):
            raise ValueError(f"task '{self.name}' needs exactly one of 'event_type' (engagements) or 'label_column' (outcome)")
        return self


class SplitConfig(StrictModel):
    """Time split: the last `eval_days` days of impressions are the evaluation split."""

    eval_days: Annotated[int, at_most(MAX_DAYS, DAYS_REASON)] = Field(1, ge=1)
    min_train_examples: Annotated[int, at_most(MAX_EXAMPLES, EXAMPLES_REASON)] = Field(
        1, ge=1, description="preprocess fails when the train split has fewer examples")
    min_eval_examples: Annotated[int, at_most(MAX_EXAMPLES, EXAMPLES_REASON)] = Field(
        1, ge=1, description="preprocess fails when the eval split has fewer examples")
    calibration_days: Annotated[int, at_most(MAX_DAYS, DAYS_REASON)] = Field(
        0, ge=0, description="also write the last N days of the train split as the `calibration` split (transformed, "
        "still part of train), which `training.calibration_data: latest_train_days` fits the calibration step on; "
        "0 writes none",
    )
    history_burn_in_days: Annotated[int, at_most(MAX_DAYS, DAYS_REASON)] = Field(
        0, ge=0, description="leave the first N days of the logs read out of the train split: their examples feed "
        "`kind: history` features (a later example's history reaches back into them) but are not trained on, so "
        "every train example has as many days of history behind it as an eval example (docs/history_features.md); "
        "0 trains on every day before eval",
    )
