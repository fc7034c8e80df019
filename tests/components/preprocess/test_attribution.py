"""Join and label semantics on Beam's TestPipeline (window edges, duplicates, early/late and orphan events), and the
column-wise join against `attribute` id by id on random logs."""

from __future__ import annotations

import json
import random

import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.error_handling import CollectingErrorHandler

from components.logs.readers import LogWindow
from components.preprocess.attribution import (
    DeduplicateOutcomes,
    EventTask,
    JoinEngagements,
    PlausibleTimes,
    attribute,
    attribute_batch,
    deduplicate_batch,
)
from components.preprocess.counters import Count
from components.preprocess.example_batches import ENGAGEMENT_SCHEMA, ImpressionColumns
from components.preprocess.parse import FeatureField
from components.preprocess.time_range import PlausibleRange

HOUR = 3_600_000
TASKS = (EventTask("label_swipe", "swipe", HOUR), EventTask("label_install", "install", 2 * HOUR))
OPTIONS = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]
COLUMNS = ImpressionColumns((FeatureField("ad", "categorical", "ad"),))
OUTCOME_COLUMNS = ImpressionColumns((FeatureField("ad", "categorical", "ad"),), ("label_x",))


def imp(i, t, **extra):
    return {"impression_id": i, "timestamp_ms": t, "_missing": [] if "ad" in extra else ["ad"], "ad": None, **extra}


def ev(i, kind, t):
    return {"impression_id": i, "event_type": kind, "timestamp_ms": t}


def impression_batches(rows, columns=COLUMNS, size=3):
    """The rows as record batches of `size` (several parts per partition, as a real job has)."""
    return [columns.from_records(rows[start:start + size]) for start in range(0, len(rows), size)]


def as_parts(batch, size=7):
    """`batch` as a partition's parts arrive: a table whose chunks are slices of `size` rows."""
    return pa.Table.from_batches([batch.slice(start, size) for start in range(0, batch.num_rows, size)])


def event_batches(rows):
    return [pa.RecordBatch.from_pylist(rows, schema=ENGAGEMENT_SCHEMA)]


def rows_of(batches):
    return batches | "Rows" >> beam.FlatMap(lambda batch: batch.to_pylist())




def joined(outcome: str) -> str:
    """The Beam key of a join counter."""
    return Count("join", subject=outcome).key


def labels_of(example):
    return example["impression_id"], example["label_swipe"], example["label_install"]


def test_window_edges_duplicates_orphans_and_several_tasks():
    impressions = [
        imp("edge", 0), imp("late", 0), imp("zero", 10 * HOUR), imp("early", 0),
        imp("dup", 5 * HOUR, ad="first"), imp("dup", 6 * HOUR, ad="second"), imp("dup", 5 * HOUR + 1, ad="third"),
        imp("both", 0), imp("none", 0),
    ]
    events = [
        ev("edge", "swipe", HOUR),  # exactly at the window end: positive
        ev("late", "swipe", HOUR + 1), ev("late", "install", 2 * HOUR),  # swipe late; install at its edge
        ev("zero", "swipe", 10 * HOUR),  # zero delay
        ev("early", "swipe", -1),  # before the impression
        ev("dup", "swipe", 5 * HOUR + 30),  # counted against the earliest duplicate
        ev("both", "swipe", 1), ev("both", "swipe", 2), ev("both", "install", 3), ev("both", "view", 4),
        ev("ghost", "swipe", 0), ev("ghost", "install", 0),  # orphans
    ]
    expected_labels = [
        ("edge", 1.0, 0.0), ("late", 0.0, 1.0), ("zero", 1.0, 0.0), ("early", 0.0, 0.0),
        ("dup", 1.0, 0.0), ("both", 1.0, 1.0), ("none", 0.0, 0.0),
    ]
    with TestPipeline(argv=OPTIONS) as p:
        examples, counters = (
            p | "I" >> beam.Create(impression_batches(impressions)), p | "E" >> beam.Create(event_batches(events))
        ) | JoinEngagements(TASKS, LogWindow(), COLUMNS.features, COLUMNS.schema, partitions=3)
        examples = rows_of(examples)
        assert_that(examples | "Labels" >> beam.Map(labels_of), equal_to(expected_labels), label="labels")
        kept = examples | beam.Filter(lambda e: e["impression_id"] == "dup") | beam.Map(lambda e: e["ad"])
        assert_that(kept, equal_to(["first"]), label="earliest duplicate kept")
        assert_that(
            counters | beam.CombinePerKey(sum),
            equal_to([
                (joined("duplicate_impressions"), 2), (joined("orphan_engagements"), 2),
                (joined("late_events:label_swipe"), 1), (joined("early_events:label_swipe"), 1),
                (joined("engagements_of_unused_type"), 1),
            ]),
            label="counters",
        )


