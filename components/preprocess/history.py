"""History features: what an id did before each impression, from earlier examples only.

For a `kind: history` feature (configs.features.HistoryFeature) over an id (or an id pair) and each example at
impression time `t`, over every trailing window `w`:

    impressions_w = #{earlier examples of the id with t − w ≤ s < t}
    clicks_w      = Σ label over those whose label was known by t: s + attribution window ≤ t
    rate_w        = (clicks_w + prior · prior_rate) / (#{those matured examples} + prior)
    seconds_since_previous = (t − the latest s < t) / 1000, or NEVER_SEEN_SECONDS

A window that reaches back before the logs' first impression `t0` (an example early in the logs read) holds only
the part of the id's history the logs cover. With `censored_windows: scale` (the default) its impressions and
clicks are scaled by w / max(t − t0, min(w, 1 h)): the counts a full window holds on average, which is what serving
(and every example a window's length into the logs) sees. Kept as they are, the first train day's counts are a
fraction of the eval day's, and a model learns a relation between counts and clicks that does not hold where it is
used (docs/history_features.md). The rate is a ratio of the same window's clicks and impressions: not scaled.

Strictly before: an example never sees its own label, nor that of any example at the same or a later time, nor a
label whose attribution window was still open at `t` (a click that might still come is unknown at serving time).
So shuffling the labels within a day leaves every history feature of earlier examples unchanged, and flipping an
example's own label never changes its own features (tests/components/preprocess/test_history.py).

`with_history` computes it for one id's examples (the reference); `history_columns` for every id of a record batch
at once, column-wise: rows sorted by (id, time), each bisection a `searchsorted` over one composite key, the clicks
one prefix sum, with the same floating-point operations in the same order, so the same values to the last bit.

In Beam, one composite transform per history feature, chained, on record batches:

    batches ─► rows by a partition of the id (pair) ─► GroupByKey ─► history_columns per partition ─► batches
    batches ─► earliest impression time t0 ──────────────────────────────┘ (side input)   (+ that feature's columns)

A partition's rows are in one worker's memory (`components.preprocess.partitions`); an example whose id is
missing gets the no-history values (0 impressions, the prior rate, never seen).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from itertools import accumulate
from typing import Any, Literal

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from components.preprocess.attribution import label_key
from components.preprocess.batch_coder import BATCH, KEYED_BATCH
from components.preprocess.parse import IMPRESSION_ID, MISSING_TOKEN, TIMESTAMP_MS
from components.preprocess.partitions import GroupPartitions, partition_parts
from configs.features import NEVER_SEEN_SECONDS, HistoryFeature, history_features

MS_PER_HOUR = 3_600_000


def history_key(example: dict[str, Any], feature: HistoryFeature) -> str | None:
    """The id (or '\\x1f'-joined id pair) an example's history is kept under; None when an id is missing."""
    values = [example.get(name, MISSING_TOKEN) for name in feature.ids]
    if any(value in (None, MISSING_TOKEN) for value in values):
        return None
    return "\x1f".join(str(value) for value in values)


def no_history(feature: HistoryFeature) -> dict[str, float]:
    """The columns of an example whose id has no earlier example."""
    values: dict[str, float] = {}
    for window in feature.windows_hours:
        values |= {feature.window_column("impressions", window): 0.0, feature.window_column("clicks", window): 0.0,
                   feature.window_column("rate", window): feature.prior_rate}
    return values | {f"{feature.name}_seconds_since_previous": float(NEVER_SEEN_SECONDS)}


def coverage_scale(feature: HistoryFeature, window_hours: float, t: int, log_start_ms: int | None) -> float:
    """What a window's counts at time `t` are multiplied by: window / hours the logs cover before `t` (at least
    1 h, at most the window) under `censored_windows: scale`; 1 for a window the logs cover, or with `keep`."""
    if feature.censored_windows == "keep" or log_start_ms is None:
        return 1.0
    window_ms = window_hours * MS_PER_HOUR
    covered = max(t - log_start_ms, min(window_ms, MS_PER_HOUR))
    return window_ms / covered if covered < window_ms else 1.0


