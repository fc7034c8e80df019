"""How adrank writes a moment in UTC to the whole second: a window end, a schedule time, a pipeline job's times."""

from __future__ import annotations

import datetime as dt


def format_utc_seconds(moment: dt.datetime) -> str:
    """RFC 3339 in UTC to the whole second with a `Z` (`2026-01-04T00:00:00Z`): a window end, a schedule time."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
