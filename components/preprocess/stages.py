"""The stages of the preprocess job as composite Beam transforms, named for what they do to the data. Every
PCollection between them holds Arrow record batches (`components.preprocess.example_batches`), never one element
per record: reading parses a chunk of records at once (`batch_parse`), the join and the history features group
batches by a partition of their key (`partitions`), tf.Transform reads and writes record batches through TFXIO,
and the block writer slices matrices out of them.

    ReadImpressions / ReadEngagements  log chunks → record batches + counters                     dead letters ──┐
    DropImplausibleTimes               batches → rows near the median impression time             dead letters ──┤
    SplitByTime                        example batches → {train, eval[, calibration]}                           ▼
    CountSplits                        {split: batches} → counters                             ErrorHandler → WriteDeadLetters
    AnalyzeAndTransform                {split: batches} → transform_fn + transformed batches     → dead_letter/*.jsonl
    WriteExamples                      transformed batches → blocks                                + counters
    WriteRawEval                       the eval split as logged → gzip TFRecords, written from batches

`components.preprocess.run.PreprocessLogs` chains them in the order of the data flow.

Dead letters: a stage that turns bad records into dead letters takes Beam's `ErrorHandler` the way Beam's own
transforms do (`stage.with_error_handler(handler)`) and hands it its dead-letter PCollection; the handler flattens
them into its consumer, `WriteDeadLetters`, and the pipeline refuses to run while a handler is left open, so a
stage's dead letters cannot be wired to nowhere. A stage given no handler refuses to build.

Inside the stages a bad record still leaves its `ParDo` through a tagged output (`ParseChunks`,
`time_range.keep_plausible_times`), not through `ParDo.with_exception_handling`: that wrapper's dead-letter element
is `(input, (exception type, repr(exception), traceback lines))`, one per failed input (here a whole chunk), so the
reason (`InvalidRecord.reason`, `bad_csv_row:<what>`) would survive only as text to parse back out of a repr; the
records and bytes a chunk parsed and dead-lettered (`ParseOutcomes`, the manifest's input accounting) are counted
inside `ParseChunks`, which the wrapper's failure path bypasses. A time outside the plausible range is no
exception at all, only a comparison.
"""

from __future__ import annotations

import struct
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NamedTuple

import apache_beam as beam
import google_crc32c
import numpy as np
import pyarrow as pa
import tensorflow_transform.beam as tft_beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.error_handling import ErrorHandler
from apache_beam.utils.windowed_value import WindowedValue
from tensorflow_transform.tf_metadata import schema_utils
from tfx_bsl.coders.example_coder import RecordBatchToExamplesEncoder

from components.contracts.manifest import CALIBRATION_SPLIT, TransformedFeatureSpec
from components.logs.readers import FILES, RECORDS, LogWindow, ReadLogChunks
from components.logs.split import eval_start_for_latest, train_start_after_burn_in
from components.preprocess import beam_dofn_specs, tft_dependencies
from components.preprocess.batch_coder import BATCH
from components.preprocess.batch_parse import ChunkParser
from components.preprocess.block_format import block_layout
from components.preprocess.blocks import WriteExampleBlocks
from components.preprocess.counters import (
    Count,
    count_dead_letter,
    count_input_files,
    parse_outcome_counts,
    split_counts,
)
from components.preprocess.parse import DEAD_LETTER, TIMESTAMP_MS, VALID, FeatureField
from components.preprocess.step_messages import (
    ParseTally,
    announce_counter,
    announce_dead_letters,
    announce_done,
    input_files_line,
    plural,
    say,
)
from components.preprocess.time_range import keep_plausible_times
from components.preprocess.transform import build_preprocessing_fn, tensor_adapter_config, tft_input

# in every process that unpickles this module's DoFns (this one; each Dataflow worker) before tf.Transform's
# `Transform` DoFn loads the transform graph: which inputs the graph needs, found in one pass, not per output
tft_dependencies.install()
# and before the pipeline is built (run.py imports this module): each DoFn's state and timer specs found once, not
# at each of Beam's ~4 lookups (each inspects every method of the DoFn)
beam_dofn_specs.install()

