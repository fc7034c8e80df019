"""What the preprocess step says while it runs: progress records (`components.progress`) on the step's log.

    before the job   the files each stream reads: how many, how large          (`input_files_line`)
    during the job   each worker's running count of records parsed and dead-lettered, every 30 s (`ParseTally`,
                     kept by `parse.ParseRecords`), also as Beam metrics counters in the `adrank` namespace, which
                     Dataflow's job page shows and the launcher says every minute while a Dataflow job runs
                     (`wait_for_job`)
    at stage ends    records read, dead letters per stream, examples per split, the analysis done, files written
                     (`announce_*`: branches on the pipeline's own counts and outputs, said by the worker that
                     ends the stage)

The records are written by this module's `worker_logger` (JSON lines on standard error, `components.step_logging`):
on the DirectRunner the workers' lines reach the step's log (they share its standard error); on Dataflow they are
in the job's worker logs, and the launcher's lines in the step's log.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.runner import PipelineResult, PipelineState

from components.logs.readers import LogWindow, expand_pattern, match_pattern
from components.progress import progress
from components.step_logging import worker_logger

METRICS_NAMESPACE = "adrank"
TALLY_SECONDS = 30.0
DATAFLOW_POLL_SECONDS = 60.0
log = worker_logger(__name__)


def say(message: str, logger: logging.Logger | None = None, **values: Any) -> None:
    """One progress record with `values` as its fields, on `logger` (this module's worker logger)."""
    (logger or log).info(message, extra=progress(**values))


def input_files_line(stream: str, source: str, file_format: str, window: LogWindow, extra_days_after: int = 0) -> str:
    """`impressions: 4 files, 12.3 MB (logs/impressions/*.jsonl)`; a BigQuery source names its table or query."""
    if file_format == "bigquery":
        return f"{stream}: BigQuery {' '.join(source.split())[:80]}"
    patterns = expand_pattern(source, window, extra_days_after)
    sizes = [m.size_in_bytes for result in FileSystems.match([match_pattern(p) for p in patterns])
             for m in result.metadata_list]
    where = patterns[0] if len(patterns) == 1 else f"{patterns[0]} … {len(patterns)} day patterns"
    return f"{stream}: {plural(len(sizes), 'file')}, {_megabytes(sum(sizes))} ({where})"


def plural(count: int, noun: str) -> str:
    """`1 file`, `2 files`, `12,000 records`."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB" if size >= 100_000 else f"{size / 1e3:,.1f} kB"


class ParseTally:
    """One worker's counts of a stream's records parsed and dead-lettered: a progress record every
    `interval_seconds` (on `logger`, this module's by default), and the Beam metrics counters `<stream>_parsed` /
    `<stream>_dead_letters` advanced at each bundle's end."""

    def __init__(self, stream: str, interval_seconds: float = TALLY_SECONDS,
                 clock: Callable[[], float] = time.monotonic, logger: logging.Logger | None = None):
        self.stream, self.interval_seconds, self.clock, self.logger = stream, interval_seconds, clock, logger
        self.parsed = self.dead_letters = 0
        self._flushed = (0, 0)
        self._last_line = clock()
        self._parsed_metric = Metrics.counter(METRICS_NAMESPACE, f"{stream}_parsed")
        self._dead_metric = Metrics.counter(METRICS_NAMESPACE, f"{stream}_dead_letters")
        self._worker = os.environ.get("WORKER_ID", f"pid {os.getpid()}")

    def count(self, parsed: bool) -> None:
        self.count_many(1 if parsed else 0, 0 if parsed else 1)

    def count_many(self, parsed: int, dead_letters: int) -> None:
        """A chunk's records: `parsed` valid, `dead_letters` not."""
        before = (self.parsed + self.dead_letters) // 1024
        self.parsed += parsed
        self.dead_letters += dead_letters
        crossed = (self.parsed + self.dead_letters) // 1024 > before
        if crossed and self.clock() - self._last_line >= self.interval_seconds:
            self._last_line = self.clock()
            say(f"{self.stream}: {self.parsed:,} records parsed, {self.dead_letters:,} dead letters so far "
                f"({self._worker})", self.logger, stream=self.stream, records=self.parsed,
                dead_letters=self.dead_letters, worker=self._worker)

    def flush_metrics(self) -> None:
        self._parsed_metric.inc(self.parsed - self._flushed[0])
        self._dead_metric.inc(self.dead_letters - self._flushed[1])
        self._flushed = (self.parsed, self.dead_letters)


def announce_counter(counters, name: str, label: str, line: Callable[[int], str]):
    """Say `line(n)` for the pair `(name, n)` among `counters` (the pipeline's `(name, count)` pairs, see
    `counters`) when the stage that counts it ends; the record's fields: `stage` (`label`) and `count`."""
    return (counters
            | f"Select{label}" >> beam.Filter(lambda pair: pair[0] == name)
            | f"Announce{label}" >> beam.Map(lambda pair: say(line(pair[1]), stage=label, count=pair[1])))


def announce_dead_letters(dead_letters):
    """`dead letters: impressions 120, engagements 3` (or `none`) once every dead letter is known."""

    def line(per_stream: list[tuple[str, int]]) -> str:
        counts = ", ".join(f"{stream} {n:,}" for stream, n in sorted(per_stream))
        return f"dead letters: {counts or 'none'}"

    return (dead_letters
            | "DeadLetterStream" >> beam.Map(lambda dead: dead["stream"])
            | "DeadLettersPerStream" >> beam.combiners.Count.PerElement()
            | "DeadLetterStreams" >> beam.combiners.ToList()
            | "AnnounceDeadLetters" >> beam.Map(
                lambda per_stream: say(line(per_stream), dead_letters=dict(per_stream))))


def announce_done(collection, label: str, message: str):
    """Say `message` once `collection` (e.g. a transform function, the names of written files) is complete;
    `{files}` in it becomes the number of its elements as files (`2 files`), also the record's `files` field. An
    empty collection says nothing: the count has no default (a default costs the job a stage and a side input of
    its own; every collection announced holds at least one element when the step succeeds)."""
    return (collection
            | f"Done{label}" >> beam.CombineGlobally(beam.combiners.CountCombineFn()).without_defaults()
            | f"Announce{label}" >> beam.Map(lambda n: say(message.format(files=plural(n, "file")), files=n)))


def wait_for_job(result: PipelineResult, poll_seconds: float = DATAFLOW_POLL_SECONDS,
                 logger: logging.Logger | None = None) -> None:
    """Wait until the job ends (raising if it failed). While it runs (Dataflow: `run()` returns at once), say
    the `adrank` counters summed over the workers every `poll_seconds` (a record with the counters as fields);
    the DirectRunner's result has ended."""
    state = result.wait_until_finish(duration=int(poll_seconds * 1000))
    while not PipelineState.is_terminal(state):
        counters = metric_counts(result)
        if counters:
            say("so far: " + ", ".join(f"{name.replace('_', ' ')} {value:,}" for name, value in counters.items()),
                logger, **counters)
        state = result.wait_until_finish(duration=int(poll_seconds * 1000))
    result.wait_until_finish()


def metric_counts(result: PipelineResult) -> dict[str, int]:
    """The job's `adrank` counters by name (committed values where the runner has them, else attempted)."""
    counts: dict[str, int] = {}
    for counter in result.metrics().query(MetricsFilter().with_namespace(METRICS_NAMESPACE))["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        counts[counter.key.metric.name] = counts.get(counter.key.metric.name, 0) + int(value or 0)
    return dict(sorted(counts.items()))
