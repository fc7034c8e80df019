"""The time split shared by the generator and the preprocess step: the last `eval_days` days are eval, and with
a history burn-in the first days are in no split."""

from __future__ import annotations

import datetime as dt

from components.logs.records import day_start_ms


def eval_start_ms(end_date_exclusive: dt.date, eval_days: int) -> int:
    """First millisecond of the eval split, for logs whose last day is `end_date_exclusive - 1 day`."""
    return day_start_ms(end_date_exclusive - dt.timedelta(days=eval_days))


def eval_start_for_latest(latest_timestamp_ms: int, eval_days: int) -> int:
    """The same boundary computed from the data: the day after the latest impression ends the logs."""
    latest_day = dt.datetime.fromtimestamp(latest_timestamp_ms / 1000, tz=dt.timezone.utc).date()
    return eval_start_ms(latest_day + dt.timedelta(days=1), eval_days)


def train_start_after_burn_in(earliest_timestamp_ms: int, burn_in_days: int) -> int:
    """First millisecond of the train split when the first `burn_in_days` UTC days, counted from the earliest
    impression's day, only feed history features (`split.history_burn_in_days`)."""
    earliest_day = dt.datetime.fromtimestamp(earliest_timestamp_ms / 1000, tz=dt.timezone.utc).date()
    return day_start_ms(earliest_day + dt.timedelta(days=burn_in_days))


def split_of(timestamp_ms: int, eval_start: int) -> str:
    return "eval" if timestamp_ms >= eval_start else "train"
