"""Records whose timestamps are implausible for the data they came with become dead letters.

One clock-skewed record (year 2099, year 9999) must not move the time split or overflow date arithmetic.
The reference is the median impression time, which a few outliers cannot move:

    valid impressions ──► median time ──┐ (side input)
    valid impressions ──────────────────┴─► |t − median| <= skew ──► kept, else dead letter
    valid engagements ──────────────────┴─► −skew <= t − median <= skew + late ──► kept, else dead letter

`late` is the longest attribution window: an engagement may follow the last impression by that much.
"""

from __future__ import annotations

import apache_beam as beam

from components.preprocess.parse import DEAD_LETTER, TIMESTAMP_MS, VALID, dead_letter

OUT_OF_RANGE = "timestamp_out_of_range"
DAY_MS = 86_400_000


@beam.ptransform_fn
def MedianTime(records):  # noqa: N802 - a PTransform
    """A one-element PCollection: the median `timestamp_ms` of `records`, or None when there are none."""
    return (
        records
        | "Times" >> beam.Map(lambda record: record[TIMESTAMP_MS])
        | "Quantiles" >> beam.ApproximateQuantiles.Globally(3)  # [min, median, max]
        | "Median" >> beam.Map(lambda quantiles: quantiles[1] if len(quantiles) == 3 else None)
    )


class _KeepInRange(beam.DoFn):
    def __init__(self, stream: str, skew_ms: int, late_ms: int):
        super().__init__()
        self.stream = stream
        self.skew_ms = skew_ms
        self.late_ms = late_ms

    def process(self, record: dict, median: int | None):
        offset = record[TIMESTAMP_MS] - median if median is not None else 0
        if -self.skew_ms <= offset <= self.skew_ms + self.late_ms:
            yield record
        else:
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(self.stream, OUT_OF_RANGE, _without_missing(record)))


def _without_missing(record: dict) -> dict:
    return {k: v for k, v in record.items() if not k.startswith("_")}


def keep_plausible_times(records, stream: str, median, skew_days: float, late_ms: int = 0):
    """(kept, dead letters) of one stream's parsed records, against the impressions' `median` time."""
    outputs = records | f"PlausibleTimes{stream.title()}" >> beam.ParDo(
        _KeepInRange(stream, int(skew_days * DAY_MS), late_ms), beam.pvalue.AsSingleton(median)
    ).with_outputs(DEAD_LETTER, main=VALID)
    return outputs[VALID], outputs[DEAD_LETTER]
