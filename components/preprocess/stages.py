"""The stages of the preprocess job as composite Beam transforms, named for what they do to the data.

    ReadImpressions / ReadEngagements  log files → parsed records + counters             dead letters ──┐
    DropImplausibleTimes               records → those near the median impression time   dead letters ──┤ ErrorHandler
    SplitByTime                        examples → {train, eval[, calibration]}                          ▼
    CountSplits                        {split: examples} → counters                              WriteDeadLetters
    AnalyzeAndTransform                {split: examples} → transform_fn + transformed            → dead_letter/*.jsonl
    WriteExamples                      transformed splits → blocks + TFRecords                     + counters
    WriteRawEval                       the eval split as logged → TFRecords

`components.preprocess.run.PreprocessLogs` chains them in the order of the data flow.

Dead letters: a stage that turns bad records into dead letters takes Beam's `ErrorHandler` the way Beam's own
transforms do (`stage.with_error_handler(handler)`) and hands it its dead-letter PCollection; the handler flattens
them into its consumer, `WriteDeadLetters`, and the pipeline refuses to run while a handler is left open, so a
stage's dead letters cannot be wired to nowhere. A stage given no handler refuses to build.

Inside the stages a bad record still leaves its `ParDo` through a tagged output (`parse.ParseRecords`,
`time_range.keep_plausible_times`), not through `ParDo.with_exception_handling`: that wrapper's dead-letter element
is `(input, (exception type, repr(exception), traceback lines))`, so the reason (`InvalidRecord.reason`,
`bad_csv_row:<what>`) would survive only as text to parse back out of a repr; the records and bytes a bundle
parsed and dead-lettered (`ParseOutcomes`, the manifest's input accounting) and the worker's running tally are
counted inside `ParseRecords`, which the wrapper's failure path bypasses; and a traceback would be formatted for
every bad record. A time outside the plausible range is no exception at all, only a comparison.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import apache_beam as beam
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from apache_beam.transforms.error_handling import ErrorHandler
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from components.logs.readers import FILES, RECORDS, LogWindow, ReadLogRecords
from components.logs.split import eval_start_for_latest, split_of, train_start_after_burn_in
from components.preprocess.block_format import block_layout
from components.preprocess.blocks import WriteExampleBlocks
from components.preprocess.counters import (
    Count,
    count_dead_letter,
    count_input_files,
    count_parse_outcomes,
    count_records_read,
    count_split,
)
from components.preprocess.manifest import CALIBRATION_SPLIT, TransformedFeatureSpec
from components.preprocess.parse import TIMESTAMP_MS, parse_stream
from components.preprocess.shuffle import ShuffleExamples
from components.preprocess.step_messages import (
    announce_counter,
    announce_dead_letters,
    announce_done,
    input_files_line,
    plural,
    say,
)
from components.preprocess.time_range import keep_plausible_times
from components.preprocess.transform import build_preprocessing_fn, raw_feature_spec

SPLITS = ("train", "eval")
DEAD_LETTER_DIR = "dead_letter"
RAW_EVAL_DIR = "raw_eval"
DAY_SECONDS = 86_400


class _RoutesDeadLetters(beam.PTransform):
    """A stage whose bad records become dead letters, handed to the `ErrorHandler` given by `with_error_handler`
    (Beam's convention for transforms with error outputs)."""

    def __init__(self, label: str | None = None):
        super().__init__(label)
        self._error_handler: ErrorHandler | None = None

    def with_error_handler(self, error_handler: ErrorHandler) -> _RoutesDeadLetters:
        self._error_handler = error_handler
        return self

    def _route(self, dead_letters: beam.PCollection) -> None:
        if self._error_handler is None:
            raise ValueError(f"{type(self).__name__} needs .with_error_handler(handler): its dead letters must be "
                             f"written somewhere, never dropped")
        self._error_handler.add_error_pcollection(dead_letters)


class ParsedStream(NamedTuple):
    """One stream read: `records` the parsed records (dicts, `parse.ImpressionParser` / `EngagementParser`), and
    `counters` its `(Count key, n)` pairs: records read, and for files each file's tally and the parse outcomes."""

    records: beam.PCollection
    counters: beam.PCollection


class _ReadStream(_RoutesDeadLetters):
    """PBegin → `ParsedStream` of `stream`: read every record (`ReadLogRecords`), parse it with `parser`; each record
    that does not parse is a dead letter `{stream, reason, raw}` for the error handler."""

    stream = ""

    def __init__(self, source: str, file_format: str, parser: Callable[[Any], dict], window: LogWindow = LogWindow(),
                 extra_days_after: int = 0, *, csv_delimiter: str = ",", max_record_bytes: int | None = None,
                 max_record_lines: int | None = None):
        super().__init__()
        self.source, self.file_format, self.parser, self.window = source, file_format, parser, window
        self.extra_days_after = extra_days_after
        self.csv_delimiter, self.max_record_bytes, self.max_record_lines = (csv_delimiter, max_record_bytes,
                                                                           max_record_lines)

    def expand(self, pbegin: beam.pvalue.PBegin) -> ParsedStream:
        stream = self.stream
        say(input_files_line(stream, self.source, self.file_format, self.window, self.extra_days_after), stream=stream)
        read = pbegin | "ReadLogRecords" >> ReadLogRecords(
            self.source, self.file_format, self.window, self.extra_days_after, csv_delimiter=self.csv_delimiter,
            max_record_bytes=self.max_record_bytes, max_record_lines=self.max_record_lines)
        parsed, dead_letters, outcomes = parse_stream(read[RECORDS], stream, self.parser)
        self._route(dead_letters)
        records_read = count_records_read(read[RECORDS], stream)
        _ = announce_counter(records_read, Count("records_read", stream).key, f"{stream.title()}Read",
                             counted_line(f"{stream}: read ", "record"))
        counters = [records_read]
        if self.file_format != "bigquery":  # a table has no files or bytes to account for
            counters += [count_input_files(read[FILES], stream), count_parse_outcomes(outcomes, stream)]
        return ParsedStream(parsed, tuple(counters) | "AllCounters" >> beam.Flatten())


class ReadImpressions(_ReadStream):
    """PBegin → `ParsedStream` of impressions (those of `window`'s days); dead letters to the error handler."""

    stream = "impressions"


class ReadEngagements(_ReadStream):
    """PBegin → `ParsedStream` of engagement events, of `window`'s days and `extra_days_after` more (an event may
    follow its impression by the longest attribution window); dead letters to the error handler."""

    stream = "engagements"


class DropImplausibleTimes(_RoutesDeadLetters):
    """Parsed records of `stream` → those within `skew_days` of the `median` impression time (a one-element
    PCollection, `time_range.MedianTime`) and at most `late_ms` after that; the others are dead letters
    `timestamp_out_of_range` for the error handler."""

    def __init__(self, stream: str, median: beam.PCollection, skew_days: float, late_ms: int = 0):
        super().__init__()
        self.stream, self.median, self.skew_days, self.late_ms = stream, median, skew_days, late_ms

    def expand(self, records: beam.PCollection) -> beam.PCollection:
        kept, dead_letters = keep_plausible_times(records, self.stream, self.median, self.skew_days, self.late_ms)
        self._route(dead_letters)
        return kept


class WriteDeadLetters(beam.PTransform):
    """Dead letters `{stream, reason, raw}` → `dead_letter/dead_letter-*.jsonl` under `root` (one JSON object a line),
    a progress line with the dead letters per stream; outputs one `(Count("dead_letters", stream, reason).key, 1)`
    pair per dead letter, so the manifest counts them per reason."""

    def __init__(self, root: str):
        super().__init__()
        self.root = root

    def expand(self, dead_letters: beam.PCollection) -> beam.PCollection:
        _ = dead_letters | "ToJson" >> beam.Map(_json_line) | "WriteJsonLines" >> beam.io.WriteToText(
            f"{self.root}/{DEAD_LETTER_DIR}/dead_letter", file_name_suffix=".jsonl"
        )
        _ = announce_dead_letters(dead_letters)
        return dead_letters | "DeadLetterReason" >> beam.Map(count_dead_letter)


class _PartitionByTime(beam.PartitionFn):
    """Partition index (in `SPLITS`) of an example: eval from the side input `eval_start_ms` on, train before."""

    def partition_for(self, element: Any, num_partitions: int, *args: Any, **kwargs: Any) -> int:
        (eval_start_ms,) = args
        return SPLITS.index(split_of(element[TIMESTAMP_MS], eval_start_ms))


class SplitByTime(beam.PTransform):
    """Examples → `{"train": …, "eval": …}` (and `"calibration"`, a part of train, when `calibration_days`): the
    last `eval_days` UTC days up to the latest example are eval; calibration is the last `calibration_days` before
    them. `burn_in_days`: the first N UTC days from the earliest example are in no split (they fed the history
    features computed before the split; `split.history_burn_in_days`)."""

    def __init__(self, eval_days: int, calibration_days: int | None = None, burn_in_days: int = 0):
        super().__init__()
        self.eval_days, self.calibration_days, self.burn_in_days = eval_days, calibration_days, burn_in_days

    def expand(self, examples: beam.PCollection) -> dict[str, beam.PCollection]:
        times = examples | "Time" >> beam.Map(lambda e: e[TIMESTAMP_MS])
        latest = times | "Latest" >> beam.CombineGlobally(lambda stamps: max(stamps, default=0))
        boundary = beam.pvalue.AsSingleton(latest | "EvalStart" >> beam.Map(eval_start_for_latest, self.eval_days))
        splits = dict(zip(SPLITS, examples | "Partition" >> beam.Partition(_PartitionByTime(), len(SPLITS), boundary)))
        if self.burn_in_days:
            earliest = times | "Earliest" >> beam.CombineGlobally(lambda stamps: min(stamps, default=0))
            train_start = beam.pvalue.AsSingleton(
                earliest | "TrainStart" >> beam.Map(train_start_after_burn_in, self.burn_in_days))
            splits["train"] = splits["train"] | "AfterBurnIn" >> beam.Filter(
                lambda e, start: e[TIMESTAMP_MS] >= start, train_start)
        if self.calibration_days:
            splits[CALIBRATION_SPLIT] = splits["train"] | "LatestTrainDays" >> beam.Filter(
                lambda e, start, days: e[TIMESTAMP_MS] >= start - days * DAY_SECONDS * 1000,
                boundary, self.calibration_days,
            )
        return splits


class CountSplits(beam.PTransform):
    """`{split: examples}` → counters: examples, positives per label key and missing values per feature of each
    split (`counters.CountExamples`), with a progress line per split (`train split: 9,000 examples`)."""

    def __init__(self, label_keys: tuple[str, ...]):
        super().__init__()
        self.label_keys = label_keys

    def expand(self, splits: dict[str, beam.PCollection]) -> beam.PCollection:
        counters = []
        for split, examples in splits.items():
            counters.append(count_split(examples, split, self.label_keys))
            _ = announce_counter(counters[-1], Count("split_examples", split).key, f"{split.title()}Examples",
                                 counted_line(f"{split} split: ", "example"))
        return tuple(counters) | "AllSplits" >> beam.Flatten()


class TransformedSplits(NamedTuple):
    """What `AnalyzeAndTransform` gives: `transform_fn` as tf.Transform returns it (for `WriteTransformFn`); `raw`
    each split's examples as dicts of the raw feature spec, `raw_schema` their schema; `transformed` each split's
    transformed dicts, `transformed_schema` theirs (one transform function: one schema for every split). The
    schemas are known when the job is built."""

    transform_fn: Any
    raw: dict[str, beam.PCollection]
    raw_schema: Any
    transformed: dict[str, beam.PCollection]
    transformed_schema: Any


class AnalyzeAndTransform(beam.PTransform):
    """`{split: examples}` → `TransformedSplits`: the preprocessing function of `features` and `tasks`
    (`transform.build_preprocessing_fn`) analysed on the train split only (vocabularies, statistics), then applied
    to every split. `temp_dir`: tf.Transform's scratch space."""

    def __init__(self, features: Any, tasks: Any, temp_dir: str):
        super().__init__()
        self.features, self.tasks, self.temp_dir = features, tasks, temp_dir

    def expand(self, splits: dict[str, beam.PCollection]) -> TransformedSplits:
        spec = raw_feature_spec(self.features, self.tasks)
        metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(spec))
        keys = tuple(spec)
        raw = {split: examples | f"{split.title()}Instances" >> beam.Map(lambda e: {k: e[k] for k in keys})
               for split, examples in splits.items()}
        with tft_beam.Context(temp_dir=self.temp_dir, force_tf_compat_v1=False):
            transform_fn = (raw["train"], metadata) | "Analyze" >> tft_beam.AnalyzeDataset(
                build_preprocessing_fn(self.features, self.tasks)
            )
            _ = announce_done(transform_fn[0], "Analysis", "train split analysed: vocabularies and statistics ready")
            transformed = {
                split: ((instances, metadata), transform_fn) | f"Transform{split.title()}" >> (
                    tft_beam.TransformDataset())
                for split, instances in raw.items()
            }
        return TransformedSplits(transform_fn, raw, metadata.schema,
                                 {split: examples for split, (examples, _) in transformed.items()},
                                 transformed["train"][1].schema)