def with_history(examples: Iterable[dict[str, Any]], feature: HistoryFeature, label: str,
                 attribution_ms: int, log_start_ms: int | None = None) -> list[dict[str, Any]]:
    """One id's examples, each with `feature`'s columns computed from the examples before it; `log_start_ms`: the
    first impression time of the logs read, for `censored_windows` (module doc; None: no window is censored)."""
    ordered = sorted(examples, key=lambda e: e[TIMESTAMP_MS])
    times = [e[TIMESTAMP_MS] for e in ordered]
    clicks_before = [0.0, *accumulate(float(e[label] > 0) for e in ordered)]  # clicks_before[i]: Σ label of 0..i-1
    prior = feature.smoothing_prior
    result = []
    for example in ordered:
        t = example[TIMESTAMP_MS]
        earlier = bisect_left(times, t)  # examples strictly before t: indices < earlier
        matured = bisect_right(times, t - attribution_ms)  # labels known by t: s + attribution ≤ t
        columns: dict[str, float] = {}
        for window in feature.windows_hours:
            start = bisect_left(times, t - window * MS_PER_HOUR)
            impressions = max(earlier - start, 0)
            known = max(min(matured, earlier) - start, 0)
            clicks = clicks_before[start + known] - clicks_before[start] if known else 0.0
            scale = coverage_scale(feature, window, t, log_start_ms)
            columns |= {
                feature.window_column("impressions", window): impressions * scale,
                feature.window_column("clicks", window): clicks * scale,
                feature.window_column("rate", window): (clicks + prior * feature.prior_rate) / (known + prior),
            }
        since = (t - times[earlier - 1]) / 1000 if earlier else float(NEVER_SEEN_SECONDS)
        columns[f"{feature.name}_seconds_since_previous"] = float(since)
        result.append({**example, **columns})
    return result


def history_keys(batch: pa.RecordBatch, feature: HistoryFeature) -> pa.Array:
    """`history_key` of every row: the ids joined by '\\x1f'; null where an id is missing (null or `__missing__`)."""
    columns = [batch.column(name) for name in feature.ids]
    absent = np.zeros(batch.num_rows, bool)
    for column in columns:
        absent |= np.asarray(pc.fill_null(pc.equal(column, MISSING_TOKEN), True), bool)
    keys = columns[0] if len(columns) == 1 else pc.binary_join_element_wise(*columns, "\x1f")
    return pc.if_else(pa.array(absent), pa.scalar(None, pa.string()), keys)


def _empty_columns(feature: HistoryFeature, rows: int) -> dict[str, np.ndarray]:
    return {name: np.full(rows, value, np.float64) for name, value in no_history(feature).items()}


def history_columns(batch: pa.RecordBatch, feature: HistoryFeature, label: str, attribution_ms: int,
                    log_start_ms: int | None = None) -> dict[str, np.ndarray]:
    """`feature`'s columns (float64, in `no_history`'s order) for every row of `batch`: what `with_history` gives each
    row with its id's rows, computed for all ids at once."""
    keys = history_keys(batch, feature)
    columns = _empty_columns(feature, batch.num_rows)
    with_key = np.flatnonzero(np.asarray(keys.is_valid(), bool))
    if not len(with_key):
        return columns
    codes = np.asarray(pc.dictionary_encode(keys.take(pa.array(with_key))).indices, np.int64)
    times = np.asarray(batch.column(TIMESTAMP_MS), np.int64)[with_key]
    clicked = np.asarray(batch.column(label).to_numpy(zero_copy_only=False), np.float64)[with_key] > 0
    order = np.lexsort((times, codes))
    code, t = codes[order], times[order]
    t_min, span = int(t.min()), int(t.max() - t.min()) + 2
    if (int(code.max()) + 1) * span >= 2**62:  # the composite key would overflow: one id at a time
        return _columns_one_id_at_a_time(batch, feature, label, attribution_ms, log_start_ms)
    composite = code * span + (t - t_min + 1)

    def position(times_sought: np.ndarray, side: Literal["left", "right"]) -> np.ndarray:
        """Per sorted row: where `times_sought` (its own id's) falls among its id's times, as a global index."""
        return np.searchsorted(composite, code * span + np.clip(times_sought - t_min + 1, 0, span - 1), side=side)

    earlier = position(t, "left")  # rows of the id strictly before t
    matured = position(t - attribution_ms, "right")  # labels known by t: s + attribution ≤ t
    first = np.searchsorted(composite, code * span, side="left")  # the id's first row
    clicks_before = np.concatenate([[0.0], np.cumsum(clicked[order].astype(np.float64))])
    prior = feature.smoothing_prior
    sorted_columns: dict[str, np.ndarray] = {}
    for window in feature.windows_hours:
        window_ms = window * MS_PER_HOUR
        start = position(np.ceil(t - window_ms).astype(np.int64), "left")
        impressions = np.maximum(earlier - start, 0)
        known = np.maximum(np.minimum(matured, earlier) - start, 0)
        clicks = np.where(known > 0, clicks_before[start + known] - clicks_before[start], 0.0)
        scale = _coverage_scales(feature, window, t, log_start_ms)
        sorted_columns |= {
            feature.window_column("impressions", window): impressions * scale,
            feature.window_column("clicks", window): clicks * scale,
            feature.window_column("rate", window): (clicks + prior * feature.prior_rate) / (known + prior),
        }
    seen = earlier > first
    previous = t[np.maximum(earlier - 1, 0)]
    sorted_columns[f"{feature.name}_seconds_since_previous"] = np.where(
        seen, (t - previous) / 1000, float(NEVER_SEEN_SECONDS))
    rows = with_key[order]
    for name, values in sorted_columns.items():
        columns[name][rows] = values
    return columns


