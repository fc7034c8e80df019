"""`preprocess()`: logs → labelled examples → time split → tf.Transform → blocks + gzip TFRecords + manifest.

    read ──► parse ──► plausible times ──► join / dedup ──► split by time ──► analyze (train) ──► transform ──► blocks
              │dead letters  │dead letters         │counters                                  │transform_fn    TFRecords
              ▼              ▼                     ▼                                          ▼
        dead_letter/*.jsonl (bad_encoding, …)  stats/counters.jsonl ───────────────────► manifest.json, manifest.md

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apache_beam as beam
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from apache_beam.options.pipeline_options import PipelineOptions
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from components.log_records import fields
from components.logs.readers import FILES, RECORDS, LogWindow, ReadLogRecords, csv_header
from components.logs.records import format_timestamp
from components.logs.split import eval_start_for_latest, split_of
from components.logs.synthetic import ENGAGEMENTS_DIR, IMPRESSIONS_DIR, bayes_logloss_over_days, read_ground_truth
from components.preprocess.block_format import block_layout
from components.preprocess.blocks import WriteExampleBlocks
from components.preprocess.counters import (
    Count,
    WriteCounters,
    count_dead_letter,
    count_input_files,
    count_parse_outcomes,
    count_records_read,
    count_split,
    read_counters,
)
from components.preprocess.dataflow_job import watch_job
from components.preprocess.history import AddHistoryFeatures
from components.preprocess.input_columns import (
    MissingInputColumns,
    check_input_columns,
    engagement_columns,
    impression_columns,
)
from components.preprocess.join import DeduplicateOutcomes, EventTask, JoinEngagements, label_key
from components.preprocess.manifest import (
    CALIBRATION_SPLIT,
    TRANSFORM_FN_DIR,
    ImpressionWindow,
    InputAccount,
    Manifest,
    SplitBlocks,
    SplitInfo,
    TransformedFeatureSpec,
)
from components.preprocess.manifest_markdown import manifest_markdown
from components.preprocess.options import beam_pipeline_options, runs_on_dataflow, temp_location
from components.preprocess.parse import (
    TIMESTAMP_MS,
    EngagementParser,
    FeatureField,
    ImpressionParser,
    OutcomeLabel,
    RecordDecoder,
    TimestampParser,
    parse_stream,
)
from components.preprocess.shuffle import ShuffleExamples
from components.preprocess.step_messages import (
    announce_counter,
    announce_dead_letters,
    announce_done,
    input_files_line,
    plural,
    say,
    wait_for_job,
)
from components.preprocess.time_range import MedianTime, keep_plausible_times
from components.preprocess.transform import build_preprocessing_fn, feature_infos, raw_feature_spec
from components.preprocess.unseen import CountUnseenEvalValues, checked_features
from configs.features import CategoricalListFeature, NumericFeature
from configs.logs import EVENT_TYPE, IMPRESSION_ID, TIMESTAMP, SplitConfig
from configs.slices import PreprocessStepConfig

SPLITS = ("train", "eval")
DEAD_LETTER_DIR = "dead_letter"
RAW_EVAL_DIR = "raw_eval"
MARKDOWN_FILE = "manifest.md"
DAY_SECONDS = 86_400
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
    options = PipelineOptions(beam_args) if beam_args else beam_pipeline_options(config)
    on_dataflow = runs_on_dataflow(options)
    root = (output_uri if on_dataflow and output_uri else output_dir).rstrip("/")
    window = LogWindow.ending_at(window_end, config.logs.lookback_days)
    check_configured_columns(config, logs_dir)
    local_temp = tempfile.mkdtemp(prefix="tft-", dir=output_dir)
    try:
        pipeline = beam.Pipeline(options=options)
        _build(pipeline, config, logs_dir, root, window, temp_location(options, local_temp))
        say(f"running the Beam job ({'Dataflow' if on_dataflow else 'DirectRunner'})")
        watch_job(pipeline.run(), options, gcp_resources_path, wait_for_job)
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
    """Every column the config reads is in the header of each file input (CSV header, Parquet schema)."""
    impressions_path, engagements_path = _stream_paths(config, logs_dir)
    logs = config.logs
    check_input_columns("impressions", impressions_path, logs.format, impression_columns(config), logs.csv_delimiter)
    if logs.label_mode == "engagements" and engagements_path is not None:
        check_input_columns("engagements", engagements_path, logs.format, engagement_columns(config),
                            logs.csv_delimiter)


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
        columns = tuple(csv_header(impressions_path.replace("{date}", "*"), logs.csv_delimiter))
    outcome = logs.label_mode == "outcome"
    return ImpressionParser(
        decoder=RecordDecoder(logs.format, columns, logs.csv_delimiter, logs.max_record_bytes),
        timestamps=TimestampParser(logs.timestamp_format),
        features=tuple(
            FeatureField(f.name, f.kind, logs.impression_column(f.name),
                         f.separator if isinstance(f, CategoricalListFeature) else "|",
                         f.default if isinstance(f, NumericFeature) else 0.0)
            for f in config.features
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
        columns = tuple(csv_header(engagements_path.replace("{date}", "*"), logs.csv_delimiter))
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


def _build(pipeline, config: PreprocessStepConfig, logs_dir: str | None, root: str, window: LogWindow,
           tft_temp: str):
    impressions_path, engagements_path = _stream_paths(config, logs_dir)
    fmt, delimiter, max_bytes = config.logs.format, config.logs.csv_delimiter, config.logs.max_record_bytes
    max_lines = config.logs.max_record_lines
    say(input_files_line("impressions", impressions_path, fmt, window), stream="impressions")
    read_impressions = pipeline | "ReadImpressions" >> ReadLogRecords(
        impressions_path, fmt, window, csv_delimiter=delimiter, max_record_bytes=max_bytes, max_record_lines=max_lines)
    raw_impressions = read_impressions[RECORDS]
    impressions, impression_dead, impression_outcomes = parse_stream(
        raw_impressions, "impressions", impression_parser(config, impressions_path)
    )
    read_impressions_count = count_records_read(raw_impressions, "impressions")
    counters = [read_impressions_count]
    if fmt != "bigquery":  # a table has no files or bytes to account for
        counters += [count_input_files(read_impressions[FILES], "impressions"),
                     count_parse_outcomes(impression_outcomes, "impressions")]
    read_engagements = None
    dead_letters = [impression_dead]
    skew_days = config.logs.max_timestamp_skew_days
    median = None
    if skew_days is not None:
        median = impressions | "MedianImpressionTime" >> MedianTime()
        impressions, out_of_range = keep_plausible_times(impressions, "impressions", median, skew_days)
        dead_letters.append(out_of_range)
    if config.logs.label_mode == "engagements":
        if engagements_path is None:  # the config requires it (checked at load)
            raise ValueError("logs.label_mode 'engagements' needs logs.engagements")
        late_seconds = max(t.attribution_window_seconds for t in config.tasks)
        late_days = late_seconds // DAY_SECONDS + 1
        say(input_files_line("engagements", engagements_path, fmt, window, late_days), stream="engagements")
        read_events = pipeline | "ReadEngagements" >> ReadLogRecords(
            engagements_path, fmt, window, late_days, csv_delimiter=delimiter, max_record_bytes=max_bytes,
            max_record_lines=max_lines)
        raw_events = read_events[RECORDS]
        events, event_dead, event_outcomes = parse_stream(
            raw_events, "engagements", engagement_parser(config, engagements_path))
        if fmt != "bigquery":
            counters += [count_input_files(read_events[FILES], "engagements"),
                         count_parse_outcomes(event_outcomes, "engagements")]
        dead_letters.append(event_dead)
        if median is not None and skew_days is not None:
            events, out_of_range = keep_plausible_times(events, "engagements", median, skew_days, late_seconds * 1000)
            dead_letters.append(out_of_range)
        examples, join_counts = (impressions, events) | "Join" >> JoinEngagements(event_tasks(config), window)
        read_engagements = count_records_read(raw_events, "engagements")
        counters.append(read_engagements)
    else:
        examples, join_counts = impressions | "Deduplicate" >> DeduplicateOutcomes(window)
    counters.append(join_counts)
    # kind: history features, from each example's earlier examples only (components/preprocess/history.py)
    examples = examples | "HistoryFeatures" >> AddHistoryFeatures(config.features, config.tasks)

    dead = tuple(dead_letters) | "AllDeadLetters" >> beam.Flatten()
    _ = dead | "DeadLetterJson" >> beam.Map(_json_line) | "WriteDeadLetters" >> beam.io.WriteToText(
        f"{root}/{DEAD_LETTER_DIR}/dead_letter", file_name_suffix=".jsonl"
    )
    counters.append(dead | "DeadLetterReason" >> beam.Map(count_dead_letter))
    _ = announce_dead_letters(dead)

    latest = examples | "Time" >> beam.Map(lambda e: e[TIMESTAMP_MS]) | "Latest" >> beam.CombineGlobally(
        lambda stamps: max(stamps, default=0)
    )
    boundary = latest | "EvalStart" >> beam.Map(eval_start_for_latest, config.split.eval_days)
    by_split = examples | "SplitByTime" >> beam.Partition(SplitByTime(), len(SPLITS), beam.pvalue.AsSingleton(boundary))
    collections = dict(zip(SPLITS, by_split))
    if config.split.calibration_days:
        collections[CALIBRATION_SPLIT] = collections["train"] | "LatestTrainDays" >> beam.Filter(
            lambda e, start, days: e[TIMESTAMP_MS] >= start - days * DAY_SECONDS * 1000,
            beam.pvalue.AsSingleton(boundary), config.split.calibration_days,
        )
    labels = tuple(label_key(t.name) for t in config.tasks)
    for split, collection in collections.items():
        counters.append(count_split(collection, split, labels))
        _ = announce_counter(counters[-1], Count("split_examples", split).key, f"{split.title()}Examples",
                             _counted_line(f"{split} split: ", "example"))
    for stream, counter in zip(("impressions", "engagements"), (read_impressions_count, read_engagements)):
        if counter is not None:
            _ = announce_counter(counter, Count("records_read", stream).key, f"{stream.title()}Read",
                                 _counted_line(f"{stream}: read ", "record"))
    counters.append((collections["train"], collections["eval"]) | "UnseenEvalValues" >> CountUnseenEvalValues(
        config.features))

    spec = raw_feature_spec(config.features, config.tasks)
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(spec))
    keys = tuple(spec)
    instances = [
        collection | f"{split.title()}Instances" >> beam.Map(lambda e: {k: e[k] for k in keys})
        for split, collection in collections.items()
    ]
    with tft_beam.Context(temp_dir=tft_temp, force_tf_compat_v1=False):
        transform_fn = (instances[0], metadata) | "Analyze" >> tft_beam.AnalyzeDataset(
            build_preprocessing_fn(config.features, config.tasks)
        )
        _ = announce_done(transform_fn[0], "Analysis", "train split analysed: vocabularies and statistics ready")
        for split, split_instances in zip(collections, instances):
            transformed, transformed_metadata = ((split_instances, metadata), transform_fn) | (
                f"Transform{split.title()}" >> tft_beam.TransformDataset()
            )
            if split == "eval":  # as logged, for scoring any model (today's or the champion) through its raw signature
                _ = (
                    split_instances
                    | "EncodeRawEval" >> beam.Map(tft.coders.ExampleProtoCoder(metadata.schema).encode)
                    | "WriteRawEval" >> beam.io.WriteToTFRecord(
                        f"{root}/{RAW_EVAL_DIR}/part", file_name_suffix=".tfrecord.gz",
                        num_shards=config.preprocess.output_shards,
                        compression_type=beam.io.filesystem.CompressionTypes.GZIP,
                    )
                )
            coder = tft.coders.ExampleProtoCoder(transformed_metadata.schema)
            pairs = transformed | f"Encode{split.title()}" >> beam.Map(lambda values, encode=coder.encode: (
                encode(values), values))
            layout = block_layout(_transformed_spec(transformed_metadata.schema), config.preprocess.block_examples)
            counters.append(pairs | f"Blocks{split.title()}" >> WriteExampleBlocks(
                root, split, layout, config.seed, min_files=config.preprocess.output_shards))
            encoded = pairs | f"Serialized{split.title()}" >> beam.Map(lambda pair: pair[0])
            if split == "train":  # the join emits examples grouped by label; never write them in that order
                encoded = encoded | "ShuffleTrain" >> ShuffleExamples(
                    config.seed, config.preprocess.output_shards * config.preprocess.shuffle_buckets_per_shard
                )
            written = (
                encoded
                | f"Write{split.title()}" >> beam.io.WriteToTFRecord(
                    f"{root}/{split}/part", file_name_suffix=".tfrecord.gz",
                    num_shards=config.preprocess.output_shards,
                    compression_type=beam.io.filesystem.CompressionTypes.GZIP,
                )
            )
            _ = announce_done(written, f"Written{split.title()}", f"{split} examples written ({{files}})")
        _ = transform_fn | "WriteTransformFn" >> tft_beam.WriteTransformFn(root)
    _ = tuple(counters) | "Counters" >> WriteCounters(root)


def _transformed_spec(schema) -> dict[str, TransformedFeatureSpec]:
    """The transformed schema as the manifest's feature spec (name → dtype, shape), known when the job is built."""
    return {name: TransformedFeatureSpec(dtype=spec.dtype.name, shape=[int(d) for d in spec.shape])
            for name, spec in schema_utils.schema_as_feature_spec(schema).feature_spec.items()}


class SplitByTime(beam.PartitionFn):
    """Partition index (in `SPLITS`) of an example: eval from the side input `eval_start_ms` on, train before."""

    def partition_for(self, element: Any, num_partitions: int, *args: Any, **kwargs: Any) -> int:
        (eval_start_ms,) = args
        return SPLITS.index(split_of(element[TIMESTAMP_MS], eval_start_ms))


def _counted_line(prefix: str, noun: str) -> Callable[[int], str]:
    """The progress line of a count: `prefix` and the count of `noun`s (`train split: 9,000 examples`)."""
    return lambda n: prefix + plural(n, noun)


def _json_line(dead: dict) -> str:
    import json

    return json.dumps(dead, sort_keys=True)


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
    calibration split is the last `calibration_days` before them."""
    dates, eval_days = window.dates() or [], split_config.eval_days
    if split == "eval":
        return dates[-eval_days:]
    train = dates[:-eval_days]
    return train[-split_config.calibration_days:] if split == CALIBRATION_SPLIT else train


def _str(value: int | None) -> str | None:
    return None if value is None else format_timestamp(value)


__all__ = ["InputNotAccounted", "MissingInputColumns", "NotEnoughExamples", "OneClassLabels", "TooManyInvalidRecords",
           "preprocess"]