class WriteExamples(beam.PTransform):
    """`{split: transformed dicts}` of schema `schema` → under `root`, per split: training-ready block files
    (`blocks.WriteExampleBlocks`) and gzip tf.Example TFRecords (`<split>/part-*`; the train split in a seeded hash
    order, never the join's label order), with a progress line as each split's files are written. Outputs the block
    files' `block_examples` counters."""

    def __init__(self, root: str, schema: Any, seed: int, output_shards: int, shuffle_buckets_per_shard: int,
                 block_examples: int):
        super().__init__()
        self.root, self.schema, self.seed, self.output_shards = root, schema, seed, output_shards
        self.shuffle_buckets_per_shard, self.block_examples = shuffle_buckets_per_shard, block_examples

    def expand(self, splits: dict[str, beam.PCollection]) -> beam.PCollection:
        coder = tft.coders.ExampleProtoCoder(self.schema)
        layout = block_layout(_transformed_spec(self.schema), self.block_examples)
        block_counters = []
        for split, transformed in splits.items():
            pairs = transformed | f"Encode{split.title()}" >> beam.Map(lambda values, encode=coder.encode: (
                canonical_example(encode(values)), values))
            block_counters.append(pairs | f"Blocks{split.title()}" >> WriteExampleBlocks(
                self.root, split, layout, self.seed, min_files=self.output_shards))
            encoded = pairs | f"Serialized{split.title()}" >> beam.Map(lambda pair: pair[0])
            if split == "train":  # the join emits examples grouped by label; never write them in that order
                encoded = encoded | "ShuffleTrain" >> ShuffleExamples(
                    self.seed, self.output_shards * self.shuffle_buckets_per_shard)
            written = encoded | f"Write{split.title()}" >> gzip_tfrecords(self.root, split, self.output_shards)
            _ = announce_done(written, f"Written{split.title()}", f"{split} examples written ({{files}})")
        return tuple(block_counters) | "AllBlockFiles" >> beam.Flatten()


