"""History features: what an id did before each impression, from earlier examples only.

For a `kind: history` feature (configs.features.HistoryFeature) over an id (or an id pair) and each example at
impression time `t`, over every trailing window `w`:

    impressions_w = #{earlier examples of the id with t − w ≤ s < t}
    clicks_w      = Σ label over those whose label was known by t: s + attribution window ≤ t
    rate_w        = (clicks_w + prior · prior_rate) / (#{those matured examples} + prior)
    seconds_since_previous = (t − the latest s < t) / 1000, or NEVER_SEEN_SECONDS

Strictly before: an example never sees its own label, nor that of any example at the same or a later time, nor a
label whose attribution window was still open at `t` (a click that might still come is unknown at serving time).
So shuffling the labels within a day leaves every history feature of earlier examples unchanged, and flipping an
example's own label never changes its own features (tests/components/preprocess/test_history.py).

In Beam, one composite transform per history feature, chained:

    examples ─► key by the id (pair) ─► GroupByKey ─► per id: sort by time, one sweep with prefix sums ─► examples
                                                                                        (+ that feature's columns)

An id's examples are sorted in one worker's memory (a very hot id on Dataflow needs a worker that holds its
examples); an example whose id is missing gets the no-history values (0 impressions, the prior rate, never seen).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from itertools import accumulate
from typing import Any

import apache_beam as beam

from components.preprocess.join import label_key
from components.preprocess.parse import MISSING_TOKEN, TIMESTAMP_MS
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
        values |= {f"{feature.name}_impressions_{window:g}h": 0.0, f"{feature.name}_clicks_{window:g}h": 0.0,
                   f"{feature.name}_rate_{window:g}h": feature.prior_rate}
    return values | {f"{feature.name}_seconds_since_previous": float(NEVER_SEEN_SECONDS)}


def with_history(examples: Iterable[dict[str, Any]], feature: HistoryFeature, label: str,
                 attribution_ms: int) -> list[dict[str, Any]]:
    """One id's examples, each with `feature`'s columns computed from the examples before it (module doc)."""
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
            columns |= {
                f"{feature.name}_impressions_{window:g}h": float(impressions),
                f"{feature.name}_clicks_{window:g}h": clicks,
                f"{feature.name}_rate_{window:g}h": (clicks + prior * feature.prior_rate) / (known + prior),
            }
        since = (t - times[earlier - 1]) / 1000 if earlier else float(NEVER_SEEN_SECONDS)
        columns[f"{feature.name}_seconds_since_previous"] = float(since)
        result.append({**example, **columns})
    return result


class AddHistory(beam.PTransform):
    """Examples → the same examples with one history feature's columns."""

    def __init__(self, feature: HistoryFeature, label: str, attribution_ms: int):
        super().__init__()
        # not `self.label`: a PTransform's label is its step name
        self.feature, self.label_key, self.attribution_ms = feature, label, attribution_ms

    def expand(self, examples: beam.PCollection) -> beam.PCollection:
        feature, label, attribution_ms = self.feature, self.label_key, self.attribution_ms
        keyed = examples | "KeyById" >> beam.Map(lambda e: (history_key(e, feature), e)).with_output_types(Any)
        swept = (
            keyed
            | "WithId" >> beam.Filter(lambda pair: pair[0] is not None)
            | "GroupById" >> beam.GroupByKey()
            | "SweepInTimeOrder" >> beam.FlatMap(lambda pair: with_history(pair[1], feature, label, attribution_ms))
        )
        defaults = (
            keyed
            | "WithoutId" >> beam.Filter(lambda pair: pair[0] is None)
            | "NoHistory" >> beam.Map(lambda pair: {**pair[1], **no_history(feature)})
        )
        return (swept, defaults) | "Together" >> beam.Flatten()


class AddHistoryFeatures(beam.PTransform):
    """Every `kind: history` feature of `features`, one `AddHistory` after another; examples unchanged without any.

    `attribution_ms`: per task, its attribution window in milliseconds (a label is known once it has closed)."""

    def __init__(self, features, tasks):
        super().__init__()
        self.history = history_features(features)
        self.tasks = list(tasks)

    def expand(self, examples: beam.PCollection) -> beam.PCollection:
        for feature in self.history:
            task = next(t for t in self.tasks if feature.task in (None, t.name))
            examples = examples | f"History_{feature.name}" >> AddHistory(
                feature, label_key(task.name), task.attribution_window_seconds * 1000)
        return examples