SPLITS = ("train", "eval")
DEAD_LETTER_DIR = "dead_letter"
RAW_EVAL_DIR = "raw_eval"
DAY_SECONDS = 86_400
COUNTS = "counts"


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
    """One stream read: `batches` its valid records as record batches (`ChunkParser.schema`), and `counters` its
    `(Count key, n)` pairs: records read, and for files each file's tally and the parse outcomes."""

    batches: beam.PCollection
    counters: beam.PCollection


class ParseChunks(beam.DoFn):
    """Chunks of raw records (`readers.ReadLogChunks`) → record batches of the valid ones; tagged `dead_letter`:
    {stream, reason, raw} for each other one; tagged `counts`: the chunk's records read and (`files`: for a source of
    files) its `input` parse outcomes, as `(Count key, n)` pairs."""

    def __init__(self, parser: ChunkParser, files: bool = True):
        super().__init__()
        self.parser, self.files = parser, files
        self.tally: ParseTally | None = None

    def setup(self):
        self.tally = ParseTally(self.parser.stream)  # this worker's progress lines and the job's metrics counters

    def process(self, chunk):
        if isinstance(chunk, pa.Table):
            parsed = self.parser.parse_table(chunk)
        elif chunk and isinstance(chunk[0], dict):
            parsed = self.parser.parse_rows(chunk)
        else:
            parsed = self.parser.parse_text(chunk)
        stream = self.parser.stream
        if self.tally is None:  # setup() runs first on every runner; this keeps the type honest
            self.tally = ParseTally(stream)
        self.tally.count_many(parsed.outcomes.parsed, parsed.outcomes.dead_letters)
        read = parsed.outcomes.parsed + parsed.outcomes.dead_letters
        yield beam.pvalue.TaggedOutput(COUNTS, (Count("records_read", stream).key, read))
        if self.files:
            for pair in parse_outcome_counts(parsed.outcomes, stream):
                yield beam.pvalue.TaggedOutput(COUNTS, pair)
        for letter in parsed.dead_letters:
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, letter)
        if parsed.batch.num_rows:
            yield parsed.batch

    def finish_bundle(self):
        if self.tally is not None:
            self.tally.flush_metrics()


class _ReadStream(_RoutesDeadLetters):
    """PBegin → `ParsedStream` of `stream`: read every record in chunks (`ReadLogChunks`), parse each chunk with
    `parser` (`batch_parse.ChunkParser`); each record that does not parse is a dead letter `{stream, reason, raw}`
    for the error handler."""

    stream = ""

    def __init__(self, source: str, file_format: str, parser: ChunkParser, window: LogWindow = LogWindow(),
                 extra_days_after: int = 0, *, csv_delimiter: str = ",", max_record_bytes: int | None = None,
                 max_record_lines: int | None = None, csv_has_header: bool = True):
        super().__init__()
        self.source, self.file_format, self.parser, self.window = source, file_format, parser, window
        self.extra_days_after = extra_days_after
        self.csv_delimiter, self.max_record_bytes, self.max_record_lines = (csv_delimiter, max_record_bytes,
                                                                           max_record_lines)
        self.csv_has_header = csv_has_header

    def expand(self, pbegin: beam.pvalue.PBegin) -> ParsedStream:
        stream = self.stream
        say(input_files_line(stream, self.source, self.file_format, self.window, self.extra_days_after), stream=stream)
        read = pbegin | "ReadLogChunks" >> ReadLogChunks(
            self.source, self.file_format, self.window, self.extra_days_after, csv_delimiter=self.csv_delimiter,
            max_record_bytes=self.max_record_bytes, max_record_lines=self.max_record_lines,
            csv_has_header=self.csv_has_header)
        files = self.file_format != "bigquery"  # a table has no files or bytes to account for
        parsed = read[RECORDS] | f"Parse{stream.title()}" >> beam.ParDo(ParseChunks(self.parser, files)).with_output_types(
            BATCH).with_outputs(DEAD_LETTER, COUNTS, main=VALID)
        self._route(parsed[DEAD_LETTER])
        records_read = (parsed[COUNTS]
                        | "RecordsRead" >> beam.Filter(lambda pair, key=Count("records_read", stream).key:
                                                       pair[0] == key)
                        | "SumRecordsRead" >> beam.CombinePerKey(sum))
        _ = announce_counter(records_read, Count("records_read", stream).key, f"{stream.title()}Read",
                             counted_line(f"{stream}: read ", "record"))
        counters = [parsed[COUNTS]]
        if files:
            counters.append(count_input_files(read[FILES], stream))
        return ParsedStream(parsed[VALID], tuple(counters) | "AllCounters" >> beam.Flatten())


