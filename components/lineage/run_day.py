"""The day a Vertex run reads: its window end, resolved once per run, and the day that names its decision.

What decides the window, first match wins:

    the pipeline's `window_end` parameter   `adrank submit` passes the time it submits, `--param window_end=…` a day
    the run's scheduled time                `{{$.pipeline_job_schedule_time_utc}}` of a run a schedule started
    the time this step runs                 a run nobody scheduled may get the placeholder empty or unresolved

and the window end is that time rounded **down to a UTC midnight**: a run reads whole days, the `logs.lookback_days`
before its window end. So every run of one day, whatever created it (the schedule, a retry, a catch-up after
`schedule resume --catch-up`, a `submit` at any hour, with any create time), hands preprocess the same
`window_end`, and Vertex's cache, keyed by the step's inputs, reuses what already finished that day.

The run's **day** is the last day the window holds (window end − 1 day), `2026-03-03` for a window ending
`2026-03-04T00:00:00Z`: the promotion records one decision per day under it, and the dated registry alias names
it (`champion-20260303`). (Open-source KFP fills the scheduled-time placeholder with the create time for a run no
schedule started; whatever Vertex fills in there, the rounding makes a day's inputs the same.)
"""

from __future__ import annotations

import datetime as dt

from foundation.utc_time import format_utc_seconds


def parse_utc(text: str) -> dt.datetime:
    """An RFC 3339 time (`Z`, an offset, or naive = UTC) as an aware UTC datetime; ValueError naming the text."""
    try:
        moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"'{text}' is not an RFC 3339 time (e.g. 2026-03-04T11:00:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc)


def day_boundary(moment: dt.datetime) -> dt.datetime:
    """The UTC midnight at or before `moment`."""
    utc = moment.astimezone(dt.timezone.utc)
    return dt.datetime(utc.year, utc.month, utc.day, tzinfo=dt.timezone.utc)


def resolved_window_end(window_end: str, scheduled_time: str, now: dt.datetime) -> str:
    """The run's window end (RFC 3339, a UTC midnight) from what decides it (see the module docstring)."""
    if window_end.strip():
        decided = parse_utc(window_end)
    elif scheduled_time.strip() and not scheduled_time.startswith("{{"):
        decided = parse_utc(scheduled_time)
    else:
        decided = now
    return format_utc_seconds(day_boundary(decided))


def window_day(window_end: str) -> dt.date:
    """The last UTC day a window ending at `window_end` holds (the end is exclusive)."""
    return (parse_utc(window_end) - dt.timedelta(milliseconds=1)).date()


def day_stamp(day: dt.date | str) -> str:
    """`20260303`: a day as a label value and in the dated alias."""
    text = day.isoformat() if isinstance(day, dt.date) else day
    return text.replace("-", "")