def _coverage_scales(feature: HistoryFeature, window_hours: float, t: np.ndarray,
                     log_start_ms: int | None) -> np.ndarray | float:
    """`coverage_scale` of every time in `t`."""
    if feature.censored_windows == "keep" or log_start_ms is None:
        return 1.0
    window_ms = window_hours * MS_PER_HOUR
    covered = np.maximum(t - log_start_ms, min(window_ms, MS_PER_HOUR))
    return np.where(covered < window_ms, window_ms / covered, 1.0)


def _columns_one_id_at_a_time(batch: pa.RecordBatch, feature: HistoryFeature, label: str, attribution_ms: int,
                              log_start_ms: int | None) -> dict[str, np.ndarray]:
    keys = history_keys(batch, feature).to_pylist()
    rows_of: dict[str, list[int]] = {}
    for row, key in enumerate(keys):
        if key is not None:
            rows_of.setdefault(key, []).append(row)
    columns = _empty_columns(feature, batch.num_rows)
    times = batch.column(TIMESTAMP_MS).to_pylist()
    labels = batch.column(label).to_pylist()
    for rows in rows_of.values():
        examples = [{"row": row, TIMESTAMP_MS: times[row], label: labels[row]} for row in rows]
        for result in with_history(examples, feature, label, attribution_ms, log_start_ms):
            for name in columns:
                columns[name][result["row"]] = result[name]
    return columns


def with_history_columns(batch: pa.RecordBatch, columns: dict[str, np.ndarray]) -> pa.RecordBatch:
    for name, values in columns.items():
        batch = batch.append_column(name, pa.array(values, pa.float64()))
    return batch


class _KeyByHistoryId(beam.DoFn):
    def __init__(self, feature: HistoryFeature, partitions: int):
        super().__init__()
        self.feature, self.partitions = feature, partitions

    def process(self, batch: pa.RecordBatch):
        yield from partition_parts(batch, history_keys(batch, self.feature), self.partitions)


class AddHistory(beam.PTransform):
    """Example batches (of `schema`) → the same examples with one history feature's columns (`partitions`: of the
    history key; `components.preprocess.partitions`)."""

    def __init__(self, feature: HistoryFeature, label: str, attribution_ms: int, schema: pa.Schema, partitions: int):
        super().__init__()
        # not `self.label`: a PTransform's label is its step name
        self.feature, self.label_key, self.attribution_ms = feature, label, attribution_ms
        self.schema, self.partitions = schema, partitions

    def expand(self, examples: beam.PCollection) -> beam.PCollection:
        feature, label, attribution_ms = self.feature, self.label_key, self.attribution_ms
        log_start = beam.pvalue.AsSingleton(
            examples
            | "EarliestInBatch" >> beam.Map(lambda batch: pc.min(batch.column(TIMESTAMP_MS)).as_py())
            | "LogStart" >> beam.CombineGlobally(lambda times: min((t for t in times if t is not None), default=None)
                                                 ).without_defaults(),
            default_value=None)  # no examples: no start (the side input's default, without a stage of its own)
        return (
            examples
            | "KeyById" >> beam.ParDo(_KeyByHistoryId(feature, self.partitions)).with_output_types(KEYED_BATCH)
            | "GroupById" >> GroupPartitions(self.schema, [IMPRESSION_ID, TIMESTAMP_MS])
            | "SweepInTimeOrder" >> beam.Map(lambda keyed, start: with_history_columns(
                keyed[1], history_columns(keyed[1], feature, label, attribution_ms, start)), log_start
            ).with_output_types(BATCH)
        )


class AddHistoryFeatures(beam.PTransform):
    """Every `kind: history` feature of `features`, one `AddHistory` after another; batches unchanged without any.
    `schema`: the example batches' before the first; `partitions`: as `AddHistory`'s.

    `attribution_ms`: per task, its attribution window in milliseconds (a label is known once it has closed)."""

    def __init__(self, features, tasks, schema: pa.Schema, partitions: int):
        super().__init__()
        self.history = history_features(features)
        self.tasks = list(tasks)
        self.schema, self.partitions = schema, partitions

    def expand(self, examples: beam.PCollection) -> beam.PCollection:
        schema = self.schema
        for feature in self.history:
            task = next(t for t in self.tasks if feature.task in (None, t.name))
            examples = examples | f"History_{feature.name}" >> AddHistory(
                feature, label_key(task.name), task.attribution_window_seconds * 1000, schema, self.partitions)
            schema = history_schema(schema, feature)
        return examples


def history_schema(schema: pa.Schema, feature: HistoryFeature) -> pa.Schema:
    """The example batches' schema once `feature`'s columns are added."""
    for name in no_history(feature):
        schema = schema.append(pa.field(name, pa.float64()))
    return schema
