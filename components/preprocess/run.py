"""`preprocess()`: logs → labelled examples → time split → tf.Transform → blocks + gzip TFRecords + manifest.

    read ──► parse ──► plausible times + join / dedup ──► split by time ──► analyze (train) ──► transform ──► blocks
              │dead letters  │dead letters, counters                                           │transform_fn    TFRecords
              ▼              ▼                                                                 ▼
        dead_letter/*.jsonl (bad_encoding, …)  stats/counters.jsonl ───────────────────► manifest.json, manifest.md

The graph is `PreprocessLogs`, one composite transform whose `expand` chains the stages above, each a named
composite transform of `components/preprocess/stages.py`; every stage's dead letters go to one Beam `ErrorHandler`
whose consumer writes them (`WriteDeadLetters`).

Each split is written twice: as training-ready blocks (`components/preprocess/blocks.py`, what the trainer reads)
and as per-example gzip tf.Example TFRecords (what TFX-style tools, the preprocess tests and older trainers read);
the raw eval examples (as logged) are written for promotion.

Before the job: a configured column absent from a CSV header or Parquet schema fails the step, naming it.
During it: a truncated or corrupt compressed log file fails the step, naming the file and the offset.
After the job: input whose bytes or records do not add up (manifest `input`: framing + blank lines + parsed +
dead letters = what was read, per stream; `InputNotAccounted`), too many dead letters in either stream, a split below `split.min_*_examples`, or a task with
fewer than `preprocess.min_positives_per_task` / `min_negatives_per_task` labels of a class in a split fail the
step; a feature absent from more than `preprocess.max_missing_share` of examples, or whose eval values are mostly
never seen in train (`preprocess.max_unseen_share`, components/preprocess/unseen.py), is printed as a warning.
While it runs, the step prints what it is doing: input files, records read, parsed and dead-lettered, examples per
split, stages done (`components/preprocess/step_messages.py`).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

import apache_beam as beam
import pyarrow as pa
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.error_handling import ErrorHandler

from components.contracts.manifest import (
    CALIBRATION_SPLIT,
    TRANSFORM_FN_DIR,
    DayCount,
    ImpressionWindow,
    InputAccount,
    Manifest,
    SplitBlocks,
    SplitInfo,
    TransformedFeatureSpec,
)
from components.logs.readers import LogWindow, csv_column_names, expand_pattern, match_pattern
from components.logs.records import format_timestamp
from components.logs.synthetic import ENGAGEMENTS_DIR, IMPRESSIONS_DIR, bayes_logloss_over_days, read_ground_truth
from components.preprocess.attribution import (
    DeduplicateOutcomes,
    EventTask,
    ExampleTimeRange,
    JoinEngagements,
    PlausibleTimes,
    label_key,
)
from components.preprocess.batch_coder import BATCH
from components.preprocess.batch_parse import ChunkParser
from components.preprocess.beam_options import (
    beam_pipeline_options,
    runs_on_dataflow,
    step_pipeline_options,
    temp_location,
)
from components.preprocess.block_format import block_layout
from components.preprocess.counters import WriteCounters, read_counters
from components.preprocess.dataflow_job import watch_job
from components.preprocess.example_batches import byte_slices
from components.preprocess.history import AddHistoryFeatures
from components.preprocess.input_columns import (
    MissingInputColumns,
    check_log_inputs,
    logged_features,
)
from components.preprocess.manifest_markdown import manifest_markdown
from components.preprocess.parse import (
    EngagementParser,
    FeatureField,
    ImpressionParser,
    OutcomeLabel,
    RecordDecoder,
    TimestampParser,
)
from components.preprocess.partitions import partition_count
from components.preprocess.stages import (
    DAY_SECONDS,
    DEAD_LETTER_DIR,
    RAW_EVAL_DIR,
    SPLITS,
    AnalyzeAndTransform,
    CountSplits,
    DropImplausibleTimes,
    ReadEngagements,
    ReadImpressions,
    SplitByTime,
    WriteDeadLetters,
    WriteExamples,
    WriteRawEval,
)
from components.preprocess.step_messages import say, wait_for_job
from components.preprocess.time_range import MedianTime, PlausibleRange
from components.preprocess.transform import feature_infos, write_raw_metadata
from components.preprocess.unseen import CountUnseenEvalValues, checked_features
from configs.features import CategoricalListFeature, NumericFeature
from configs.logs import EVENT_TYPE, IMPRESSION_ID, TIMESTAMP, SplitConfig
from configs.slices import PreprocessStepConfig
from foundation.frozen_heap import frozen_heap
from foundation.log_lines import fields

MARKDOWN_FILE = "manifest.md"
TRANSFORM_BATCH_BYTES = 32 * 2**20  # Arrow bytes of example rows tf.Transform takes in one batch (`byte_slices`); 16 MiB
# at 1,000 features was 1,764 records/s against 1,897 at 32 MiB, same peak RSS (docs/input.md, sixth pass)
log = logging.getLogger(__name__)


class TooManyInvalidRecords(RuntimeError):
    """The share of dead letters of one stream exceeds `preprocess.max_invalid_fraction`."""


class InputNotAccounted(RuntimeError):
    """The bytes or records read do not add up to what parsed, was dead-lettered, blank or framing: input was
    lost between reading and parsing (a bug, never a data problem)."""


class NotEnoughExamples(RuntimeError):
    """The logs gave no examples, or a split has fewer than `split.min_train_examples` / `min_eval_examples`."""


class OneClassLabels(NotEnoughExamples):
    """A task's labels in a split are (nearly) all one class: fewer positives or negatives than configured."""


