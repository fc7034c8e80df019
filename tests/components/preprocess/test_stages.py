"""The preprocess stages as composite transforms, each on a few records through TestPipeline: what comes out, which
dead letters reach the error handler with their reason, and what is counted. The whole job through `preprocess()`
is pinned by the other tests of this folder (tiny logs, bad records, the manifest's counts)."""

from __future__ import annotations

import json

import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.error_handling import CollectingErrorHandler

from components.preprocess.batch_parse import ChunkParser
from components.preprocess.counters import Count
from components.preprocess.example_batches import ImpressionColumns
from components.preprocess.parse import FeatureField, ImpressionParser, RecordDecoder, TimestampParser
from components.preprocess.stages import (
    CountSplits,
    DropImplausibleTimes,
    ReadImpressions,
    SplitByTime,
    WriteDeadLetters,
)

IN_MEMORY = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]
AD_ID = FeatureField("ad_id", "categorical", "ad_id")
PARSER = ChunkParser("impressions", ImpressionParser(RecordDecoder("jsonl"), TimestampParser(), (AD_ID,)))
DAY_MS = 86_400_000
DAY_1 = 1767225600000  # 2026-01-01T00:00:00Z


def _summed(counters):
    return counters | "SumCounters" >> beam.CombinePerKey(sum)


def test_read_impressions_parses_records_and_hands_each_dead_letter_with_its_reason_to_the_error_handler(tmp_path):
    lines = [json.dumps({"impression_id": "i1", "timestamp": "2026-01-01T10:00:00Z", "ad_id": "a1"}),
             "{not json",
             json.dumps({"impression_id": "i2", "ad_id": "a2"}),
             json.dumps({"impression_id": "i3", "timestamp": "2026-01-01T11:00:00Z", "ad_id": "a3"})]
    (tmp_path / "impressions.jsonl").write_text("\n".join(lines) + "\n")
    with TestPipeline(argv=IN_MEMORY) as pipeline:
        with CollectingErrorHandler() as dead_letters:
            impressions = pipeline | ReadImpressions(str(tmp_path / "*.jsonl"), "jsonl", PARSER).with_error_handler(
                dead_letters)
        assert_that(impressions.batches | beam.FlatMap(lambda batch: batch.to_pylist())
                    | beam.Map(lambda r: (r["impression_id"], r["ad_id"])),
                    equal_to([("i1", "a1"), ("i3", "a3")]), label="Records")
        assert_that(dead_letters.output() | beam.Map(lambda d: (d["stream"], d["reason"], d["raw"])),
                    equal_to([("impressions", "bad_json", "{not json"),
                              ("impressions", "missing_field:timestamp", lines[2])]), label="DeadLetters")
        counted = {Count("records_read", "impressions").key: 4, Count("input", "impressions", "files").key: 1,
                   Count("input", "impressions", "records").key: 4, Count("input", "impressions", "parsed").key: 2,
                   Count("input", "impressions", "dead_letters").key: 2}
        assert_that(_summed(impressions.counters) | beam.Filter(lambda pair: pair[0] in counted),
                    equal_to(list(counted.items())), label="Counters")


def test_a_stage_with_dead_letters_and_no_error_handler_refuses_to_build(tmp_path):
    (tmp_path / "impressions.jsonl").write_text("{}\n")
    pipeline = TestPipeline(argv=IN_MEMORY)
    with pytest.raises(ValueError, match=r"ReadImpressions needs \.with_error_handler"):
        _ = pipeline | ReadImpressions(str(tmp_path / "*.jsonl"), "jsonl", PARSER)


