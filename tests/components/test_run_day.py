"""The day a Vertex run reads: what decides its window end, rounded down to a UTC midnight, and the day it names."""

from __future__ import annotations

import datetime as dt

import pytest

from components.lineage.run_day import day_stamp, resolved_window_end, window_day

NOW = dt.datetime(2026, 3, 9, 17, 45, 12, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize("window_end, scheduled_time, expected", [
    ("", "2026-03-04T11:00:00Z", "2026-03-04T00:00:00Z"),  # a scheduled run: its scheduled day
    ("", "2026-03-04T03:00:00-08:00", "2026-03-04T00:00:00Z"),  # 03:00 Los Angeles is 11:00 UTC
    ("", "2026-03-04T23:30:00-08:00", "2026-03-05T00:00:00Z"),  # ... and 23:30 there the next UTC day
    ("2026-03-04T17:30:00Z", "2026-03-09T17:45:12Z", "2026-03-04T00:00:00Z"),  # `submit --param` wins
    ("2026-03-04", "", "2026-03-04T00:00:00Z"),
    ("", "{{$.pipeline_job_schedule_time_utc}}", "2026-03-09T00:00:00Z"),  # unresolved: the time it runs
    ("", "", "2026-03-09T00:00:00Z"),
])
def test_every_run_of_a_day_resolves_the_same_window_end(window_end, scheduled_time, expected):
    assert resolved_window_end(window_end, scheduled_time, NOW) == expected


def test_the_day_is_the_last_one_the_window_holds():
    assert window_day("2026-03-04T00:00:00Z") == dt.date(2026, 3, 3)
    assert window_day("2026-03-04T11:00:00Z") == dt.date(2026, 3, 4)  # a window ending mid-day holds that day
    assert day_stamp(dt.date(2026, 3, 3)) == day_stamp("2026-03-03") == "20260303"


def test_a_window_end_that_is_no_time_is_an_error_naming_it():
    with pytest.raises(ValueError, match="'yesterday' is not an RFC 3339 time"):
        resolved_window_end("yesterday", "", NOW)