def preprocess(config: PreprocessStepConfig, logs_dir: str | None, output_dir: str, output_uri: str | None = None,
               window_end: str | None = None, beam_args: list[str] | None = None,
               gcp_resources_path: str | None = None) -> Manifest:
    """Run the Beam pipeline and write examples, `transform_fn`, `manifest.json` and `manifest.md`.

    `logs_dir`: the generator's output (synthetic source); otherwise the config's globs/tables are read.
    `output_uri`: where Beam writes when workers cannot see `output_dir` (Dataflow writes to gs://).
    `window_end` (RFC 3339): read only impressions of the `logs.lookback_days` days before it.
    `beam_args`: a complete Beam argv (as compiled into the DAG) replacing the options built from config.
    `gcp_resources_path`: where the step's `gcp_resources` output goes (the Dataflow job, so the Vertex console links
    it; SIGTERM while the job runs cancels it: `components.preprocess.dataflow_job`).
    """
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    # The runner is the one in the options actually used (a compiled argv may differ from the config's runner).
    options = step_pipeline_options(beam_args) if beam_args else beam_pipeline_options(config)
    on_dataflow = runs_on_dataflow(options)
    root = (output_uri if on_dataflow and output_uri else output_dir).rstrip("/")
    window = LogWindow.ending_at(window_end, config.logs.lookback_days)
    check_configured_columns(config, logs_dir)
    local_temp = tempfile.mkdtemp(prefix="tft-", dir=output_dir)
    try:
        with frozen_heap():  # the imports' objects out of the collector's full passes while the job runs
            pipeline = beam.Pipeline(options=options)
            _ = pipeline | "PreprocessLogs" >> PreprocessLogs(config, logs_dir, root, window,
                                                              temp_location(options, local_temp))
            say(f"running the Beam job ({'Dataflow' if on_dataflow else 'DirectRunner'})")
            watch_job(pipeline.run(), options, gcp_resources_path, wait_for_job)
        write_raw_metadata(root, config.features, config.tasks)
    finally:
        shutil.rmtree(local_temp, ignore_errors=True)
    manifest = _manifest(config, logs_dir, root, window)
    say(f"examples: train {manifest.splits['train'].examples:,}, eval {manifest.splits['eval'].examples:,}; "
        f"dead letters {manifest.counts.get('dead_letters', 0):,} ({manifest.invalid_fraction:.2%} of records read)",
        train_examples=manifest.splits['train'].examples, eval_examples=manifest.splits['eval'].examples,
        dead_letters=manifest.counts.get('dead_letters', 0), invalid_fraction=manifest.invalid_fraction)
    blank = sum(account.blank_lines for account in manifest.input.values())
    if blank:
        say(f"blank lines skipped: {blank:,} (not records, not counted as invalid)", blank_lines=blank)
    manifest.write(output_dir)
    (Path(output_dir) / MARKDOWN_FILE).write_text(manifest_markdown(manifest))
    check_input_accounted(manifest)
    check_invalid_records(manifest, config.preprocess.max_invalid_fraction, f"{root}/{manifest.dead_letter_pattern}")
    check_split_sizes(manifest, config.split.min_train_examples, config.split.min_eval_examples)
    check_label_classes(manifest, config)
    for name, share in manifest.mostly_missing_features.items():
        log.warning(f"feature '{name}' is absent from {share:.1%} of examples (above preprocess.max_missing_share "
                    f"{config.preprocess.max_missing_share:.0%}): check its column in the logs",
                    extra=fields(feature=name, missing_share=share))
    for name, share in manifest.mostly_unseen_features.items():
        log.warning(f"feature '{name}': {share:.1%} of eval examples carry a value never seen in the train split "
                    f"(above preprocess.max_unseen_share {config.preprocess.max_unseen_share:.0%}): the model learned "
                    f"nothing for it; drop it from features or widen the train window (logs / split.eval_days)",
                    extra=fields(feature=name, unseen_share=share))
    return manifest


