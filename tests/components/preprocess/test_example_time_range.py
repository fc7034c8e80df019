"""The examples' time range from ids and times alone (`attribution.ExampleTimeRange`, what the time split takes its
dates from) against the examples the join makes of the same impressions: duplicates (the earliest time kept),
the window's edges and implausible times, on random logs."""

from __future__ import annotations

import random

import apache_beam as beam
import pyarrow as pa
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.error_handling import CollectingErrorHandler

from components.logs.readers import LogWindow
from components.preprocess.attribution import EventTask, ExampleTimeRange, JoinEngagements, PlausibleTimes
from components.preprocess.example_batches import ENGAGEMENT_SCHEMA, ImpressionColumns
from components.preprocess.parse import FeatureField
from components.preprocess.time_range import PlausibleRange

HOUR = 3_600_000
DAY = 24 * HOUR
TASKS = (EventTask("label_swipe", "swipe", HOUR),)
OPTIONS = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]
COLUMNS = ImpressionColumns((FeatureField("ad", "categorical", "ad"),))


def _impressions(seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(60):
        for _ in range(rng.choice([1, 1, 2, 3])):  # duplicate ids, some far apart, some implausible
            t = 10 * DAY + rng.randrange(-3 * DAY, 3 * DAY) if rng.random() > 0.1 else 40 * DAY
            rows.append({"impression_id": f"i{i}", "timestamp_ms": t, "_missing": [], "ad": f"a{rng.randrange(3)}"})
    rng.shuffle(rows)
    return rows


def test_the_time_range_of_ids_and_times_is_the_joined_examples_range():
    window = LogWindow(start_ms=7 * DAY, end_ms=13 * DAY)  # wider than the plausible 8-12 days
    ranges = (PlausibleRange.of("impressions", 2, features=COLUMNS.features), PlausibleRange.of("engagements", 2))
    with TestPipeline(argv=OPTIONS) as p:
        with CollectingErrorHandler() as dead_letters:
            for seed in range(3):
                rows = _impressions(seed)
                batches = [COLUMNS.from_records(rows[s:s + 7]) for s in range(0, len(rows), 7)]
                impressions = p | f"I{seed}" >> beam.Create(batches)
                events = p | f"E{seed}" >> beam.Create([pa.RecordBatch.from_pylist([], schema=ENGAGEMENT_SCHEMA)])
                median = p | f"Median{seed}" >> beam.Create([10 * DAY])
                plausible = PlausibleTimes(median, *ranges, dead_letters)
                examples, _ = (impressions, events) | f"Join{seed}" >> JoinEngagements(
                    TASKS, window, COLUMNS.features, COLUMNS.schema, 3, plausible)
                times = (examples | f"Times{seed}" >> beam.FlatMap(lambda b: b.column("timestamp_ms").to_pylist())
                         | f"Range{seed}" >> beam.combiners.ToList() | f"MinMax{seed}" >> beam.Map(
                             lambda ts: (min(ts), max(ts))))
                narrow = (impressions | f"ExampleTimes{seed}" >> ExampleTimeRange(window, 2, plausible)
                          | f"Pairs{seed}" >> beam.combiners.ToList()
                          | f"Both{seed}" >> beam.Map(lambda ps: (min(p[0] for p in ps), max(p[1] for p in ps))))
                expected = _expected(rows, window, ranges[0], 10 * DAY)
                assert_that(times, equal_to([expected]), label=f"joined{seed}")
                assert_that(narrow, equal_to([expected]), label=f"narrow{seed}")
        _ = dead_letters.output()  # the implausible rows, checked by test_attribution


def _expected(rows: list[dict], window: LogWindow, plausible: PlausibleRange, median: int) -> tuple[int, int]:
    """Each id's earliest plausible time, kept in the window: their min and max (the test's own reckoning)."""
    earliest: dict[str, int] = {}
    for row in rows:
        t = row["timestamp_ms"]
        if abs(t - median) <= plausible.skew_ms:
            earliest[row["impression_id"]] = min(t, earliest.get(row["impression_id"], t))
    kept = [t for t in earliest.values() if window.start_ms <= t < window.end_ms]
    return min(kept), max(kept)