class ReadImpressions(_ReadStream):
    """PBegin → `ParsedStream` of impressions (those of `window`'s days); dead letters to the error handler."""

    stream = "impressions"


class ReadEngagements(_ReadStream):
    """PBegin → `ParsedStream` of engagement events, of `window`'s days and `extra_days_after` more (an event may
    follow its impression by the longest attribution window); dead letters to the error handler."""

    stream = "engagements"


class DropImplausibleTimes(_RoutesDeadLetters):
    """Record batches of `stream` → their rows within `skew_days` of the `median` impression time (a one-element
    PCollection, `time_range.MedianTime`) and at most `late_ms` after that; the others are dead letters
    `timestamp_out_of_range` for the error handler. `features`: the batches' logged features."""

    def __init__(self, stream: str, median: beam.PCollection, skew_days: float, late_ms: int = 0,
                 features: tuple[FeatureField, ...] = ()):
        super().__init__()
        self.stream, self.median, self.skew_days, self.late_ms, self.features = (stream, median, skew_days, late_ms,
                                                                                 features)

    def expand(self, batches: beam.PCollection) -> beam.PCollection:
        kept, dead_letters = keep_plausible_times(batches, self.stream, self.median, self.skew_days, self.late_ms,
                                                  self.features)
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


SPLIT_CODE = "__split__"  # a row's split, carried through tf.Transform (a passthrough column)
TRAIN, EVAL, CALIBRATION = 0, 1, 2  # split codes; a calibration row is a train row too
CODES_OF = {"train": (TRAIN, CALIBRATION), "eval": (EVAL,), CALIBRATION_SPLIT: (CALIBRATION,)}


class _SplitCodes(beam.DoFn):
    """An example batch → its rows in a split, with a `__split__` column of their split codes (burn-in rows left
    out)."""

    def __init__(self, calibration_days: int | None):
        super().__init__()
        self.calibration_days = calibration_days

    def process(self, batch: pa.RecordBatch, eval_start: int, train_start: int | None):
        times = np.asarray(batch.column(TIMESTAMP_MS), np.int64)
        codes = np.where(times >= eval_start, EVAL, TRAIN)
        if self.calibration_days:
            codes[(codes == TRAIN) & (times >= eval_start - self.calibration_days * DAY_SECONDS * 1000)] = CALIBRATION
        kept = np.ones(len(times), bool) if train_start is None else (codes == EVAL) | (times >= train_start)
        if kept.any():  # burn-in rows (before train_start) are in no split
            rows = pa.array(np.flatnonzero(kept))
            yield batch.take(rows).append_column(SPLIT_CODE, pa.array(codes[np.asarray(rows)], pa.int64()))


def rows_of_split(batch: pa.RecordBatch, split: str) -> list[pa.RecordBatch]:
    """The rows of a batch with split codes (`_SplitCodes`) that are in `split`, without the code column; none
    for a batch without such rows."""
    inside = np.isin(_codes(batch), CODES_OF[split])
    if not inside.any():
        return []
    kept = batch if inside.all() else batch.filter(pa.array(inside))
    return [kept.drop_columns([SPLIT_CODE])]


