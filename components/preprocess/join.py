"""Impressions + engagement events → one labelled example per impression id.

A task's label is 1 when an event of the task's `event_type` happened `0 <= t_event − t_impression <= window`
(both edges inclusive). Duplicate impression ids keep the earliest record; events with no impression
(orphans), events before their impression (early) and after the window (late) are counted, not lost.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import apache_beam as beam

from components.logs.readers import LogWindow
from components.preprocess.counters import Count
from components.preprocess.parse import IMPRESSION_ID, TIMESTAMP_MS
from configs.logs import EVENT_TYPE

COUNTERS = "counters"


@dataclass(frozen=True)
class EventTask:
    """What the join needs of a task: label key, event type, window in milliseconds."""

    label: str
    event_type: str
    window_ms: int


def label_key(task_name: str) -> str:
    return f"label_{task_name}"


def attribute(impressions: list[dict], events: list[dict], tasks: tuple[EventTask, ...],
              window: LogWindow = LogWindow()) -> tuple[dict | None, dict[str, int]]:
    """The labelled example of one impression id (None when there is none to keep) and what to count."""
    counts: dict[str, int] = {}
    if not impressions:
        counts["orphan_engagements"] = len(events)
        return None, counts
    if len(impressions) > 1:
        counts["duplicate_impressions"] = len(impressions) - 1
    impression = min(impressions, key=lambda r: (r[TIMESTAMP_MS], json.dumps(r, sort_keys=True, default=str)))
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


class _Attribute(beam.DoFn):
    def __init__(self, tasks: tuple[EventTask, ...], window: LogWindow):
        super().__init__()
        self.tasks = tasks
        self.window = window

    def process(self, keyed):
        _, grouped = keyed
        example, counts = attribute(list(grouped["impressions"]), list(grouped["events"]), self.tasks, self.window)
        for name, value in counts.items():
            yield beam.pvalue.TaggedOutput(COUNTERS, (Count("join", subject=name).key, value))
        if example is not None:
            yield example


class JoinEngagements(beam.PTransform):
    """(impressions, engagements) → (examples, counters): CoGroupByKey on impression id, then `attribute`."""

    def __init__(self, tasks: tuple[EventTask, ...], window: LogWindow = LogWindow()):
        super().__init__()
        self.tasks = tasks
        self.window = window

    def expand(self, streams):
        impressions, engagements = streams
        grouped = {
            "impressions": impressions | "KeyImpressions" >> beam.Map(lambda r: (r[IMPRESSION_ID], r)),
            "events": engagements | "KeyEvents" >> beam.Map(lambda r: (r[IMPRESSION_ID], r)),
        } | "GroupById" >> beam.CoGroupByKey()
        outputs = grouped | "Attribute" >> beam.ParDo(_Attribute(self.tasks, self.window)).with_outputs(
            COUNTERS, main="examples"
        )
        return outputs["examples"], outputs[COUNTERS]


class DeduplicateOutcomes(beam.PTransform):
    """Single-table mode: rows with an impression id keep one record per id; rows without one pass as is."""

    def __init__(self, window: LogWindow = LogWindow()):
        super().__init__()
        self.window = window

    def expand(self, rows):
        with_id = rows | "HasId" >> beam.Filter(lambda r: r[IMPRESSION_ID] is not None)
        without_id = rows | "NoId" >> beam.Filter(lambda r: r[IMPRESSION_ID] is None)
        outputs = (
            (
                with_id | "KeyRows" >> beam.Map(lambda r: (r[IMPRESSION_ID], r)) | "GroupRows" >> beam.GroupByKey(),
                without_id | "Unkeyed" >> beam.Map(lambda r: (None, [r])),
            )
            | "AllRows" >> beam.Flatten()
            | "Keep" >> beam.ParDo(_KeepOne(self.window)).with_outputs(COUNTERS, main="examples")
        )
        return outputs["examples"], outputs[COUNTERS]


class _KeepOne(beam.DoFn):
    def __init__(self, window: LogWindow):
        super().__init__()
        self.window = window

    def process(self, keyed):
        example, counts = attribute(list(keyed[1]), [], (), self.window)
        for name, value in counts.items():
            yield beam.pvalue.TaggedOutput(COUNTERS, (Count("join", subject=name).key, value))
        if example is not None:
            yield example
