"""Which eval values did the train split never see?

A feature whose eval examples mostly carry values that never occur in train gives the model nothing it learned:
every such example falls on an untrained (OOV or hashed-but-empty) embedding row. A `day_of_week` feature with
three train days and a fourth eval day is the classic case: on the eval day it takes a value train never had.

Per single-valued id feature (`categorical`, and the `time` features derived from the impression time), the
count of eval examples whose value never occurs in train; `preprocess` divides it by the eval examples
(`Manifest.unseen_eval_shares`), warns above `preprocess.max_unseen_share`, and the report raises a finding.
A missing value (`__missing__`) is not counted here: `preprocess.max_missing_share` covers it. List features
are left out (an example with several new ids would be counted once per id).

    train ─► (feature, value) pairs ─► distinct ──┐
                                                  ├─► CoGroupByKey ─► eval counts of pairs train lacks ─► counters
    eval ──► (feature, value) pairs ─► count ─────┘

On record batches, each batch gives its distinct pairs (train) or its pairs with their counts (eval) at once
(`batch_values`), so the elements Beam moves are distinct values, not examples.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from components.preprocess.counters import Count
from components.preprocess.parse import MISSING_TOKEN, TIMESTAMP_MS
from configs.features import CategoricalFeature, Feature, TimeFeature


def checked_features(features: list[Feature]) -> list[Feature]:
    """The single-valued id features whose unseen share is measured."""
    return [f for f in features if isinstance(f, TimeFeature) or type(f) is CategoricalFeature]


def feature_values(example: dict[str, Any], features: list[Feature]) -> list[tuple[str, str]]:
    """(feature name, value as a string) of each checked feature of one parsed example; time features from the
    impression time in UTC as the transform derives them (hour 0–23, day of week Monday = 0)."""
    pairs = []
    for feature in checked_features(features):
        if isinstance(feature, TimeFeature):
            moment = dt.datetime.fromtimestamp(example[TIMESTAMP_MS] / 1000, tz=dt.timezone.utc)
            value = moment.hour if feature.part == "hour_of_day" else moment.weekday()
            pairs.append((feature.name, str(value)))
        elif example.get(feature.name, MISSING_TOKEN) != MISSING_TOKEN:
            pairs.append((feature.name, str(example[feature.name])))
    return pairs


def _batch_counts(batch: pa.RecordBatch, features: list[Feature]) -> pa.Table:
    """(feature: index into `checked_features`, value: string, examples) of each distinct value of each checked
    feature in a batch, kept in Arrow (a Python step per distinct value cost about a second a batch at 1,000
    features; the columns' counts, put together, cost a tenth of that)."""
    times = np.asarray(batch.column(TIMESTAMP_MS), np.int64) if batch.num_rows else np.zeros(0, np.int64)
    counted = []
    for feature in checked_features(features):
        if isinstance(feature, TimeFeature):
            # the UTC hour or weekday (Monday = 0; 1970-01-01 was a Thursday), as datetime gives it
            values = pa.array(times // 3_600_000 % 24 if feature.part == "hour_of_day"
                              else (times // 86_400_000 + 3) % 7)
        else:
            values = batch.column(feature.name)
        counted.append(pc.value_counts(values))
    if not counted:
        return _COUNTS_SCHEMA.empty_table()
    values = pa.concat_arrays([c.field("values").cast(pa.string()) for c in counted])
    table = pa.table([pa.array(np.repeat(np.arange(len(counted), dtype=np.int32), [len(c) for c in counted])),
                      values, pa.concat_arrays([c.field("counts") for c in counted])], schema=_COUNTS_SCHEMA)
    return table.filter(pc.and_(values.is_valid(), pc.not_equal(values, MISSING_TOKEN)))  # missing: not a value


_COUNTS_SCHEMA = pa.schema([("feature", pa.int32()), ("value", pa.string()), ("examples", pa.int64())])


def _counted(grouped: pa.Table, count_column: str) -> pa.Table:
    return pa.table([grouped["feature"], grouped["value"], grouped[count_column]], schema=_COUNTS_SCHEMA)


def _summed(tables: list[pa.Table]) -> pa.Table:
    """Several `_batch_counts` tables as one, each (feature, value) once with its examples summed."""
    if len(tables) == 1:
        return tables[0]
    grouped = pa.concat_tables(tables).group_by(["feature", "value"]).aggregate([("examples", "sum")])
    return _counted(grouped, "examples_sum")


def _pairs(counts: pa.Table, features: list[Feature]) -> list[tuple[tuple[str, str], int]]:
    names = [feature.name for feature in checked_features(features)]
    return [((names[index], value), examples) for index, value, examples in
            zip(counts["feature"].to_pylist(), counts["value"].to_pylist(), counts["examples"].to_pylist())]


def batch_values(batch: pa.RecordBatch, features: list[Feature]) -> list[tuple[tuple[str, str], int]]:
    """((feature name, value), examples) of each distinct value of each checked feature in a batch: what
    `feature_values` gives its examples, counted."""
    return _pairs(_batch_counts(batch, features), features)


def unseen_count(joined: tuple[tuple[str, str], dict[str, Any]]) -> list[tuple[str, int]]:
    """A (counter key, eval examples) pair for a (feature, value) that eval has and train does not."""
    (feature, _), grouped = joined
    eval_examples = sum(grouped["eval"])
    if eval_examples and not list(grouped["train"]):
        return [(Count("split_unseen", "eval", feature).key, eval_examples)]
    return []


class _BundleValues(beam.DoFn):
    """Example batches → the ((feature, value), examples) pairs of every batch of a bundle, summed per pair and given
    out once at the bundle's end (`distinct`: each pair once, its count left out): a value seen in every batch is one
    element a bundle, not one a batch (at 1,000 features, 50,000 elements per batch of ~2,300 rows). The counts stay
    Arrow tables until the bundle ends, summed again whenever they pass `COMPACT_ROWS` rows."""

    COMPACT_ROWS = 1 << 20

    def __init__(self, features: list[Feature], distinct: bool):
        super().__init__()
        self.features, self.distinct = features, distinct
        self.tables: list[pa.Table] = []
        self.rows = 0

    def start_bundle(self):
        self.tables, self.rows = [], 0

    def process(self, batch: pa.RecordBatch):
        counts = _batch_counts(batch, self.features)
        self.tables.append(counts)
        self.rows += counts.num_rows
        if self.rows > self.COMPACT_ROWS and len(self.tables) > 1:
            self.tables = [_summed(self.tables)]
            self.rows = self.tables[0].num_rows
        return ()

    def finish_bundle(self):
        if self.tables:
            timestamp, windows = MIN_TIMESTAMP, (GlobalWindow(),)  # GlobalWindows.windowed_value, made once
            for pair, n in _pairs(_summed(self.tables), self.features):
                yield WindowedValue(pair if self.distinct else (pair, n), timestamp, windows)
        self.tables, self.rows = [], 0


class CountUnseenEvalValues(beam.PTransform):
    """(train, eval) example batches → `(Count("split_unseen", "eval", feature).key, n)` pairs for
    `WriteCounters`: n eval examples of `feature` carry a value no train example has."""

    def __init__(self, features: list[Feature]):
        super().__init__()
        self.features = checked_features(features)

    def expand(self, splits: tuple[beam.PCollection, beam.PCollection]) -> beam.PCollection:
        train, eval_examples = splits
        features = self.features
        seen = (
            train
            | "TrainValues" >> beam.ParDo(_BundleValues(features, distinct=True))
            | "DistinctTrainValues" >> beam.Distinct()
            | "MarkSeen" >> beam.Map(lambda pair: (pair, True))
        )
        eval_counts = (
            eval_examples
            | "EvalValues" >> beam.ParDo(_BundleValues(features, distinct=False))
            | "CountEvalValues" >> beam.CombinePerKey(sum)
        )
        return (
            {"train": seen, "eval": eval_counts}
            | "JoinOnValue" >> beam.CoGroupByKey()
            | "UnseenInTrain" >> beam.FlatMap(unseen_count)
        )