class WriteRawEval(beam.PTransform):
    """The eval split's raw feature dicts (schema `schema`) → `raw_eval/part-*` under `root`, gzip tf.Example
    TFRecords as logged, for scoring any model (today's or the champion) through its raw signature."""

    def __init__(self, root: str, schema: Any, output_shards: int):
        super().__init__()
        self.root, self.schema, self.output_shards = root, schema, output_shards

    def expand(self, raw_eval: beam.PCollection) -> beam.PCollection:
        return (
            raw_eval
            | "Encode" >> beam.Map(lambda values, encode=tft.coders.ExampleProtoCoder(self.schema).encode:
                                   canonical_example(encode(values)))
            | "Write" >> gzip_tfrecords(self.root, RAW_EVAL_DIR, self.output_shards)
        )


def canonical_example(serialized: bytes) -> bytes:
    """A serialized tf.Example with its features in name order: the same bytes in every process (a proto map's
    serialization order is not, so the train shuffle keyed by these bytes would change from run to run)."""
    return tf.train.Example.FromString(serialized).SerializeToString(deterministic=True)


def gzip_tfrecords(root: str, directory: str, shards: int) -> beam.io.WriteToTFRecord:
    """The writer of a directory of examples: `root/<directory>/part-*-of-<shards>.tfrecord.gz`."""
    return beam.io.WriteToTFRecord(f"{root}/{directory}/part", file_name_suffix=".tfrecord.gz", num_shards=shards,
                                   compression_type=beam.io.filesystem.CompressionTypes.GZIP)


def _transformed_spec(schema: Any) -> dict[str, TransformedFeatureSpec]:
    """The transformed schema as the manifest's feature spec (name → dtype, shape), known when the job is built."""
    return {name: TransformedFeatureSpec(dtype=spec.dtype.name, shape=[int(d) for d in spec.shape])
            for name, spec in schema_utils.schema_as_feature_spec(schema).feature_spec.items()}


def counted_line(prefix: str, noun: str) -> Callable[[int], str]:
    """The progress line of a count: `prefix` and the count of `noun`s (`train split: 9,000 examples`)."""
    return lambda n: prefix + plural(n, noun)


def _json_line(dead: dict) -> str:
    import json

    return json.dumps(dead, sort_keys=True)