def test_drop_implausible_times_keeps_records_near_the_median_and_dead_letters_the_rest():
    records = [{"impression_id": "early", "timestamp_ms": DAY_1 - 3 * DAY_MS, "ad_id": None, "_missing": ["ad_id"]},
               {"impression_id": "near", "timestamp_ms": DAY_1 + DAY_MS // 2, "ad_id": "a", "_missing": []},
               {"impression_id": "late_but_allowed", "timestamp_ms": DAY_1 + 2 * DAY_MS, "ad_id": "b", "_missing": []}]
    batch = ImpressionColumns((AD_ID,)).from_records(records)
    with TestPipeline(argv=IN_MEMORY) as pipeline:
        median = pipeline | "Median" >> beam.Create([DAY_1])
        with CollectingErrorHandler() as dead_letters:
            kept = pipeline | beam.Create([batch]) | DropImplausibleTimes(
                "impressions", median, skew_days=1, late_ms=DAY_MS, features=(AD_ID,)).with_error_handler(dead_letters)
        assert_that(kept | beam.FlatMap(lambda batch: batch.column("impression_id").to_pylist()),
                    equal_to(["near", "late_but_allowed"]), label="Kept")
        # the record as the per-record parser gives it: the absent ad_id filled, no `_missing`
        assert_that(dead_letters.output() | beam.Map(lambda d: (d["stream"], d["reason"], d["raw"])),
                    equal_to([("impressions", "timestamp_out_of_range", json.dumps(
                        {"impression_id": "early", "timestamp_ms": DAY_1 - 3 * DAY_MS, "ad_id": "__missing__"}))]),
                    label="DeadLetters")


def test_split_by_time_puts_the_last_days_in_eval_and_the_days_before_them_in_calibration_and_counts_each():
    examples = [{"id": name, "timestamp_ms": DAY_1 + day * DAY_MS + 3_600_000, "label_click": float(day == 2),
                 "ad_id": None if day == 0 else "a"}
                for name, day in (("d0", 0), ("d1", 1), ("d2a", 2), ("d2b", 2))]
    with TestPipeline(argv=IN_MEMORY) as pipeline:
        splits = pipeline | beam.Create([pa.RecordBatch.from_pylist(examples[:3]),
                                         pa.RecordBatch.from_pylist(examples[3:])]) | SplitByTime(
            eval_days=1, calibration_days=1)
        for split, ids in (("train", ["d0", "d1"]), ("eval", ["d2a", "d2b"]), ("calibration", ["d1"])):
            assert_that(splits.by_split[split] | f"Ids{split}" >> beam.FlatMap(
                lambda batch: batch.column("id").to_pylist()), equal_to(ids), label=split)
        # every example in a split once, with its split code: train 0, eval 1, calibration (a train day) 2
        assert_that(splits.coded | beam.FlatMap(lambda batch: zip(batch.column("id").to_pylist(),
                                                                  batch.column("__split__").to_pylist())),
                    equal_to([("d0", 0), ("d1", 2), ("d2a", 1), ("d2b", 1)]), label="Coded")
        counters = splits.by_split | CountSplits(("label_click",), (AD_ID,))
        assert_that(_summed(counters), equal_to([
            (Count("split_examples", "train").key, 2), (Count("split_missing", "train", "ad_id").key, 1),
            (Count("split_examples", "eval").key, 2), (Count("split_positives", "eval", "label_click").key, 2),
            (Count("split_examples", "calibration").key, 1),
            # per UTC day of train and calibration (what the calibration step's day-ahead backtest reads)
            (Count("day_examples", "train/2026-01-01").key, 1), (Count("day_examples", "train/2026-01-02").key, 1),
            (Count("day_examples", "calibration/2026-01-02").key, 1),
        ]), label="Counters")


def test_write_dead_letters_writes_one_json_line_each_and_counts_them_per_stream_and_reason(tmp_path):
    dead = [{"stream": "impressions", "reason": "bad_json", "raw": "{"},
            {"stream": "impressions", "reason": "bad_json", "raw": "}"},
            {"stream": "engagements", "reason": "unknown_event_type", "raw": "{\"event_type\": \"x\"}"}]
    with TestPipeline(argv=IN_MEMORY) as pipeline:
        counters = pipeline | beam.Create(dead) | WriteDeadLetters(str(tmp_path))
        assert_that(_summed(counters), equal_to([(Count("dead_letters", "impressions", "bad_json").key, 2),
                                                 (Count("dead_letters", "engagements", "unknown_event_type").key, 1)]))
    written = [json.loads(line) for path in (tmp_path / "dead_letter").glob("dead_letter-*.jsonl")
               for line in path.read_text().splitlines()]
    assert sorted(written, key=lambda d: d["raw"]) == sorted(dead, key=lambda d: d["raw"])