def _codes(batch: pa.RecordBatch) -> np.ndarray:
    """The split code of each row: an int64 column, or as tf.Transform reads it, a list of one."""
    column = batch.column(SPLIT_CODE)
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        column = column.flatten()
    return np.asarray(column.to_numpy(zero_copy_only=False), np.int64)


def _extreme_time(batches: beam.PCollection, label: str, extreme: Callable,
                  time_range: beam.PCollection | None = None) -> beam.PCollection:
    """At most one element: the latest (`max`) or earliest (`min`) impression time of all the batches' rows (0 when
    none of them has a time, no element without rows); taken from `time_range`'s (earliest, latest) pairs instead when given (`attribution.ExampleTimeRange`)."""
    if time_range is None:
        stamps = batches | f"{label}InBatch" >> beam.Map(
            lambda batch: extreme(batch.column(TIMESTAMP_MS).to_pylist(), default=None))
    else:
        end = 1 if extreme is max else 0
        stamps = time_range | f"{label}InRange" >> beam.Map(lambda pair, end=end: pair[end])
    # no default element: the side inputs made of it carry the default (`SplitByTime`), which costs no stage
    return stamps | label >> beam.CombineGlobally(lambda stamps: extreme((s for s in stamps if s is not None),
                                                                         default=0)).without_defaults()


class Splits(NamedTuple):
    """What `SplitByTime` gives: `coded` every example in a split, with its split code (`__split__`), and `by_split`
    the examples of each split (`train`, `eval`, and `calibration` when configured) without it."""

    coded: beam.PCollection
    by_split: dict[str, beam.PCollection]


class SplitByTime(beam.PTransform):
    """Example batches → `Splits`: the last `eval_days` UTC days up to the latest example are eval, the days before
    them train, and calibration (a part of train, when `calibration_days`) the last `calibration_days` of train.
    `burn_in_days`: the first N UTC days from the earliest example are in no split (they fed the history features
    computed before the split; `split.history_burn_in_days`). `time_range`: the examples' (earliest, latest) times
    computed apart from them (`attribution.ExampleTimeRange`), so the examples are split as they come instead of
    being held until their own latest time is known."""

    def __init__(self, eval_days: int, calibration_days: int | None = None, burn_in_days: int = 0,
                 time_range: beam.PCollection | None = None):
        super().__init__()
        self.eval_days, self.calibration_days, self.burn_in_days = eval_days, calibration_days, burn_in_days
        self.time_range = time_range

    def expand(self, batches: beam.PCollection) -> Splits:
        # without rows, the boundaries of time 0 (what a global combine's default would give, without its stage)
        latest = _extreme_time(batches, "Latest", max, self.time_range)
        eval_start = beam.pvalue.AsSingleton(latest | "EvalStart" >> beam.Map(eval_start_for_latest, self.eval_days),
                                             default_value=eval_start_for_latest(0, self.eval_days))
        train_start: Any = None  # no burn-in: every row before eval is train
        if self.burn_in_days:
            train_start = beam.pvalue.AsSingleton(
                _extreme_time(batches, "Earliest", min, self.time_range)
                | "TrainStart" >> beam.Map(train_start_after_burn_in, self.burn_in_days),
                default_value=train_start_after_burn_in(0, self.burn_in_days))
        coded = batches | "SplitCodes" >> beam.ParDo(_SplitCodes(self.calibration_days), eval_start,
                                                     train_start).with_output_types(BATCH)
        names = list(SPLITS) + ([CALIBRATION_SPLIT] if self.calibration_days else [])
        return Splits(coded, {split: coded | f"{split.title()}Rows" >> beam.FlatMap(rows_of_split, split)
                              .with_output_types(BATCH) for split in names})