def check_configured_columns(config: PreprocessStepConfig, logs_dir: str | None) -> None:
    """Each CSV input's first records have the configured shape (cells, delimiter, header: `csv_shape`), and every
    column the config reads is in the header of each file input (CSV header or `logs.csv_columns`, Parquet
    schema)."""
    check_log_inputs(config, *_stream_paths(config, logs_dir))


def check_label_classes(manifest: Manifest, config: PreprocessStepConfig) -> None:
    """Each task has at least `min_positives_per_task` positive and `min_negatives_per_task` negative labels in
    each split; a task whose event never occurs (or always occurs) would train and evaluate on one class."""
    settings = config.preprocess
    for task in config.tasks:
        source = (f"event type '{task.event_type}' within {task.attribution_window_seconds} s of the impression"
                  if task.event_type is not None else f"column '{task.label_column}' ({task.positive_when})")
        for split in SPLITS:
            info = manifest.splits[split]
            positives = info.positives.get(task.name, 0)
            negatives = info.examples - positives
            for label_class, count, field, minimum in (
                ("positive", positives, "min_positives_per_task", settings.min_positives_per_task),
                ("negative", negatives, "min_negatives_per_task", settings.min_negatives_per_task),
            ):
                if count < minimum:
                    raise OneClassLabels(
                        f"task '{task.name}': the {split} split has {count} {label_class} labels of "
                        f"{info.examples} examples, fewer than preprocess.{field} {minimum} "
                        f"(label: {source}); a model cannot be trained or evaluated on one class"
                    )


def check_input_accounted(manifest: Manifest) -> None:
    """Every byte and record each stream read is in its account (`InputAccount.problems`)."""
    for stream, account in manifest.input.items():
        problems = account.problems()
        if problems:
            raise InputNotAccounted(f"{stream}: input lost between reading and parsing: " + "; ".join(problems)
                                    + " (manifest.json `input`)")


def check_invalid_records(manifest: Manifest, max_fraction: float, dead_letters: str) -> None:
    """Each stream's dead-letter share against `preprocess.max_invalid_fraction`."""
    for stream, fraction in manifest.invalid_fraction_by_stream.items():
        if fraction <= max_fraction:
            continue
        reasons = {r.split(":", 1)[1]: n for r, n in manifest.dead_letter.items() if r.startswith(f"{stream}:")}
        top = sorted(reasons.items(), key=lambda kv: -kv[1])[:3]
        raise TooManyInvalidRecords(
            f"{stream}: {sum(reasons.values())} of {manifest.counts.get(f'{stream}_read', 0)} records read "
            f"({fraction:.2%}) are invalid, above preprocess.max_invalid_fraction {max_fraction:.2%}; top reasons: "
            + ", ".join(f"{stream}:{reason} ({n})" for reason, n in top)
            + f"; dead letters in {dead_letters}"
        )


def check_split_sizes(manifest: Manifest, min_train: int, min_eval: int) -> None:
    read = manifest.counts.get("impressions_read", 0)
    if manifest.counts.get("examples", 0) == 0:
        raise NotEnoughExamples(
            f"preprocess produced no examples from {read} impression records read: the logs are empty, "
            f"outside the window, or all invalid (dead letters: {manifest.counts.get('dead_letters', 0)})"
        )
    for split, minimum, field in (("train", min_train, "min_train_examples"), ("eval", min_eval, "min_eval_examples")):
        examples = manifest.splits[split].examples
        if examples < minimum:
            raise NotEnoughExamples(
                f"the {split} split has {examples} examples, fewer than split.{field} {minimum} "
                f"(time split: the last split.eval_days of impressions are eval)"
            )


