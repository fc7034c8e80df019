"""Counters of the preprocess step: what was read, dropped, joined, split and labelled.

Every stage emits `(Count(...).key, n)` pairs; `WriteCounters` sums them per count into one JSONL file next to
the examples, which `read_counters` turns back into `PreprocessCounts` once the pipeline has finished.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass
from typing import Literal, TypeVar

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from components.logs.readers import match_pattern
from components.logs.text_files import FileTally
from components.preprocess.example_batches import missing_counts
from components.preprocess.parse import TIMESTAMP_MS, FeatureField, ParseOutcomes

COUNTERS_PREFIX = "stats/counters"

CountKind = Literal["records_read", "dead_letters", "join", "split_examples", "split_positives", "split_missing",
                    "split_unseen", "input", "block_examples", "day_examples", "day_positives"]
DAY_MS = 86_400_000
DAY_COUNTED_SPLITS = ("train", "calibration")  # per UTC day: what the calibration step's day-ahead backtest reads
# `input` counts of a stream: the readers' per-file tallies and the parser's outcomes (see `InputAccount`)
FILE_TALLY_FIELDS = ("bytes", "framing_bytes", "blank_lines", "blank_bytes", "records", "record_bytes")
PARSE_OUTCOME_FIELDS = ("parsed", "parsed_bytes", "dead_letters", "dead_letter_bytes")


@dataclass(frozen=True)
class Count:
    """What one counter counts. `kind` names the count; `scope` is the stream (`records_read`, `dead_letters`)
    or the split (`split_*`); `subject` the dead-letter reason, the join outcome (`duplicate_impressions`,
    `late_events:<label>`, ...), the label key (`split_positives`), the feature (`split_missing`, and
    `split_unseen`: eval examples whose value of it never occurs in train, components.preprocess.unseen), what of
    the input it counts (`input`: `files`, a `FileTally` or `ParseOutcomes` field), or the block file
    (`block_examples`: examples written to that file). `day_examples` / `day_positives` are per UTC day of the
    train and calibration splits: scope `<split>/<YYYY-MM-DD>`, subject the label key (`day_positives`)."""

    kind: CountKind
    scope: str = ""
    subject: str = ""

    @property
    def key(self) -> str:
        """This count as the Beam key it is summed under (a string: Beam's keys of `CombinePerKey` must encode
        deterministically, which a dataclass does only through a fallback coder); `from_key` inverts it."""
        return json.dumps([self.kind, self.scope, self.subject], separators=(",", ":"))

    @classmethod
    def from_key(cls, key: str) -> Count:
        kind, scope, subject = json.loads(key)
        return cls(kind, scope, subject)


@dataclass(frozen=True)
class PreprocessCounts:
    """Every counter of one preprocess job, summed; a count never emitted is 0."""

    values: dict[Count, int]

    def of(self, kind: CountKind, scope: str = "", subject: str = "") -> int:
        return self.values.get(Count(kind, scope, subject), 0)

    def records_read(self) -> dict[str, int]:
        """Records read per stream, for the streams the job read (`engagements` only in engagements mode).

        In the log's own order (impressions, then engagements) whatever order the runner's metrics came back in,
        so the manifest reads the same in every run."""
        return _in_log_order({c.scope: n for c, n in self.values.items() if c.kind == "records_read"})

    def dead_letters(self) -> dict[str, int]:
        """Dead letters as the manifest lists them: `<stream>:<reason>` → records."""
        return dict(sorted((f"{c.scope}:{c.subject}", n) for c, n in self.values.items() if c.kind == "dead_letters"))

    def dead_letters_in(self, stream: str) -> int:
        return sum(n for c, n in self.values.items() if c.kind == "dead_letters" and c.scope == stream)

    def input_counts(self) -> dict[str, dict[str, int]]:
        """Per stream read from files: `files` and each `FILE_TALLY_FIELDS` / `PARSE_OUTCOME_FIELDS` count."""
        by_stream: dict[str, dict[str, int]] = {}
        for count, n in self.values.items():
            if count.kind == "input":
                by_stream.setdefault(count.scope, {})[count.subject] = n
        return _in_log_order(by_stream)

    def join_outcomes(self) -> dict[str, int]:
        """What the join or the deduplication dropped or noticed, by name."""
        return {c.subject: n for c, n in self.values.items() if c.kind == "join"}

    def split_examples(self, split: str) -> int:
        return self.of("split_examples", split)

    def positives(self, split: str, label: str) -> int:
        return self.of("split_positives", split, label)

    def missing(self, split: str, feature: str) -> int:
        return self.of("split_missing", split, feature)

    def unseen(self, split: str, feature: str) -> int:
        return self.of("split_unseen", split, feature)

    def days(self, split: str) -> dict[str, tuple[int, dict[str, int]]]:
        """UTC date → (examples, positives per label key) of `split`, oldest first (train and calibration only)."""
        by_day: dict[str, tuple[int, dict[str, int]]] = {}
        for count, n in self.values.items():
            if count.kind in ("day_examples", "day_positives") and count.scope.startswith(f"{split}/"):
                date = count.scope[len(split) + 1:]
                examples, positives = by_day.get(date, (0, {}))
                if count.kind == "day_examples":
                    by_day[date] = (examples + n, positives)
                else:
                    positives[count.subject] = positives.get(count.subject, 0) + n
                    by_day[date] = (examples, positives)
        return dict(sorted(by_day.items()))

    def block_files(self, split: str) -> dict[str, int]:
        """Block file (relative to the output root) → examples written to it, for `split`."""
        return {c.subject: n for c, n in sorted(self.values.items(), key=lambda cn: cn[0].subject)
                if c.kind == "block_examples" and c.scope == split}


def split_counts(batch: pa.RecordBatch, split: str, label_keys: tuple[str, ...],
                 features: tuple[FeatureField, ...]) -> list[tuple[str, int]]:
    """One batch of a split, counted: examples, positives per label key, missing values per logged feature
    (`example_batches.missing_counts`); a count of 0 is left out (the sum of a count never emitted is 0)."""
    counts = {Count("split_examples", split): batch.num_rows}
    for key in label_keys:
        counts[Count("split_positives", split, key)] = int(np.count_nonzero(
            np.asarray(batch.column(key).to_numpy(zero_copy_only=False)) > 0))
    for name, missing in missing_counts(batch, features).items():
        counts[Count("split_missing", split, name)] = missing
    if split in DAY_COUNTED_SPLITS:
        counts.update(day_counts(batch, split, label_keys))
    return [(count.key, n) for count, n in counts.items() if n]


def day_counts(batch: pa.RecordBatch, split: str, label_keys: tuple[str, ...]) -> dict[Count, int]:
    """Examples and positives per label key of each UTC day (by `timestamp_ms`) in one batch of `split`."""
    days = np.asarray(batch.column(TIMESTAMP_MS).to_numpy(zero_copy_only=False), np.int64) // DAY_MS
    counts: dict[Count, int] = {}
    labels = {key: np.asarray(batch.column(key).to_numpy(zero_copy_only=False)) > 0 for key in label_keys}
    for day in np.unique(days):
        on_day = days == day
        scope = f"{split}/{dt.date(1970, 1, 1) + dt.timedelta(days=int(day))}"
        counts[Count("day_examples", scope)] = int(on_day.sum())
        for key, positive in labels.items():
            counts[Count("day_positives", scope, key)] = int(np.count_nonzero(positive & on_day))
    return counts


def count_input_files(tallies: beam.PCollection, stream: str) -> beam.PCollection:
    """Each file's `FileTally` (components.logs.text_files) as `input` counts of `stream`."""

    def pairs(tally: FileTally) -> list[tuple[str, int]]:
        return [(Count("input", stream, "files").key, 1)] + [
            (Count("input", stream, name).key, getattr(tally, name)) for name in FILE_TALLY_FIELDS
        ]

    return tallies | f"Count{stream.title()}Files" >> beam.FlatMap(pairs)