class CountSplits(beam.PTransform):
    """`{split: batches}` → counters: examples, positives per label key and missing values per logged feature of
    each split (`counters.split_counts`), with a progress line per split (`train split: 9,000 examples`)."""

    def __init__(self, label_keys: tuple[str, ...], features: tuple[FeatureField, ...] = ()):
        super().__init__()
        self.label_keys, self.features = label_keys, features

    def expand(self, splits: dict[str, beam.PCollection]) -> beam.PCollection:
        counters = []
        label_keys, features = self.label_keys, self.features
        for split, batches in splits.items():
            key = Count("split_examples", split).key
            counted = (batches | f"Count{split.title()}" >> beam.FlatMap(split_counts, split, label_keys, features),
                       batches.pipeline | f"No{split.title()}Examples" >> beam.Create([(key, 0)]))
            counters.append(counted | f"All{split.title()}Counts" >> beam.Flatten())
            examples = (counters[-1] | f"{split.title()}Rows" >> beam.Filter(lambda pair, key=key: pair[0] == key)
                        | f"Sum{split.title()}Rows" >> beam.CombinePerKey(sum))
            _ = announce_counter(examples, key, f"{split.title()}Examples", counted_line(f"{split} split: ", "example"))
        return tuple(counters) | "AllSplits" >> beam.Flatten()


class TransformedSplits(NamedTuple):
    """What `AnalyzeAndTransform` gives: `transform_fn` as tf.Transform returns it (for `WriteTransformFn`); `raw`
    each split's batches as tf.Transform read them (`transform.tft_input`); `transformed` each split's transformed
    record batches, `transformed_schema` their schema (one transform function: one schema for every split, known
    when the job is built)."""

    transform_fn: Any
    raw: dict[str, beam.PCollection]
    transformed: dict[str, beam.PCollection]
    transformed_schema: Any


class AnalyzeAndTransform(beam.PTransform):
    """`Splits` → `TransformedSplits`: the preprocessing function of `features` and `tasks`
    (`transform.build_preprocessing_fn`) analysed on the train split only (vocabularies, statistics), then applied
    once to every example in a split (its split code passed through tf.Transform, so the transform graph is loaded
    once, and a calibration row, also a train row, is transformed once), reading and writing record batches (TFXIO:
    `transform.tensor_adapter_config`, `output_record_batches`). `temp_dir`: tf.Transform's scratch space;
    `force_tf_compat_v1`: the transform graph built in TF1 graph mode (`PreprocessConfig.force_tf_compat_v1`)."""

    def __init__(self, features: Any, tasks: Any, temp_dir: str, force_tf_compat_v1: bool):
        super().__init__()
        self.features, self.tasks, self.temp_dir = features, tasks, temp_dir
        self.force_tf_compat_v1 = force_tf_compat_v1

    def expand(self, splits: Splits) -> TransformedSplits:
        features, tasks = self.features, self.tasks
        adapter = tensor_adapter_config(features, tasks, passthrough=SPLIT_CODE)
        raw = splits.coded | "Instances" >> beam.Map(tft_input, features, tasks, passthrough=SPLIT_CODE
                                                     ).with_output_types(BATCH)
        train = raw | "TrainInstances" >> beam.FlatMap(_with_codes, CODES_OF["train"]).with_output_types(BATCH)
        with tft_beam.Context(temp_dir=self.temp_dir, force_tf_compat_v1=self.force_tf_compat_v1):
            transform_fn = (train, adapter) | "Analyze" >> tft_beam.AnalyzeDataset(
                build_preprocessing_fn(features, tasks)
            )
            _ = announce_done(transform_fn[0], "Analysis", "train split analysed: vocabularies and statistics ready")
            with tft_beam.Context(passthrough_keys={SPLIT_CODE}):
                transformed, metadata = ((raw, adapter), transform_fn) | "Transform" >> (
                    tft_beam.TransformDataset(output_record_batches=True))
        batches = transformed | "TransformedBatches" >> beam.Map(lambda pair: pair[0]).with_output_types(BATCH)
        names = splits.by_split.keys()
        return TransformedSplits(
            transform_fn,
            {"eval": raw | "RawEval" >> beam.FlatMap(rows_of_split, "eval").with_output_types(BATCH)},
            {split: batches | f"Transformed{split.title()}" >> beam.FlatMap(rows_of_split, split).with_output_types(
                BATCH) for split in names},
            metadata.schema)