def test_impressions_outside_the_lookback_window_are_dropped_and_counted():
    window = LogWindow(start_ms=HOUR, end_ms=3 * HOUR)
    with TestPipeline(argv=OPTIONS) as p:
        examples, counters = (
            p | "I" >> beam.Create(impression_batches([imp("before", 0), imp("start", HOUR), imp("end", 3 * HOUR)])),
            p | "E" >> beam.Create(event_batches([ev("before", "swipe", 10), ev("start", "swipe", HOUR + 5)])),
        ) | JoinEngagements(TASKS, window, COLUMNS.features, COLUMNS.schema, partitions=2)
        assert_that(rows_of(examples) | beam.Map(labels_of), equal_to([("start", 1.0, 0.0)]), label="kept")
        assert_that(
            counters | beam.CombinePerKey(sum),
            equal_to([(joined("impressions_outside_window"), 2),
                      (joined("engagements_of_impressions_outside_window"), 1)]),
            label="counters",
        )


def test_the_join_dead_letters_implausible_times_of_both_streams_before_it_attributes():
    day = 24 * HOUR
    impressions = [imp("near", 10 * day), imp("far", 13 * day, ad="x"), imp("ok", 10 * day + HOUR)]
    events = [ev("near", "swipe", 10 * day + 1), ev("ok", "swipe", 11 * day + 2 * HOUR + 1),  # past skew + late
              ev("ok", "install", 9 * day - 1)]  # before the median by more than the skew
    plausible_ranges = (PlausibleRange.of("impressions", 1, features=COLUMNS.features),
                        PlausibleRange.of("engagements", 1, 2 * HOUR))
    with TestPipeline(argv=OPTIONS) as p:
        median = p | "Median" >> beam.Create([10 * day])
        with CollectingErrorHandler() as dead_letters:
            examples, counters = (
                p | "I" >> beam.Create(impression_batches(impressions)),
                p | "E" >> beam.Create(event_batches(events)),
            ) | JoinEngagements(TASKS, LogWindow(), COLUMNS.features, COLUMNS.schema, partitions=2,
                                plausible=PlausibleTimes(median, *plausible_ranges, dead_letters))
        assert_that(rows_of(examples) | beam.Map(labels_of), equal_to([("near", 1.0, 0.0), ("ok", 0.0, 0.0)]),
                    label="examples")
        assert_that(dead_letters.output() | beam.Map(lambda d: (d["stream"], d["reason"], json.loads(d["raw"]))),
                    equal_to([("impressions", "timestamp_out_of_range",
                               {"impression_id": "far", "timestamp_ms": 13 * day, "ad": "x"}),
                              ("engagements", "timestamp_out_of_range", ev("ok", "swipe", 11 * day + 2 * HOUR + 1)),
                              ("engagements", "timestamp_out_of_range", ev("ok", "install", 9 * day - 1))]),
                    label="dead letters")
        assert_that(counters, equal_to([]), label="counters")  # no orphans: the out-of-range rows never joined


def test_single_table_rows_dedup_by_id_and_keep_rows_without_one():
    rows = [imp("a", 2, label_x=1.0), imp("a", 1, label_x=0.0), imp(None, 5, label_x=1.0), imp(None, 5, label_x=1.0)]
    with TestPipeline(argv=OPTIONS) as p:
        examples, counters = p | beam.Create(impression_batches(rows, OUTCOME_COLUMNS, 2)) | DeduplicateOutcomes(
            LogWindow(), OUTCOME_COLUMNS.features, OUTCOME_COLUMNS.schema, partitions=2)
        assert_that(
            rows_of(examples) | beam.Map(lambda e: (e["impression_id"], e["timestamp_ms"], e["label_x"])),
            equal_to([("a", 1, 0.0), (None, 5, 1.0), (None, 5, 1.0)]),
            label="rows",
        )
        assert_that(counters, equal_to([(joined("duplicate_impressions"), 1)]), label="counters")


