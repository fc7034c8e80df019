"""tf.data input: transformed TFRecord shards → batches of (features, labels) with static shapes.

Shards are read with a parallel interleave, records parsed in parallel after batching (one vectorized
`parse_example` per batch), and batches prefetched. Every feature has a fixed shape (scalars and
fixed-length lists from the manifest), and training batches drop the remainder, so shapes are static
as TPUs need.

Each training run's seed decides its whole order: the shard order, the (ordered) interleave of the shards
and the shuffle, reshuffled every epoch. The same seed reads the same batches; runs with different seeds
read different ones, so the spread of repeated runs measures what it claims. A run draws its own order over
the whole split only when `training.shuffle_buffer` holds the whole split: below that, every run reads the
split in nearly the order preprocessing wrote it, the runs are correlated and their spread understates the
real one. That is a warning in the train step's log (`shuffle_coverage_warning`) and, for synthetic logs
whose size is known before preprocessing, at config load (`configs.shuffle_coverage`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import tensorflow as tf

from components.preprocess.manifest import Manifest

LABEL_PREFIX = "label_"
HOLDOUT_BUCKETS = 10_000
log = logging.getLogger(__name__)


def label_key(task: str) -> str:
    return f"{LABEL_PREFIX}{task}"


def feature_spec(manifest: Manifest, with_labels: bool = True) -> dict[str, tf.io.FixedLenFeature]:
    """The parse spec of a transformed example, learned from the manifest."""
    spec: dict[str, tf.io.FixedLenFeature] = {}
    for feature in manifest.features:
        dtype = tf.int64 if feature.dtype == "int64" else tf.float32
        shape = [feature.length] if feature.kind == "categorical_list" else []
        spec[feature.name] = tf.io.FixedLenFeature(shape, dtype)
    if with_labels:
        for task in manifest.tasks:
            spec[label_key(task)] = tf.io.FixedLenFeature([], tf.float32)
    return spec


def shard_files(examples_dir: str | Path, manifest: Manifest, split: str) -> list[str]:
    pattern = str(Path(examples_dir) / manifest.splits[split].file_pattern)
    files = sorted(tf.io.gfile.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no {split} shards match {pattern}")
    return files


def shuffle_coverage_warning(manifest: Manifest, split: str, shuffle_buffer: int) -> str | None:
    """Why a run's order over `split` is not its own (the buffer holds only a slice of the split), or None."""
    examples = manifest.splits[split].examples
    if shuffle_buffer >= examples:
        return None
    return (
        f"training.shuffle_buffer {shuffle_buffer:,} holds {shuffle_buffer / examples:.0%} of the {examples:,} "
        f"{split} examples: each run reads the split in nearly the order preprocessing wrote it, so repeated runs "
        f"are correlated and their spread understates the real one; set training.shuffle_buffer >= {examples:,}"
    )


@dataclass(frozen=True)
class InputOptions:
    batch_size: int
    training: bool
    seed: int = 0
    shuffle_buffer: int = 10000
    # The input order is always decided by `seed` (and the split's shards); `training.deterministic` adds op
    # determinism elsewhere. Kept so that callers stating it keep working.
    deterministic: bool = False
    drop_remainder: bool = True
    repeat: bool = False
    cycle_length: int = 4
    holdout_fraction: float = 0.0  # > 0: split train examples by a hash of their bytes (calibration slice)
    holdout: str = "exclude"  # "exclude": read the rest; "only": read the held-out slice alone


def make_dataset(
    examples_dir: str | Path,
    manifest: Manifest,
    split: str,
    options: InputOptions,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """Batches of `(features, {task: label[batch, 1]})` for `split`.

    Training: `options.seed` decides the shard order, the interleave and the shuffle (see the module doc).
    With an `input_context` (multi-worker), each input pipeline reads its own subset of shards and
    batches at the per-replica size.
    """
    files = shard_files(examples_dir, manifest, split)
    if options.training and (warning := shuffle_coverage_warning(manifest, split, options.shuffle_buffer)):
        log.warning(warning)
    batch_size = options.batch_size
    files_ds = tf.data.Dataset.from_tensor_slices(files)
    if input_context is not None:
        batch_size = input_context.get_per_replica_batch_size(options.batch_size)
        if input_context.num_input_pipelines > 1 and len(files) >= input_context.num_input_pipelines:
            files_ds = files_ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if options.training:
        files_ds = files_ds.shuffle(len(files), seed=options.seed)
    records = files_ds.interleave(
        lambda path: tf.data.TFRecordDataset(path, compression_type="GZIP"),
        cycle_length=min(options.cycle_length, len(files)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,  # in shard order: the seed, not thread timing, decides which records come first
    )
    if options.holdout_fraction > 0:
        cut = int(round(options.holdout_fraction * HOLDOUT_BUCKETS))
        held = lambda record: tf.strings.to_hash_bucket_fast(record, HOLDOUT_BUCKETS) < cut  # noqa: E731
        records = records.filter(held if options.holdout == "only" else lambda record: tf.logical_not(held(record)))
    if options.training:
        records = records.shuffle(options.shuffle_buffer, seed=options.seed, reshuffle_each_iteration=True)
    if options.repeat:
        records = records.repeat()
    spec = feature_spec(manifest)
    tasks = list(manifest.tasks)

    def parse(serialized: tf.Tensor):
        parsed = tf.io.parse_example(serialized, spec)
        labels = {task: tf.expand_dims(parsed.pop(label_key(task)), -1) for task in tasks}
        return parsed, labels

    batches = records.batch(batch_size, drop_remainder=options.drop_remainder)
    batches = batches.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    data_options = tf.data.Options()
    data_options.deterministic = True
    return batches.with_options(data_options).prefetch(tf.data.AUTOTUNE)