def _with_codes(batch: pa.RecordBatch, codes: tuple[int, ...]) -> list[pa.RecordBatch]:
    """A tf.Transform input batch's rows whose split code is one of `codes`, the code column kept (what the
    analysis reads: its adapter knows the column, and reads only the raw features)."""
    inside = np.isin(_codes(batch), codes)
    if not inside.any():
        return []
    return [batch if inside.all() else batch.filter(pa.array(inside))]


class WriteExamples(beam.PTransform):
    """`{split: transformed record batches}` of schema `schema` → under `root`, per split, training-ready block files
    (`blocks.WriteExampleBlocks`), with a progress line as each split's files are written. Outputs the block
    files' `block_examples` counters. `untransformed`: each split's batches before tf.Transform (`Splits.by_split`),
    where its examples are counted (`WriteExampleBlocks`' `counted`).

    (The per-example tf.Example TFRecords of each split that earlier versions wrote are no longer written: the
    trainer reads blocks, and a manifest without blocks, written before them, still has its TFRecords.)"""

    def __init__(self, root: str, schema: Any, seed: int, output_shards: int, block_examples: int,
                 untransformed: dict[str, beam.PCollection] | None = None):
        super().__init__()
        self.root, self.schema, self.seed, self.output_shards = root, schema, seed, output_shards
        self.block_examples = block_examples
        self.untransformed = untransformed or {}

    def expand(self, splits: dict[str, beam.PCollection]) -> beam.PCollection:
        layout = block_layout(_transformed_spec(self.schema), self.block_examples)
        block_counters = []
        for split, batches in splits.items():
            counters = batches | f"Blocks{split.title()}" >> WriteExampleBlocks(
                self.root, split, layout, self.seed, min_files=self.output_shards,
                counted=self.untransformed.get(split))
            block_counters.append(counters)
            _ = announce_done(counters, f"Written{split.title()}", f"{split} examples written ({{files}})")
        return tuple(block_counters) | "AllBlockFiles" >> beam.Flatten()


RAW_EVAL_GZIP_LEVEL = 1  # zlib level: 3.7x faster than its default 6 on 1,000-feature rows, the file 1.6x its size


class WriteRawEval(beam.PTransform):
    """The eval split's batches as tf.Transform read them (`transform.tft_input`) → `raw_eval/part-*-of-<shards>`
    under `root`, gzip tf.Example TFRecords as logged (columns in name order), one file a shard,
    for scoring any model (today's or the champion) through its raw signature.

        eval batch ──► tf.Examples (tfx_bsl, one call a batch) ──► `shards` row slices ──► each slice's TFRecords
            as one gzip member (zlib level `RAW_EVAL_GZIP_LEVEL`) ──► (shard, member) ──► grouped by shard
            ──► part file = its members one after another (a gzip file may hold many members, RFC 1952)

    Each batch is encoded and compressed where it is made (on a thread beside the stage's, `CompressInBackground`),
    so only compressed bytes cross to the writer, never one element per example; readers (`tf.data.TFRecordDataset(compression_type="GZIP")`, Python's `gzip`) read the
    members of a file as one stream. A shard without rows is an empty gzip member (no records)."""

    def __init__(self, root: str, output_shards: int, level: int = RAW_EVAL_GZIP_LEVEL):
        super().__init__()
        self.root, self.output_shards, self.level = root, output_shards, level

    def expand(self, raw_eval: beam.PCollection) -> beam.PCollection:
        shards = self.output_shards
        members = raw_eval | "Compress" >> beam.ParDo(CompressInBackground(shards, self.level))
        every_shard = raw_eval.pipeline | "EveryShard" >> beam.Create([(shard, b"") for shard in range(shards)])
        return ((members, every_shard)
                | "AllMembers" >> beam.Flatten()
                | "GroupIntoShards" >> beam.GroupByKey()
                | "Write" >> beam.Map(_write_raw_eval_shard, self.root, shards))


