"""Impressions + engagement events → one labelled example per impression id.

A task's label is 1 when an event of the task's `event_type` happened `0 <= t_event − t_impression <= window`
(both edges inclusive). Duplicate impression ids keep the earliest record; events with no impression
(orphans), events before their impression (early) and after the window (late) are counted, not lost.

`attribute` says it for the records of one id; `attribute_batch` does the same for every id of a partition at once
(column-wise), and the Beam transforms group record batches by a partition of the impression id
(`components.preprocess.partitions`) so that an id's impressions and events meet:

    impressions ─► (partition, part) ─┐
    engagements ─► (partition, part) ─┴─► CoGroupByKey ─► [plausible times: `PlausibleTimes`, dead letters]
                                           ─► attribute_batch per partition ─► examples + counters

A partition's impression parts are not concatenated: `attribute_batch` and `deduplicate_batch` take them as a
`pyarrow.Table` (the parts as its chunks), decide on the id and timestamp columns alone, and copy the wide feature
columns once, for the rows they keep (`_take`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam import typehints
from apache_beam.transforms.error_handling import ErrorHandler

from components.logs.readers import LogWindow
from components.preprocess.batch_coder import BATCH, KEYED_BATCH
from components.preprocess.counters import Count
from components.preprocess.example_batches import ENGAGEMENT_SCHEMA, concat, record_dicts
from components.preprocess.parse import DEAD_LETTER, IMPRESSION_ID, TIMESTAMP_MS, FeatureField
from components.preprocess.partitions import partition_parts
from components.preprocess.time_range import PlausibleRange, median_input
from configs.logs import EVENT_TYPE
from foundation.canonical_json import canonical_json

COUNTERS = "counters"
SIDED_BATCH = typehints.Tuple[int, typehints.Tuple[str, pa.RecordBatch]]  # (partition, (stream, batch))
Rows: TypeAlias = pa.RecordBatch | pa.Table  # one batch, or a partition's parts as the chunks of a table


@dataclass(frozen=True)
class EventTask:
    """What the join needs of a task: label key, event type, window in milliseconds."""

    label: str
    event_type: str
    window_ms: int


def label_key(task_name: str) -> str:
    return f"label_{task_name}"


def tie_order(record: dict) -> str:
    """What orders impressions of one id at the same time: the record as canonical JSON (dates as text), the smallest
    first, so the one kept does not depend on the order the logs were read in."""
    return canonical_json(record, default=str)


def attribute(impressions: list[dict], events: list[dict], tasks: tuple[EventTask, ...],
              window: LogWindow = LogWindow()) -> tuple[dict | None, dict[str, int]]:
    """The labelled example of one impression id (None when there is none to keep) and what to count."""
    counts: dict[str, int] = {}
    if not impressions:
        counts["orphan_engagements"] = len(events)
        return None, counts
    if len(impressions) > 1:
        counts["duplicate_impressions"] = len(impressions) - 1
    impression = min(impressions, key=lambda r: (r[TIMESTAMP_MS], tie_order(r)))
    if not window.contains(impression[TIMESTAMP_MS]):
        counts["impressions_outside_window"] = 1
        counts["engagements_of_impressions_outside_window"] = len(events)
        return None, counts
    example = dict(impression)
    used_types = {task.event_type for task in tasks}
    unused = sum(1 for event in events if event[EVENT_TYPE] not in used_types)
    if unused:
        counts["engagements_of_unused_type"] = unused
    for task in tasks:
        positive = False
        for event in events:
            if event[EVENT_TYPE] != task.event_type:
                continue
            delay = event[TIMESTAMP_MS] - impression[TIMESTAMP_MS]
            if 0 <= delay <= task.window_ms:
                positive = True
            elif delay < 0:
                counts[f"early_events:{task.label}"] = counts.get(f"early_events:{task.label}", 0) + 1
            else:
                counts[f"late_events:{task.label}"] = counts.get(f"late_events:{task.label}", 0) + 1
        example[task.label] = 1.0 if positive else 0.0
    return example, counts


def _window_mask(times: np.ndarray, window: LogWindow) -> np.ndarray:
    inside = np.ones(len(times), bool)
    if window.start_ms is not None:
        inside &= times >= window.start_ms
    if window.end_ms is not None:
        inside &= times < window.end_ms
    return inside


def _column(rows: Rows, name: str) -> pa.Array:
    """One column of `rows` as one array (a table's chunks of it concatenated: only this column is copied)."""
    column = rows.column(name)
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _take(rows: Rows, indices: np.ndarray) -> pa.RecordBatch:
    """The rows at `indices`, in that order, as one batch: each column copied once, for those rows only."""
    taken = rows.take(pa.array(indices, pa.int64()))
    return taken if isinstance(taken, pa.RecordBatch) else concat(taken.to_batches(), taken.schema)


def _earliest_per_id(impressions: Rows, features: Sequence[FeatureField]) -> tuple[np.ndarray, np.ndarray,
                                                                                      dict[str, int]]:
    """(the row kept for each id code, the id code of each row, counts): the earliest impression of each id, ties
    broken as `attribute` breaks them (by the record's JSON); `duplicate_impressions` counted."""
    codes = np.asarray(pc.dictionary_encode(_column(impressions, IMPRESSION_ID)).indices, np.int64)
    times = np.asarray(_column(impressions, TIMESTAMP_MS), np.int64)
    order = np.lexsort((times, codes))
    first = np.ones(len(order), bool)
    first[1:] = codes[order][1:] != codes[order][:-1]
    kept = order[first]  # the row of each code (codes ascending), earliest time first
    counts = {}
    duplicates = len(order) - len(kept)
    if duplicates:
        counts["duplicate_impressions"] = duplicates
        # several rows at a code's earliest time: the first in `tie_order` wins, as in `attribute`
        earliest = times[kept][codes[order]] == times[order]
        tied = np.bincount(codes[order][earliest], minlength=len(kept))
        for code in np.flatnonzero(tied > 1).tolist():
            rows = order[(codes[order] == code) & earliest].tolist()
            dicts = record_dicts(_take(impressions, np.asarray(rows, np.int64)), range(len(rows)), features)
            kept[code] = rows[min(range(len(rows)), key=lambda i: tie_order(dicts[i]))]
    return kept, codes, counts


def attribute_batch(impressions: Rows, events: pa.RecordBatch, tasks: tuple[EventTask, ...],
                    window: LogWindow, features: Sequence[FeatureField]) -> tuple[pa.RecordBatch, dict[str, int]]:
    """`attribute` for every impression id of the batches at once: the labelled examples (sorted by id) and the
    counts (only those that occurred, as `attribute` names them)."""
    counts: dict[str, int] = {}
    if not impressions.num_rows:
        if events.num_rows:
            counts["orphan_engagements"] = events.num_rows
        return _with_labels(impressions, tasks, {}, np.zeros(0, np.int64)), counts
    impression_ids = _column(impressions, IMPRESSION_ID)
    ids = pa.chunked_array([impression_ids, events.column(IMPRESSION_ID)]).combine_chunks()
    codes = np.asarray(pc.dictionary_encode(ids).indices, np.int64)
    impression_codes, event_codes = codes[:impressions.num_rows], codes[impressions.num_rows:]
    kept_row = np.full(int(codes.max()) + 1 if len(codes) else 0, -1, np.int64)
    if impressions.num_rows:
        kept, local_codes, duplicate_counts = _earliest_per_id(impressions, features)
        counts |= duplicate_counts
        kept_row[impression_codes[kept]] = kept
    event_row = kept_row[event_codes] if len(event_codes) else np.zeros(0, np.int64)
    orphans = int(np.count_nonzero(event_row < 0))
    if orphans:
        counts["orphan_engagements"] = orphans
    times = np.asarray(_column(impressions, TIMESTAMP_MS), np.int64)
    rows = kept_row[kept_row >= 0]
    inside_rows = rows[_window_mask(times[rows], window)]
    outside = len(rows) - len(inside_rows)
    inside = np.zeros(impressions.num_rows, bool)
    inside[inside_rows] = True
    matched = event_row >= 0
    event_inside = np.zeros(len(event_row), bool)
    event_inside[matched] = inside[event_row[matched]]
    if outside:
        counts["impressions_outside_window"] = outside
        counts["engagements_of_impressions_outside_window"] = int(np.count_nonzero(matched & ~event_inside))
    types = np.asarray(events.column(EVENT_TYPE).to_numpy(zero_copy_only=False), dtype=object)
    used = np.isin(types, [task.event_type for task in tasks]) if len(types) else np.zeros(0, bool)
    unused = int(np.count_nonzero(event_inside & ~used))
    if unused:
        counts["engagements_of_unused_type"] = unused
    event_times = np.asarray(events.column(TIMESTAMP_MS), np.int64)
    delays = event_times - times[np.where(matched, event_row, 0)] if len(event_row) else event_times
    labels = {}
    for task in tasks:
        of_task = event_inside & (types == task.event_type)
        positive_events = of_task & (delays >= 0) & (delays <= task.window_ms)
        positive = np.zeros(impressions.num_rows, bool)
        positive[event_row[positive_events]] = True
        early = int(np.count_nonzero(of_task & (delays < 0)))
        late = int(np.count_nonzero(of_task & (delays > task.window_ms)))
        if early:
            counts[f"early_events:{task.label}"] = early
        if late:
            counts[f"late_events:{task.label}"] = late
        labels[task.label] = positive
    order = np.asarray(pc.sort_indices(impression_ids.take(pa.array(inside_rows))))
    return _with_labels(impressions, tasks, labels, inside_rows[order]), counts


def _with_labels(impressions: Rows, tasks: tuple[EventTask, ...], labels: dict[str, np.ndarray],
                 rows: np.ndarray) -> pa.RecordBatch:
    """The impressions `rows`, in that order, with a float 0/1 column per task (in task order)."""
    examples = _take(impressions, rows)
    for task in tasks:
        values = labels[task.label][rows] if task.label in labels else np.zeros(len(rows), bool)
        examples = examples.append_column(task.label, pa.array(values.astype(np.float64)))
    return examples


def deduplicate_batch(rows: Rows, window: LogWindow,
                      features: Sequence[FeatureField]) -> tuple[pa.RecordBatch, dict[str, int]]:
    """Single-table mode, for rows of a partition: `attribute` of each id's rows with no events (the earliest kept),
    and of each row without an id on its own."""
    with_id = np.asarray(_column(rows, IMPRESSION_ID).is_valid(), bool)
    counts: dict[str, int] = {}
    kept_rows = np.flatnonzero(~with_id)
    if with_id.any():
        identified = rows if with_id.all() else rows.filter(pa.array(with_id))
        kept, _, duplicate_counts = _earliest_per_id(identified, features)
        counts |= duplicate_counts
        kept_rows = np.concatenate([kept_rows, np.flatnonzero(with_id)[kept]])
    times = np.asarray(_column(rows, TIMESTAMP_MS), np.int64)
    inside = _window_mask(times[kept_rows], window)
    if not inside.all():
        counts["impressions_outside_window"] = int(np.count_nonzero(~inside))
        counts["engagements_of_impressions_outside_window"] = 0
    examples = _take(rows, np.sort(kept_rows[inside]))
    if with_id.all():  # one row per id: sorted by it, whatever order the rows came in
        examples = examples.take(pc.sort_indices(examples.column(IMPRESSION_ID)))
    return examples, counts


def _counter_pairs(counts: dict[str, int]) -> list[tuple[str, int]]:
    return [(Count("join", subject=name).key, value) for name, value in counts.items()]


class _KeyByImpressionId(beam.DoFn):
    def __init__(self, side: str, partitions: int):
        super().__init__()
        self.side, self.partitions = side, partitions

    def process(self, batch: pa.RecordBatch):
        for partition, part in partition_parts(batch, batch.column(IMPRESSION_ID), self.partitions):
            yield partition, (self.side, part)


class PlausibleTimes(NamedTuple):
    """The plausible-times check (`time_range`) done inside the join, on each partition's rows once they are grouped,
    instead of on the streams before it: the wide impression batches then cross one stage boundary less (a check
    against the median needs that median, a side input, before it can see a row; the grouping waits anyway).
    `median`: the one-element PCollection of the median impression time; `dead_letters`: where the rows out of range
    go (an `ErrorHandler`)."""

    median: beam.PCollection
    impressions: PlausibleRange
    engagements: PlausibleRange
    dead_letters: ErrorHandler


class _AttributePartition(beam.DoFn):
    def __init__(self, tasks: tuple[EventTask, ...], window: LogWindow, features: tuple[FeatureField, ...],
                 schema: pa.Schema, plausible: tuple[PlausibleRange, PlausibleRange] | None = None):
        super().__init__()
        self.tasks, self.window, self.features, self.schema = tasks, window, features, schema
        self.plausible = plausible

    def process(self, keyed, median: int | None = None):
        _, parts = keyed
        by_side: dict[str, list[pa.RecordBatch]] = {"impressions": [], "events": []}
        for side, part in parts:
            by_side[side].append(part)
        if self.plausible is not None:
            for side, plausible in zip(("impressions", "events"), self.plausible, strict=True):
                kept = []
                for part in by_side[side]:
                    rows, letters = plausible.keep(part, median)
                    for letter in letters:
                        yield beam.pvalue.TaggedOutput(DEAD_LETTER, letter)
                    if rows is not None:
                        kept.append(rows)
                by_side[side] = kept
        # the order the parts came in changes nothing: the kept duplicate is chosen by content, the examples are
        # sorted by their (unique) id
        impressions = pa.Table.from_batches(by_side["impressions"], self.schema)
        events = concat(by_side["events"], ENGAGEMENT_SCHEMA)
        examples, counts = attribute_batch(impressions, events, self.tasks, self.window, self.features)
        for pair in _counter_pairs(counts):
            yield beam.pvalue.TaggedOutput(COUNTERS, pair)
        if examples.num_rows:
            yield examples


class JoinEngagements(beam.PTransform):
    """(impression batches, engagement batches) → (example batches, counter pairs): the two streams grouped by a
    partition of the impression id (`partitions` of them), then `attribute_batch` per partition. `schema`: the
    impression batches'; `features`: the logged features (for the tie-break among duplicates); `plausible`: the
    rows of implausible times left out of each partition first, as dead letters (`PlausibleTimes`)."""

    def __init__(self, tasks: tuple[EventTask, ...], window: LogWindow, features: tuple[FeatureField, ...],
                 schema: pa.Schema, partitions: int, plausible: PlausibleTimes | None = None):
        super().__init__()
        self.tasks, self.window, self.features, self.schema, self.partitions = (tasks, window, features, schema,
                                                                                partitions)
        self.plausible = plausible

    def expand(self, streams):
        impressions, engagements = streams
        parts = (
            impressions | "KeyImpressions" >> beam.ParDo(_KeyByImpressionId("impressions", self.partitions))
            .with_output_types(SIDED_BATCH),
            engagements | "KeyEvents" >> beam.ParDo(_KeyByImpressionId("events", self.partitions))
            .with_output_types(SIDED_BATCH),
        ) | "BothStreams" >> beam.Flatten()
        plausible, side_inputs = self.plausible, []
        if plausible is not None:
            side_inputs = [median_input(plausible.median)]
        attribute = _AttributePartition(self.tasks, self.window, self.features, self.schema,
                                        None if plausible is None else (plausible.impressions, plausible.engagements))
        outputs = (parts
                   | "GroupById" >> beam.GroupByKey()
                   | "Attribute" >> beam.ParDo(attribute, *side_inputs).with_output_types(BATCH).with_outputs(
                       COUNTERS, DEAD_LETTER, main="examples"))
        if plausible is not None:
            plausible.dead_letters.add_error_pcollection(outputs[DEAD_LETTER])
        return outputs["examples"], outputs[COUNTERS]


class _KeepOnePerId(beam.DoFn):
    """`(partition, its parts)` or `(None, one batch of rows without an id)` → `deduplicate_batch`'s examples."""

    def __init__(self, window: LogWindow, features: tuple[FeatureField, ...], schema: pa.Schema):
        super().__init__()
        self.window, self.features, self.schema = window, features, schema

    def process(self, keyed):
        _, parts = keyed
        rows = parts if isinstance(parts, pa.RecordBatch) else pa.Table.from_batches(list(parts), self.schema)
        examples, counts = deduplicate_batch(rows, self.window, self.features)
        for pair in _counter_pairs(counts):
            yield beam.pvalue.TaggedOutput(COUNTERS, pair)
        if examples.num_rows:
            yield examples


class DeduplicateOutcomes(beam.PTransform):
    """Single-table mode: row batches → (example batches, counter pairs); rows with an impression id keep one per id
    (grouped by a partition of the id), rows without one pass as they are (outside the window: dropped, counted)."""

    def __init__(self, window: LogWindow, features: tuple[FeatureField, ...], schema: pa.Schema, partitions: int):
        super().__init__()
        self.window, self.features, self.schema, self.partitions = window, features, schema, partitions

    def expand(self, rows):
        partitions = self.partitions
        split = rows | "ById" >> beam.ParDo(_WithAndWithoutId(partitions)).with_output_types(KEYED_BATCH).with_outputs(
            WITHOUT_ID, main="with_id")
        grouped = (split["with_id"]
                   | "GroupRows" >> beam.GroupByKey()
                   | "Keep" >> beam.ParDo(_KeepOnePerId(self.window, self.features, self.schema))
                   .with_output_types(BATCH)
                   .with_outputs(COUNTERS, main="examples"))
        alone = split[WITHOUT_ID] | "KeepInWindow" >> beam.ParDo(_KeepOnePerId(self.window, self.features,
                                                                               self.schema)).with_output_types(BATCH).with_outputs(
            COUNTERS, main="examples")
        return ((grouped["examples"], alone["examples"]) | "AllExamples" >> beam.Flatten(),
                (grouped[COUNTERS], alone[COUNTERS]) | "AllCounters" >> beam.Flatten())


WITHOUT_ID = "without_id"


class _WithAndWithoutId(beam.DoFn):
    """A batch → `(partition, part)` of its rows with an impression id, and (tagged `without_id`) `(None, rows)` of
    those without one (each its own example: nothing to group them with)."""

    def __init__(self, partitions: int):
        super().__init__()
        self.partitions = partitions

    def process(self, batch: pa.RecordBatch):
        with_id = batch.column(IMPRESSION_ID).is_valid()
        if not pc.all(with_id).as_py():
            yield beam.pvalue.TaggedOutput(WITHOUT_ID, (None, batch.filter(pc.invert(with_id))))
        identified = batch.filter(with_id)
        if identified.num_rows:
            yield from partition_parts(identified, identified.column(IMPRESSION_ID), self.partitions)


class _PartitionTimeRange(beam.DoFn):
    """One partition's (id, time) rows → (earliest, latest) time of the examples `attribute_batch` makes of it: each
    id's earliest impression (after the plausible-times check, as `_AttributePartition` does it) when in the window;
    nothing for a partition without examples. The tie-break among an id's earliest rows picks a row, not a time."""

    def __init__(self, window: LogWindow, plausible: PlausibleRange | None = None):
        super().__init__()
        self.window, self.plausible = window, plausible

    def process(self, keyed, median: int | None = None):
        _, parts = keyed
        rows = pa.Table.from_batches(list(parts))  # a group holds at least one part
        times = np.asarray(_column(rows, TIMESTAMP_MS), np.int64)
        if self.plausible is not None:
            inside = self.plausible.inside(times, median)
            if not inside.all():
                rows, times = rows.filter(pa.array(inside)), times[inside]
        if not rows.num_rows:
            return
        codes = np.asarray(pc.dictionary_encode(_column(rows, IMPRESSION_ID)).indices, np.int64)
        order = np.lexsort((times, codes))
        first = np.ones(len(order), bool)
        first[1:] = codes[order][1:] != codes[order][:-1]
        earliest = times[order[first]]
        examples = earliest[_window_mask(earliest, self.window)]
        if len(examples):
            yield int(examples.min()), int(examples.max())


def _ids_and_times(batch: pa.RecordBatch, partitions: int):
    """An impression batch's ids and times, in the partitions of `_KeyByImpressionId`."""
    narrow = batch.select([IMPRESSION_ID, TIMESTAMP_MS])
    yield from partition_parts(narrow, narrow.column(IMPRESSION_ID), partitions)


class ExampleTimeRange(beam.PTransform):
    """Impression batches → (earliest, latest) example time per partition, as `JoinEngagements` would make the
    examples of the same batches (same `window`, `partitions`, `plausible` check), from their ids and times alone.
    The time split can then take its dates from this narrow grouping instead of from the joined examples, and cut
    the wide examples into splits as the join makes them."""

    def __init__(self, window: LogWindow, partitions: int, plausible: PlausibleTimes | None = None):
        super().__init__()
        self.window, self.partitions, self.plausible = window, partitions, plausible

    def expand(self, impressions: beam.PCollection) -> beam.PCollection:
        plausible, side_inputs = self.plausible, []
        if plausible is not None:
            side_inputs = [median_input(plausible.median)]
        return (impressions
                | "IdsAndTimes" >> beam.FlatMap(_ids_and_times, self.partitions).with_output_types(KEYED_BATCH)
                | "GroupById" >> beam.GroupByKey()
                | "ExampleTimes" >> beam.ParDo(_PartitionTimeRange(
                    self.window, None if plausible is None else plausible.impressions), *side_inputs))