def parse_outcome_counts(outcome: ParseOutcomes, stream: str) -> list[tuple[str, int]]:
    """The parser's `ParseOutcomes` of a chunk as `input` counts of `stream`."""
    return [(Count("input", stream, name).key, getattr(outcome, name)) for name in PARSE_OUTCOME_FIELDS]


def count_dead_letter(dead: dict) -> tuple[str, int]:
    """One dead letter ({stream, reason, raw}) as a count of its stream and reason."""
    return Count("dead_letters", dead["stream"], dead["reason"]).key, 1


class WriteCounters(beam.PTransform):
    def __init__(self, root: str):
        super().__init__()
        self.root = root

    def expand(self, counter_collections: tuple[beam.PCollection, ...]) -> beam.PCollection:
        return (
            counter_collections
            | "AllCounters" >> beam.Flatten()
            | "Sum" >> beam.CombinePerKey(sum)
            | "ToJson" >> beam.MapTuple(lambda key, n: json.dumps(dataclasses.asdict(Count.from_key(key)) | {"n": n}))
            | "WriteCounters" >> beam.io.WriteToText(
                f"{self.root.rstrip('/')}/{COUNTERS_PREFIX}", file_name_suffix=".jsonl", num_shards=1
            )
        )


def read_counters(root: str) -> PreprocessCounts:
    values: dict[Count, int] = {}
    for result in FileSystems.match([f"{match_pattern(root.rstrip('/'))}/{COUNTERS_PREFIX}*"]):
        for metadata in result.metadata_list:
            with FileSystems.open(metadata.path) as handle:
                for line in handle.read().decode("utf-8").splitlines():
                    if line.strip():
                        fields = json.loads(line)
                        count = Count(fields["kind"], fields["scope"], fields["subject"])
                        values[count] = values.get(count, 0) + int(fields["n"])
    return PreprocessCounts(values)


_V = TypeVar("_V")


def _in_log_order(by_stream: dict[str, _V]) -> dict[str, _V]:
    """Streams impressions first, then the rest by name: the order a log is read in, not the order metrics came in."""
    return dict(sorted(by_stream.items(), key=lambda item: (item[0] != "impressions", item[0])))