RAW_EVAL_IN_FLIGHT = 2  # eval batches being encoded and compressed beside the stage's own thread, at most


class CompressInBackground(beam.DoFn):
    """Each raw eval batch's `_compressed_shards`, computed on a thread of the DoFn's own beside the thread that
    runs the rest of the fused stage (the join, tf.Transform, the block matrices): tfx_bsl's encoder and zlib
    release the GIL, so on a worker with a free core the raw eval's encoding overlaps the stage's other work
    instead of adding to it. At most `in_flight` batches wait or run there (their memory is bounded); results
    come out in the batches' order, each in its batch's window, the rest at the bundle's end; an error there is
    raised here."""

    def __init__(self, shards: int, level: int, in_flight: int = RAW_EVAL_IN_FLIGHT):
        if in_flight < 1:
            raise ValueError(f"in_flight must be at least 1, got {in_flight}")
        self.shards, self.level, self.in_flight = shards, level, in_flight

    def setup(self):
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="raw-eval")

    def start_bundle(self):
        self._pending: deque[tuple[Future, Any, Any]] = deque()

    def process(self, batch: pa.RecordBatch, timestamp=beam.DoFn.TimestampParam, window=beam.DoFn.WindowParam):
        self._pending.append((self._pool.submit(_members, batch, self.shards, self.level), timestamp, window))
        while self._pending and (len(self._pending) > self.in_flight or self._pending[0][0].done()):
            yield from self._done()

    def finish_bundle(self):
        while self._pending:
            yield from self._done()

    def _done(self) -> Iterator[WindowedValue]:
        future, timestamp, window = self._pending.popleft()
        for member in future.result():
            yield WindowedValue(member, timestamp, (window,))

    def teardown(self):
        self._pool.shutdown(wait=True)


def _members(batch: pa.RecordBatch, shards: int, level: int) -> list[tuple[int, bytes]]:
    return list(_compressed_shards(batch, shards, level))


def _encoded_examples(batch: pa.RecordBatch) -> list[bytes]:
    ordered = batch.select(sorted(batch.schema.names))
    return RecordBatchToExamplesEncoder().encode(ordered)


def _compressed_shards(batch: pa.RecordBatch, shards: int, level: int) -> Iterator[tuple[int, bytes]]:
    """A raw eval batch → (shard, gzip member of its slice's TFRecords) for each of `shards` contiguous slices of
    its rows that holds any."""
    examples = _encoded_examples(batch)
    bounds = [len(examples) * shard // shards for shard in range(shards + 1)]
    for shard in range(shards):
        if bounds[shard + 1] > bounds[shard]:
            yield shard, gzip_member(tfrecords(examples[bounds[shard]:bounds[shard + 1]]), level)


def tfrecords(records: list[bytes]) -> bytes:
    """Records framed as TFRecords: each one its u64 length, the length's masked CRC-32C, the record and its
    masked CRC-32C (little-endian), as TensorFlow's and Beam's TFRecord writers frame them."""
    parts = []
    for record in records:
        length = struct.pack("<Q", len(record))
        parts += [length, struct.pack("<I", _masked_crc32c(length)), record, struct.pack("<I", _masked_crc32c(record))]
    return b"".join(parts)


def _masked_crc32c(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def gzip_member(data: bytes, level: int) -> bytes:
    """`data` as one gzip member (header without a name or time, so equal data gives equal bytes)."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _write_raw_eval_shard(keyed: tuple[int, Iterable[bytes]], root: str, shards: int) -> str:
    """One shard's gzip members → `root/raw_eval/part-<shard>-of-<shards>.tfrecord.gz`; returns its path."""
    shard, members = keyed
    path = f"{root.rstrip('/')}/{RAW_EVAL_DIR}/part-{shard:05d}-of-{shards:05d}.tfrecord.gz"
    written = False
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        for member in members:
            if member:
                handle.write(member)
                written = True
        if not written:
            handle.write(gzip_member(b"", RAW_EVAL_GZIP_LEVEL))
    return path


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