def _stream_paths(config: PreprocessStepConfig, logs_dir: str | None) -> tuple[str, str | None]:
    if config.logs.source == "synthetic":
        if logs_dir is None:
            raise ValueError("logs source 'synthetic' needs the generated logs directory")
        return f"{logs_dir}/{IMPRESSIONS_DIR}/*.jsonl", f"{logs_dir}/{ENGAGEMENTS_DIR}/*.jsonl"
    if config.logs.impressions is None:  # the config requires it for every source but synthetic
        raise ValueError(f"logs source '{config.logs.source}' needs logs.impressions")
    return config.logs.impressions, config.logs.engagements


def impression_parser(config: PreprocessStepConfig, impressions_path: str) -> ImpressionParser:
    logs = config.logs
    columns: tuple[str, ...] = ()
    if logs.format == "csv":
        columns = tuple(csv_column_names(impressions_path, logs.csv_delimiter, logs.csv_header, logs.csv_columns))
    outcome = logs.label_mode == "outcome"
    return ImpressionParser(
        decoder=RecordDecoder(logs.format, columns, logs.csv_delimiter, logs.max_record_bytes),
        timestamps=TimestampParser(logs.timestamp_format),
        features=tuple(
            FeatureField(f.name, f.kind, logs.impression_column(f.name),
                         f.separator if isinstance(f, CategoricalListFeature) else "|",
                         f.default if isinstance(f, NumericFeature) else 0.0)
            for _, f in logged_features(config.features)
        ),
        id_column=logs.impression_column(IMPRESSION_ID),
        timestamp_column=logs.impression_column(TIMESTAMP),
        id_required=not outcome,
        outcome_labels=tuple(
            OutcomeLabel(label_key(t.name), t.label_column, t.positive_when)
            for t in config.tasks if outcome and t.label_column is not None
        ),
    )


def engagement_parser(config: PreprocessStepConfig, engagements_path: str) -> EngagementParser:
    logs = config.logs
    columns: tuple[str, ...] = ()
    if logs.format == "csv":
        columns = tuple(csv_column_names(engagements_path, logs.csv_delimiter, logs.csv_header,
                                         logs.engagement_csv_columns))
    return EngagementParser(
        decoder=RecordDecoder(logs.format, columns, logs.csv_delimiter, logs.max_record_bytes),
        timestamps=TimestampParser(logs.timestamp_format),
        event_types=frozenset(logs.event_types),
        id_column=logs.engagement_column(IMPRESSION_ID),
        type_column=logs.engagement_column(EVENT_TYPE),
        timestamp_column=logs.engagement_column(TIMESTAMP),
    )


def event_tasks(config: PreprocessStepConfig) -> tuple[EventTask, ...]:
    return tuple(
        EventTask(label_key(t.name), t.event_type, t.attribution_window_seconds * 1000)
        for t in config.tasks if t.event_type is not None
    )


