"""Join and label semantics on Beam's TestPipeline: window edges, duplicates, early/late and orphan events."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from components.logs.readers import LogWindow
from components.preprocess.counters import Count
from components.preprocess.join import DeduplicateOutcomes, EventTask, JoinEngagements

HOUR = 3_600_000
TASKS = (EventTask("label_swipe", "swipe", HOUR), EventTask("label_install", "install", 2 * HOUR))
OPTIONS = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]


def imp(i, t, **extra):
    return {"impression_id": i, "timestamp_ms": t, "_missing": [], **extra}


def ev(i, kind, t):
    return {"impression_id": i, "event_type": kind, "timestamp_ms": t}




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
            p | "I" >> beam.Create(impressions), p | "E" >> beam.Create(events)
        ) | JoinEngagements(TASKS)
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
            p | "I" >> beam.Create([imp("before", 0), imp("start", HOUR), imp("end", 3 * HOUR)]),
            p | "E" >> beam.Create([ev("before", "swipe", 10), ev("start", "swipe", HOUR + 5)]),
        ) | JoinEngagements(TASKS, window)
        assert_that(examples | beam.Map(labels_of), equal_to([("start", 1.0, 0.0)]), label="kept")
        assert_that(
            counters | beam.CombinePerKey(sum),
            equal_to([(joined("impressions_outside_window"), 2),
                      (joined("engagements_of_impressions_outside_window"), 1)]),
            label="counters",
        )


def test_single_table_rows_dedup_by_id_and_keep_rows_without_one():
    rows = [imp("a", 2, label_x=1.0), imp("a", 1, label_x=0.0), imp(None, 5, label_x=1.0), imp(None, 5, label_x=1.0)]
    with TestPipeline(argv=OPTIONS) as p:
        examples, counters = p | beam.Create(rows) | DeduplicateOutcomes()
        assert_that(
            examples | beam.Map(lambda e: (e["impression_id"], e["timestamp_ms"], e["label_x"])),
            equal_to([("a", 1, 0.0), (None, 5, 1.0), (None, 5, 1.0)]),
            label="rows",
        )
        assert_that(counters, equal_to([(joined("duplicate_impressions"), 1)]), label="counters")
