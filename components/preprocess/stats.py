"""Counters of the preprocess step: what was read, dropped, joined, split and labelled.

Every stage emits `(name, count)` pairs; `WriteCounters` sums them into one JSON file next to the
examples, which `read_counters` turns back into a dict once the pipeline has finished.
"""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from components.preprocess.parse import MISSING

COUNTERS_PREFIX = "stats/counters"


class CountExamples(beam.CombineFn):
    """One pass over a split: examples, positives per label key, missing values per feature."""

    def __init__(self, split: str, label_keys: tuple[str, ...]):
        super().__init__()
        self.split = split
        self.label_keys = label_keys

    def create_accumulator(self):
        return {}

    def add_input(self, counts, example):
        counts["examples"] = counts.get("examples", 0) + 1
        for key in self.label_keys:
            if example[key] > 0:
                counts[f"positives:{key}"] = counts.get(f"positives:{key}", 0) + 1
        for name in example[MISSING]:
            counts[f"missing:{name}"] = counts.get(f"missing:{name}", 0) + 1
        return counts

    def merge_accumulators(self, accumulators):
        merged: dict[str, int] = {}
        for counts in accumulators:
            for name, value in counts.items():
                merged[name] = merged.get(name, 0) + value
        return merged

    def extract_output(self, counts):
        return [(f"split:{self.split}:{name}", value) for name, value in counts.items()] or [
            (f"split:{self.split}:examples", 0)
        ]


def count_split(examples, split: str, label_keys: tuple[str, ...]):
    return (
        examples
        | f"Count{split.title()}" >> beam.CombineGlobally(CountExamples(split, label_keys))
        | f"Flatten{split.title()}Counts" >> beam.FlatMap(lambda pairs: pairs)
    )


def count_all(collection, name: str):
    return (
        collection
        | f"Count{name}" >> beam.combiners.Count.Globally()
        | f"Name{name}" >> beam.Map(lambda n, key=name: (key, n))
    )


class WriteCounters(beam.PTransform):
    def __init__(self, root: str):
        super().__init__()
        self.root = root

    def expand(self, counter_collections):
        return (
            counter_collections
            | "AllCounters" >> beam.Flatten()
            | "Sum" >> beam.CombinePerKey(sum)
            | "ToJson" >> beam.Map(lambda kv: json.dumps([kv[0], kv[1]]))
            | "WriteCounters" >> beam.io.WriteToText(
                f"{self.root.rstrip('/')}/{COUNTERS_PREFIX}", file_name_suffix=".jsonl", num_shards=1
            )
        )


def read_counters(root: str) -> dict[str, int]:
    counters: dict[str, int] = {}
    for result in FileSystems.match([f"{root.rstrip('/')}/{COUNTERS_PREFIX}*"]):
        for metadata in result.metadata_list:
            with FileSystems.open(metadata.path) as handle:
                for line in handle.read().decode("utf-8").splitlines():
                    if line.strip():
                        name, value = json.loads(line)
                        counters[name] = counters.get(name, 0) + int(value)
    return counters