class PreprocessLogs(beam.PTransform):
    """The whole job, on the pipeline's root: the logs of `config` → under `root`, each split's block files, the raw
    eval examples, `transform_fn`, dead letters and the counters `_manifest` reads; outputs the counters file's
    name. The stages are `components.preprocess.stages`; `tft_temp` is tf.Transform's scratch."""

    def __init__(self, config: PreprocessStepConfig, logs_dir: str | None, root: str, window: LogWindow,
                 tft_temp: str):
        super().__init__()
        self.config, self.logs_dir, self.root, self.window, self.tft_temp = config, logs_dir, root, window, tft_temp

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection:
        config, logs, window = self.config, self.config.logs, self.window
        impressions_path, engagements_path = _stream_paths(config, self.logs_dir)
        reading: dict[str, Any] = {"csv_delimiter": logs.csv_delimiter, "max_record_bytes": logs.max_record_bytes,
                                   "max_record_lines": logs.max_record_lines,
                                   "csv_has_header": logs.csv_header == "first_row"}
        late_seconds = max(t.attribution_window_seconds for t in config.tasks)
        skew_days = logs.max_timestamp_skew_days
        parser = ChunkParser("impressions", impression_parser(config, impressions_path))
        columns = parser.impressions
        assert columns is not None  # an impression parser's batches have impression columns
        features = columns.features
        partitions = partition_count(_input_bytes(config, [impressions_path, engagements_path], window, late_seconds))
        with ErrorHandler(WriteDeadLetters(self.root)) as dead_letters:
            impressions = pbegin | ReadImpressions(
                impressions_path, logs.format, parser, window, **reading
            ).with_error_handler(dead_letters)
            engagements = None
            if logs.label_mode == "engagements":
                if engagements_path is None:  # the config requires it (checked at load)
                    raise ValueError("logs.label_mode 'engagements' needs logs.engagements")
                engagements = pbegin | ReadEngagements(
                    engagements_path, logs.format, ChunkParser("engagements", engagement_parser(config,
                                                                                                engagements_path)),
                    window, late_seconds // DAY_SECONDS + 1, **reading
                ).with_error_handler(dead_letters)
            impression_batches = impressions.batches
            engagement_batches = engagements.batches if engagements is not None else None
            median, time_range = None, None
            if skew_days is not None:
                median = impression_batches | "MedianImpressionTime" >> MedianTime()
            schema = columns.schema
            if engagement_batches is not None:
                # with engagements, the join checks each partition's times (`PlausibleTimes`): the wide impression
                # batches go from parsing straight into its grouping
                plausible = None if median is None or skew_days is None else PlausibleTimes(
                    median, PlausibleRange.of("impressions", skew_days, features=features),
                    PlausibleRange.of("engagements", skew_days, late_seconds * 1000), dead_letters)
                tasks = event_tasks(config)
                examples, labelling = (impression_batches, engagement_batches) | (
                    "AttributeEngagements" >> JoinEngagements(tasks, window, features, schema, partitions, plausible))
                # the examples' dates from their ids and times alone: the split cuts the joined batches as they come
                time_range = impression_batches | "ExampleTimes" >> ExampleTimeRange(window, partitions, plausible)
                for task in tasks:
                    schema = schema.append(pa.field(task.label, pa.float64()))
            else:
                if median is not None and skew_days is not None:
                    impression_batches = impression_batches | "PlausibleImpressionTimes" >> DropImplausibleTimes(
                        "impressions", median, skew_days, features=features).with_error_handler(dead_letters)
                examples, labelling = impression_batches | "Deduplicate" >> DeduplicateOutcomes(
                    window, features, schema, partitions)
        # kind: history features, from each example's earlier examples only (components/preprocess/history.py)
        examples = examples | "HistoryFeatures" >> AddHistoryFeatures(config.features, config.tasks, schema,
                                                                      partitions)
        # a join partition is ~PARTITION_BYTES of logs: tf.Transform and the writers after it take it in slices, so
        # what one batch costs them at once (tensors, transformed columns) does not grow with the partition
        examples = examples | "TransformSlices" >> beam.FlatMap(byte_slices, TRANSFORM_BATCH_BYTES).with_output_types(
            BATCH)
        splits = examples | SplitByTime(config.split.eval_days, config.split.calibration_days,
                                        config.split.history_burn_in_days, time_range)
        settings = config.preprocess
        transformed = splits | AnalyzeAndTransform(config.features, config.tasks, self.tft_temp,
                                                    settings.force_tf_compat_v1)
        block_files = transformed.transformed | WriteExamples(
            self.root, transformed.transformed_schema, config.seed, settings.output_shards, settings.block_examples,
            splits.by_split)
        _ = transformed.raw["eval"] | WriteRawEval(self.root, settings.output_shards)
        _ = transformed.transform_fn | "WriteTransformFn" >> tft_beam.WriteTransformFn(self.root)
        counters = (
            impressions.counters,
            *((engagements.counters,) if engagements is not None else ()),
            labelling,
            dead_letters.output(),
            splits.by_split | CountSplits(tuple(label_key(t.name) for t in config.tasks), features),
            (splits.by_split["train"], splits.by_split["eval"]) | "UnseenEvalValues" >> CountUnseenEvalValues(
                config.features),
            block_files,
        )
        return counters | "Counters" >> WriteCounters(self.root)


