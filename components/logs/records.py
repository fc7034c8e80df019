"""The raw log records an ad server emits: impressions and the engagement events that follow them.

Both streams are JSON lines. Timestamps are RFC 3339 UTC strings with milliseconds.
"""

from __future__ import annotations

import datetime as dt

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def format_timestamp(epoch_ms: int) -> str:
    moment = _EPOCH + dt.timedelta(milliseconds=int(epoch_ms))
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_timestamp(text: str) -> int:
    """RFC 3339 / ISO 8601 (a trailing Z, an offset, or naive = UTC) → epoch milliseconds."""
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return int(round((moment - _EPOCH).total_seconds() * 1000))


def day_start_ms(day: dt.date) -> int:
    return int((dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc) - _EPOCH).total_seconds() * 1000)
