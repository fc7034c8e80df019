"""Which eval values did the train split never see?

A feature whose eval examples mostly carry values that never occur in train gives the model nothing it learned:
every such example falls on an untrained (OOV or hashed-but-empty) embedding row. A `day_of_week` feature with
three train days and a fourth eval day is the classic case: on the eval day it takes a value train never had.

Per single-valued id feature (`categorical`, and the `time` features derived from the impression time), the
count of eval examples whose value never occurs in train; `preprocess` divides it by the eval examples
(`Manifest.unseen_eval_shares`), warns above `preprocess.max_unseen_share`, and the report raises a finding.
A missing value (`__missing__`) is not counted here: `preprocess.max_missing_share` covers it. List features
are left out (an example with several new ids would be counted once per id).

    train ─► per (feature, shard): the bundle's distinct values ───────┐
                                                                       ├─► CoGroupByKey ─► eval examples whose
    eval ──► per (feature, shard): the bundle's values with examples ──┘    value train lacks ─► counters

Each batch's values are counted column by column in Arrow (`batch_values` gives the same counts as Python pairs),
summed over a bundle, and given out once per bundle as one element per (feature, shard) holding that shard's values
(`value_shards`: a value's shard follows from its bytes alone, so a value is in the same shard on
both splits and in every bundle). The elements Beam moves are features × `SHARDS` a bundle at most, not one per
distinct value (50,000 a bundle at 1,000 features of 50 values), while no group holds more than about
1/`SHARDS` of one feature's distinct values (a user id of 10^8 values: 8 groups of about 1.25 × 10^7, each a set
on the Dataflow worker that joins it).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
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


SHARDS = 8  # groups per feature: few elements a bundle, and no one group holds a whole high-cardinality feature
_SHARD_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd (Fibonacci hashing): spreads the polynomial's bits


def value_shards(values: pa.Array | pa.ChunkedArray, shards: int = SHARDS) -> np.ndarray:
    """Each string's shard in [0, shards): a polynomial hash of its UTF-8 bytes and length (mod 2^64), multiplied by
    an odd constant, its upper 32 bits modulo `shards`; computed over the array's bytes with numpy, so it depends on
    the value alone (not on the batch, the bundle or the process, as Python's salted `hash` of a str would)."""
    values = values.cast(pa.string())
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    n = len(values)
    if n == 0:
        return np.zeros(0, np.int64)
    offsets = np.frombuffer(values.buffers()[1], np.int32)[values.offset:values.offset + n + 1].astype(np.int64)
    data = values.buffers()[2]
    raw = (np.frombuffer(data, np.uint8)[offsets[0]:offsets[-1]] if data is not None else np.zeros(0, np.uint8))
    lengths = np.diff(offsets)
    position = np.arange(len(raw), dtype=np.int64) - np.repeat(offsets[:-1] - offsets[0], lengths)
    weights = _powers(int(lengths.max()))
    hashed = np.zeros(n, np.uint64)
    nonempty = lengths > 0
    if raw.size:
        terms = raw.astype(np.uint64) * weights[position]
        hashed[nonempty] = np.add.reduceat(terms, (offsets[:-1] - offsets[0])[nonempty])
    hashed = (hashed + lengths.astype(np.uint64)) * _SHARD_MULTIPLIER  # the length: "" and "\0" differ
    return ((hashed >> np.uint64(32)) % np.uint64(shards)).astype(np.int64)


def _powers(length: int) -> np.ndarray:
    """31^0 .. 31^(length-1) mod 2^64: a byte's weight by its place in its string."""
    return np.cumprod(np.r_[np.uint64(1), np.full(max(length - 1, 0), 31, np.uint64)], dtype=np.uint64)


def unseen_count(joined: tuple[tuple[int, int], dict[str, Any]], names: list[str]) -> list[tuple[str, int]]:
    """A (counter key, eval examples) pair for the eval values of one (feature, shard) that train does not have:
    `joined` is its train values (a tuple per bundle) and eval (values, examples) tuples; `names` the checked
    features' names."""
    (feature, _), grouped = joined
    seen = set().union(*grouped["train"])
    examples = sum(n for values, counts in grouped["eval"] for value, n in zip(values, counts) if value not in seen)
    return [(Count("split_unseen", "eval", names[feature]).key, examples)] if examples else []


class _BundleValues(beam.DoFn):
    """Example batches → per (feature index, shard), the values of every batch of a bundle, summed and given out
    once at the bundle's end: `((feature, shard), values)`, values a tuple of distinct values (`distinct`) or a
    (values, examples) pair of tuples (`_by_shard`). The counts stay Arrow tables until the bundle ends, summed again
    whenever they pass `COMPACT_ROWS` rows."""

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
            for key, values in _by_shard(_summed(self.tables), self.distinct):
                yield WindowedValue((key, values), timestamp, windows)
        self.tables, self.rows = [], 0


def _by_shard(counts: pa.Table, distinct: bool) -> Iterator[tuple[tuple[int, int], Any]]:
    """A bundle's summed counts cut into one piece per (feature, shard), in that order: a tuple of its values
    (`distinct`) or a (values, examples) pair of tuples. Plain tuples: an element per (feature, shard) is small at
    width (a few values each: pickling an Arrow array per element cost more than the values), and they are made
    from the whole bundle's columns at once."""
    if not counts.num_rows:
        return
    keys = counts["feature"].to_numpy().astype(np.int64) * SHARDS + value_shards(counts["value"])
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    values = counts["value"].take(pa.array(order)).to_pylist()
    examples = None if distinct else counts["examples"].take(pa.array(order)).to_pylist()
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]).tolist()
    for start, end in zip(starts, starts[1:] + [len(keys)]):
        key = (int(keys[start]) // SHARDS, int(keys[start]) % SHARDS)
        if examples is None:
            yield key, tuple(values[start:end])
        else:
            yield key, (tuple(values[start:end]), tuple(examples[start:end]))


class CountUnseenEvalValues(beam.PTransform):
    """(train, eval) example batches → `(Count("split_unseen", "eval", feature).key, n)` pairs for
    `WriteCounters` (several per feature, one per shard with unseen values: the counters sum them): n eval
    examples of `feature` carry a value no train example has."""

    def __init__(self, features: list[Feature]):
        super().__init__()
        self.features = checked_features(features)

    def expand(self, splits: tuple[beam.PCollection, beam.PCollection]) -> beam.PCollection:
        train, eval_examples = splits
        features = self.features
        seen = train | "TrainValues" >> beam.ParDo(_BundleValues(features, distinct=True))
        eval_counts = eval_examples | "EvalValues" >> beam.ParDo(_BundleValues(features, distinct=False))
        return (
            {"train": seen, "eval": eval_counts}
            | "JoinOnShard" >> beam.CoGroupByKey()
            | "UnseenInTrain" >> beam.FlatMap(unseen_count, [feature.name for feature in features])
        )
