"""Which eval values the train split never saw: the per-example values compared, and the Beam count."""

from __future__ import annotations

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from components.preprocess.counters import Count
from components.preprocess.parse import MISSING_TOKEN
from components.preprocess.unseen import CountUnseenEvalValues, batch_values, feature_values
from configs.features import CategoricalFeature, CategoricalListFeature, NumericFeature, TimeFeature

FEATURES = [CategoricalFeature(name="ad_id"), CategoricalListFeature(name="interests"),
            NumericFeature(name="age"), TimeFeature(name="weekday", part="day_of_week"),
            TimeFeature(name="hour", part="hour_of_day")]
THURSDAY_10H = 1767261600000  # 2026-01-01T10:00:00Z
FRIDAY_10H = THURSDAY_10H + 86_400_000


def example(ad, timestamp_ms):
    return {"ad_id": ad, "interests": ["x"], "age": 3.0, "timestamp_ms": timestamp_ms}


def test_values_of_single_valued_id_and_time_features_only():
    assert feature_values(example("a1", THURSDAY_10H), FEATURES) == [("ad_id", "a1"), ("weekday", "3"), ("hour", "10")]
    assert feature_values(example(MISSING_TOKEN, FRIDAY_10H), FEATURES) == [("weekday", "4"), ("hour", "10")]


def test_a_batch_gives_each_example_values_counted():
    rows = [example("a1", THURSDAY_10H), example(None, FRIDAY_10H), example(MISSING_TOKEN, FRIDAY_10H),
            example("a1", FRIDAY_10H - 3_600_000), example("a2", 0)]
    counted: dict = {}
    for row in rows:
        for pair in feature_values({**row, "ad_id": row["ad_id"] or MISSING_TOKEN}, FEATURES):
            counted[pair] = counted.get(pair, 0) + 1
    assert dict(batch_values(pa.RecordBatch.from_pylist(rows), FEATURES)) == counted


def test_eval_examples_whose_value_train_never_had_are_counted_per_feature():
    train = [example("a1", THURSDAY_10H), example("a2", THURSDAY_10H), example("a1", THURSDAY_10H)]
    evaluation = [example("a1", FRIDAY_10H), example("a3", FRIDAY_10H), example("a3", FRIDAY_10H)]
    with TestPipeline() as pipeline:
        counts = (pipeline | "Train" >> beam.Create([pa.RecordBatch.from_pylist(train[:2]),
                                                     pa.RecordBatch.from_pylist(train[2:])]),
                  pipeline | "Eval" >> beam.Create([pa.RecordBatch.from_pylist(evaluation)])) | (
            CountUnseenEvalValues(FEATURES)) | beam.CombinePerKey(sum)  # as WriteCounters sums a feature's shards
        assert_that(counts, equal_to([(Count("split_unseen", "eval", "ad_id").key, 2),
                                      (Count("split_unseen", "eval", "weekday").key, 3)]))


def test_a_bundle_gives_each_value_once_per_feature_shard_with_its_examples_summed_over_its_batches(monkeypatch):
    """Counts stay Arrow tables through a bundle, summed again whenever they pass `COMPACT_ROWS` (1 here: each
    batch), and come out as one element per (feature, shard) holding that shard's values."""
    from components.preprocess.unseen import SHARDS, _BundleValues, checked_features, value_shards

    monkeypatch.setattr(_BundleValues, "COMPACT_ROWS", 1)
    batches = [pa.RecordBatch.from_pylist([example("a1", THURSDAY_10H), example("a2", FRIDAY_10H)]),
               pa.RecordBatch.from_pylist([example(None, THURSDAY_10H)]),
               pa.RecordBatch.from_pylist([example("a1", FRIDAY_10H), example(MISSING_TOKEN, 0)])]
    expected: dict = {}
    for batch in batches:
        for pair, n in batch_values(batch, FEATURES):
            expected[pair] = expected.get(pair, 0) + n
    names = [feature.name for feature in checked_features(FEATURES)]
    for distinct in (False, True):
        values = _BundleValues(FEATURES, distinct=distinct)
        values.start_bundle()
        for batch in batches:
            assert values.process(batch) == ()
        given = [windowed.value for windowed in values.finish_bundle()]
        keys = [key for key, _ in given]
        assert len(keys) == len(set(keys))  # each (feature, shard) once
        pairs = []
        for (feature, shard), piece in given:
            shown = piece if distinct else piece[0]
            assert 0 <= shard < SHARDS and set(value_shards(pa.array(shown)).tolist()) == {shard}
            pairs += ([(names[feature], v) for v in shown] if distinct else
                      [((names[feature], v), n) for v, n in zip(*piece)])
        assert sorted(pairs) == sorted(expected if distinct else expected.items())
    assert expected[("ad_id", "a1")] == 2 and expected[("weekday", "3")] == 3  # 1970-01-01 too


def test_a_values_shard_follows_from_its_bytes_alone():
    """The same value falls in the same shard wherever it is (another batch, a slice, another process: no salted
    `hash`), and values spread over all shards."""
    from components.preprocess.unseen import SHARDS, value_shards

    values = ["", "\0", "a", "v1", "héllo", "user_00012345"] + [f"v{i}" for i in range(200)]
    together = value_shards(pa.array(values))
    assert together.tolist() == [value_shards(pa.array([v]))[0] for v in values]
    assert value_shards(pa.array(values).slice(3, 50)).tolist() == together[3:53].tolist()
    assert value_shards(pa.array(values, pa.large_string())).tolist() == together.tolist()
    assert set(together.tolist()) == set(range(SHARDS))
    assert max(np.bincount(value_shards(pa.array([str(i) for i in range(80_000)])))) < 10_500


def test_unseen_values_in_several_shards_sum_to_the_features_count():
    """Eval values in different shards each give their part; the counters' sum is the feature's unseen examples."""
    from components.preprocess.unseen import value_shards

    new = [f"n{i}" for i in range(40)]
    assert len(set(value_shards(pa.array(new)).tolist())) > 1
    train = [example("a1", THURSDAY_10H)]
    evaluation = [example(ad, THURSDAY_10H) for ad in new + ["a1", "n0"]]
    with TestPipeline() as pipeline:
        counts = (pipeline | "Train" >> beam.Create([pa.RecordBatch.from_pylist(train)]),
                  pipeline | "Eval" >> beam.Create([pa.RecordBatch.from_pylist(evaluation)])) | (
            CountUnseenEvalValues(FEATURES))
        parts = counts | beam.combiners.Count.Globally()
        assert_that(counts | beam.CombinePerKey(sum), equal_to([(Count("split_unseen", "eval", "ad_id").key, 41)]))
        assert_that(parts, equal_to([len(set(value_shards(pa.array(new)).tolist()))]), label="OnePerShard")
