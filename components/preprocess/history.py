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

In Beam, one composite transform per history feature, chained:

    examples ─► key by the id (pair) ─► GroupByKey ─► per id: sort by time, one sweep with prefix sums ─► examples
    examples ─► earliest impression time t0 ─────────────────────────┘ (side input)        (+ that feature's columns)

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


class AddHistory(beam.PTransform):
    """Examples → the same examples with one history feature's columns."""

    def __init__(self, feature: HistoryFeature, label: str, attribution_ms: int):
        super().__init__()
        # not `self.label`: a PTransform's label is its step name
        self.feature, self.label_key, self.attribution_ms = feature, label, attribution_ms

    def expand(self, examples: beam.PCollection) -> beam.PCollection:
        feature, label, attribution_ms = self.feature, self.label_key, self.attribution_ms
        keyed = examples | "KeyById" >> beam.Map(lambda e: (history_key(e, feature), e)).with_output_types(Any)
        log_start = beam.pvalue.AsSingleton(
            examples
            | "ImpressionTimes" >> beam.Map(lambda e: e[TIMESTAMP_MS])
            | "LogStart" >> beam.CombineGlobally(lambda times: min(times, default=None))
        )
        swept = (
            keyed
            | "WithId" >> beam.Filter(lambda pair: pair[0] is not None)
            | "GroupById" >> beam.GroupByKey()
            | "SweepInTimeOrder" >> beam.FlatMap(
                lambda pair, start: with_history(pair[1], feature, label, attribution_ms, start), log_start)
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