def _input_bytes(config: PreprocessStepConfig, paths: list[str | None], window: LogWindow,
                 late_seconds: int) -> int | None:
    """The bytes of the log files the job reads (what sizes its partitions), None for a BigQuery source."""
    if config.logs.format == "bigquery":
        return None
    total = 0
    for index, path in enumerate(p for p in paths if p is not None):
        patterns = expand_pattern(path, window, late_seconds // DAY_SECONDS + 1 if index else 0)
        total += sum(m.size_in_bytes for result in FileSystems.match([match_pattern(p) for p in patterns])
                     for m in result.metadata_list)
    return total


def _manifest(config: PreprocessStepConfig, logs_dir: str | None, root: str, window: LogWindow) -> Manifest:
    counters = read_counters(root)
    tasks = [t.name for t in config.tasks]
    truth = read_ground_truth(logs_dir) if logs_dir else None
    splits = {}
    for split in SPLITS + ((CALIBRATION_SPLIT,) if config.split.calibration_days else ()):
        n = counters.split_examples(split)
        positives = {t: counters.positives(split, label_key(t)) for t in tasks}
        bayes = None
        if truth and window.end_ms is not None:  # a replayed day: the floor of this window's own days
            floors = {t: bayes_logloss_over_days(truth, t, _split_dates(window, config.split, split))
                      for t in tasks}
            bayes = floors if all(v is not None for v in floors.values()) else None
        elif truth and split in truth.get("splits", {}):
            bayes = {t: v["bayes_logloss"] for t, v in truth["splits"][split]["tasks"].items() if t in tasks}
        splits[split] = SplitInfo(
            examples=n,
            label_rates={t: positives[t] / n if n else 0.0 for t in tasks},
            file_pattern=f"{split}/part-*.tfrecord.gz",
            blocks=SplitBlocks(files=counters.block_files(split), block_examples=config.preprocess.block_examples),
            bayes_logloss=bayes,
            positives=positives,
            days=[DayCount(date=date, examples=day_examples,
                           positives={t: day_positives.get(label_key(t), 0) for t in tasks})
                  for date, (day_examples, day_positives) in counters.days(split).items()],
        )
    examples = sum(splits[s].examples for s in SPLITS)  # the calibration split is a part of train
    missing_rates = {
        f.name: sum(counters.missing(s, f.name) for s in SPLITS) / examples if examples else 0.0
        for f in config.features if f.kind != "time"
    }
    limit = config.preprocess.max_missing_share
    eval_examples = splits["eval"].examples
    unseen_shares = {f.name: counters.unseen("eval", f.name) / eval_examples if eval_examples else 0.0
                     for f in checked_features(config.features)}
    tft_output = tft.TFTransformOutput(root)
    dead_letter = counters.dead_letters()
    read_by_stream = counters.records_read()
    invalid = sum(dead_letter.values())
    by_stream = {stream: counters.dead_letters_in(stream) / read if read else 0.0
                 for stream, read in read_by_stream.items()}
    read_total = sum(read_by_stream.values())
    feature_spec = {
        name: TransformedFeatureSpec(dtype=spec.dtype.name, shape=[int(d) for d in spec.shape])
        for name, spec in tft_output.transformed_feature_spec().items()
    }
    return Manifest(
        tasks=tasks,
        features=feature_infos(config.features, tft_output, missing_rates),
        splits=splits,
        transform_fn_dir=TRANSFORM_FN_DIR,
        counts={f"{stream}_read": n for stream, n in read_by_stream.items()} | counters.join_outcomes()
        | {"examples": examples, "dead_letters": invalid},
        dead_letter=dead_letter,
        dead_letter_pattern=f"{DEAD_LETTER_DIR}/dead_letter-*.jsonl",
        invalid_fraction=invalid / read_total if read_total else 0.0,
        invalid_fraction_by_stream=by_stream,
        feature_spec=feature_spec,
        block_layout=block_layout(feature_spec, config.preprocess.block_examples),
        raw_eval_pattern=f"{RAW_EVAL_DIR}/part-*.tfrecord.gz",
        window=None if window.end_ms is None else ImpressionWindow(start=_str(window.start_ms),
                                                                     end=format_timestamp(window.end_ms)),
        mostly_missing_features={name: rate for name, rate in missing_rates.items() if rate > limit},
        input={stream: InputAccount(**{name: counts.get(name, 0) for name in InputAccount.model_fields})
               for stream, counts in counters.input_counts().items()},
        unseen_eval_shares=unseen_shares,
        mostly_unseen_features={name: share for name, share in unseen_shares.items()
                                if share > config.preprocess.max_unseen_share},
    )


def _split_dates(window: LogWindow, split_config: SplitConfig, split: str) -> list:
    """The UTC dates of `split` inside a window whose end is a day boundary: the last `eval_days` are eval, the
    calibration split is the last `calibration_days` before them, train starts after `history_burn_in_days`."""
    dates, eval_days = window.dates() or [], split_config.eval_days
    if split == "eval":
        return dates[-eval_days:]
    train = dates[split_config.history_burn_in_days:-eval_days]
    return train[-split_config.calibration_days:] if split == CALIBRATION_SPLIT else train


def _str(value: int | None) -> str | None:
    return None if value is None else format_timestamp(value)


__all__ = ["InputNotAccounted", "MissingInputColumns", "NotEnoughExamples", "OneClassLabels", "TooManyInvalidRecords",
           "preprocess"]