def random_streams(seed: int) -> tuple[list[dict], list[dict]]:
    """Impressions with duplicate ids (some at the same time, with different values), events of every kind, orphans."""
    rng = random.Random(seed)
    impressions = [imp(f"i{rng.randrange(60)}", rng.randrange(6) * HOUR // 2, **({"ad": rng.choice(["a", "b"])}
                                                                                 if rng.random() < 0.7 else {}))
                   for _ in range(120)]
    events = [ev(f"i{rng.randrange(70)}", rng.choice(["swipe", "install", "view"]), rng.randrange(-2, 12) * HOUR // 2)
              for _ in range(200)]
    return impressions, events


@pytest.mark.parametrize("seed", range(4))
def test_the_column_wise_join_is_attribute_id_by_id(seed):
    impressions, events = random_streams(seed)
    window = LogWindow(start_ms=HOUR // 2, end_ms=5 * HOUR // 2) if seed % 2 else LogWindow()
    expected, counts = [], {}
    for key in sorted({r["impression_id"] for r in impressions} | {e["impression_id"] for e in events}):
        example, counted = attribute([r for r in impressions if r["impression_id"] == key],
                                     [e for e in events if e["impression_id"] == key], TASKS, window)
        if example is not None:
            expected.append({k: v for k, v in example.items() if k != "_missing"})
        for name, n in counted.items():
            counts[name] = counts.get(name, 0) + n
    rows = COLUMNS.from_records(impressions)
    for given in (rows, as_parts(rows)):  # one batch, or a partition's parts as a table's chunks
        batch, got = attribute_batch(given, event_batches(events)[0], TASKS, window, COLUMNS.features)
        assert isinstance(batch, pa.RecordBatch)
        assert batch.to_pylist() == expected  # sorted by id, the earliest duplicate kept (ties: by the record's JSON)
        assert got == counts


def test_the_column_wise_deduplication_is_attribute_row_by_row():
    rng = random.Random(9)
    rows = [imp(rng.choice([None, "a", "b", "c"]), rng.randrange(4) * HOUR, ad=rng.choice(["x", "y"]),
                label_x=float(rng.random() < 0.5)) for _ in range(40)]
    window = LogWindow(start_ms=HOUR, end_ms=3 * HOUR)
    expected, counts = [], {}
    keyed = sorted({r["impression_id"] for r in rows if r["impression_id"] is not None})
    groups = [[r] for r in rows if r["impression_id"] is None] + [
        [r for r in rows if r["impression_id"] == key] for key in keyed]
    for group in groups:
        example, counted = attribute(group, [], (), window)
        if example is not None:
            expected.append({k: v for k, v in example.items() if k != "_missing"})
        for name, n in counted.items():
            counts[name] = counts.get(name, 0) + n
    key = lambda e: (e["impression_id"] or "", e["timestamp_ms"], e["ad"], e["label_x"])  # noqa: E731
    given = OUTCOME_COLUMNS.from_records(rows)
    identified = OUTCOME_COLUMNS.from_records([r for r in rows if r["impression_id"] is not None])
    for batch_of, rows_of_ids in ((given, identified), (as_parts(given), as_parts(identified))):
        batch, got = deduplicate_batch(batch_of, window, OUTCOME_COLUMNS.features)
        assert sorted(batch.to_pylist(), key=key) == sorted(expected, key=key)
        assert got == counts
        # a partition's rows (all with an id): sorted by it
        by_id, _ = deduplicate_batch(rows_of_ids, window, OUTCOME_COLUMNS.features)
        assert isinstance(by_id, pa.RecordBatch)
        assert by_id.column("impression_id").to_pylist() == sorted(by_id.column("impression_id").to_pylist())
