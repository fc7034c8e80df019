"""Records whose timestamps are implausible for the data they came with become dead letters.

One clock-skewed record (year 2099, year 9999) must not move the time split or overflow date arithmetic.
The reference is the median impression time, which a few outliers cannot move:

    valid impressions ──► median time ──┐ (side input)
    valid impressions ──────────────────┴─► |t − median| <= skew ──► kept, else dead letter
    valid engagements ──────────────────┴─► −skew <= t − median <= skew + late ──► kept, else dead letter

`late` is the longest attribution window: an engagement may follow the last impression by that much. Both work on
record batches; a dead letter's `raw` is the record as the per-record parser gives it (`example_batches.as_records`).

`PlausibleRange.keep` is the check on one batch. With engagements, the attribution join applies it to each
partition's rows once they are grouped (`attribution.PlausibleTimes`), so the impression batches, as wide as the
config, are not held between parsing and the join waiting for the median; without them, `keep_plausible_times`
applies it to the stream before deduplication.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.transforms.stats import ApproximateQuantilesCombineFn

from components.preprocess.batch_coder import BATCH
from components.preprocess.example_batches import as_records
from components.preprocess.parse import DEAD_LETTER, TIMESTAMP_MS, VALID, FeatureField, dead_letter

OUT_OF_RANGE = "timestamp_out_of_range"
DAY_MS = 86_400_000


@beam.ptransform_fn
def MedianTime(batches):  # noqa: N802 - a PTransform
    """At most one element: the median `timestamp_ms` of the rows of `batches` (none without rows: read it with
    `median_input`, whose default is None; a global combine's own default would cost the job a stage)."""
    quantiles = ApproximateQuantilesCombineFn.create(num_quantiles=3, input_batched=True)  # [min, median, max]
    return (
        batches
        | "Times" >> beam.Map(lambda batch: batch.column(TIMESTAMP_MS).to_pylist())
        | "Quantiles" >> beam.CombineGlobally(quantiles).without_defaults()
        | "Median" >> beam.Map(lambda quantiles: quantiles[1] if len(quantiles) == 3 else None)
    )


def median_input(median: beam.PCollection) -> beam.pvalue.AsSingleton:
    """`MedianTime`'s output as a side input: the median, or None when no row had a time."""
    return beam.pvalue.AsSingleton(median, default_value=None)


@dataclass(frozen=True)
class PlausibleRange:
    """The plausible times of one stream's rows: within `skew_ms` of the median impression time, and up to `late_ms`
    more after it; `features`: the rows' logged features (a dead letter's record holds their values)."""

    stream: str
    skew_ms: int
    late_ms: int = 0
    features: tuple[FeatureField, ...] = ()

    @classmethod
    def of(cls, stream: str, skew_days: float, late_ms: int = 0,
           features: Sequence[FeatureField] = ()) -> PlausibleRange:
        return cls(stream, int(skew_days * DAY_MS), late_ms, tuple(features))

    def inside(self, times: np.ndarray, median: int | None) -> np.ndarray:
        """Which of `times` are in range."""
        offsets = times - median if median is not None else np.zeros(len(times), np.int64)
        return (offsets >= -self.skew_ms) & (offsets <= self.skew_ms + self.late_ms)

    def keep(self, batch: pa.RecordBatch, median: int | None) -> tuple[pa.RecordBatch | None, list[dict]]:
        """(the rows of `batch` in range, None for none; a dead letter `timestamp_out_of_range` for each other)."""
        inside = self.inside(np.asarray(batch.column(TIMESTAMP_MS), np.int64), median)
        if inside.all():
            return batch, []
        letters = [dead_letter(self.stream, OUT_OF_RANGE, record)
                   for record in as_records(batch, np.flatnonzero(~inside).tolist(), self.features)]
        return (batch.filter(pa.array(inside)) if inside.any() else None), letters


class _KeepInRange(beam.DoFn):
    def __init__(self, plausible: PlausibleRange):
        super().__init__()
        self.plausible = plausible

    def process(self, batch: pa.RecordBatch, median: int | None):
        kept, letters = self.plausible.keep(batch, median)
        for letter in letters:
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, letter)
        if kept is not None:
            yield kept


def keep_plausible_times(batches, stream: str, median, skew_days: float, late_ms: int = 0,
                         features: Sequence[FeatureField] = ()):
    """(kept, dead letters) of one stream's record batches, against the impressions' `median` time; `features`: the
    batches' logged features (a dead letter's record holds their values, defaults filled)."""
    outputs = batches | f"PlausibleTimes{stream.title()}" >> beam.ParDo(
        _KeepInRange(PlausibleRange.of(stream, skew_days, late_ms, features)), median_input(median)
    ).with_output_types(BATCH).with_outputs(DEAD_LETTER, main=VALID)
    return outputs[VALID], outputs[DEAD_LETTER]
