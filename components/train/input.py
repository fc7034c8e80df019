"""tf.data input: a preprocessed split → batches of (features, labels) with static shapes.

Two formats, chosen by the manifest. **Blocks** (what preprocess writes, components/preprocess/block_format.py):
fixed-length records of `block_examples` examples, one int64 and one float32 matrix each, decoded with a few
memory copies; the columns become features after batching (one `tf.split` per dtype). **Per-example tf.Examples**
(manifests without blocks: older outputs, hand-written fixtures): parsed as below.

Blocks, training: the run's seed shuffles the files (unless the split is cached), then slices of blocks (`SLICE_EXAMPLES` examples each, so a
block's examples scatter over the epoch) through a buffer of `training.shuffle_buffer` examples' worth of slices
(the whole split when it is cached), and then permutes the examples of every window of `WINDOW_BLOCKS` blocks'
worth of slices with a stateless seed (run seed, window number) before cutting batches; every epoch draws new
orders. A block whose header or fingerprint does not match, or a file shorter or longer than the
manifest says, is an error naming the file and the block.

Per-example records: shards are read with a parallel interleave, records parsed in parallel after batching (one vectorized
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

from components.preprocess.block_format import HOLDOUT_BUCKETS, HOLDOUT_COLUMN
from components.preprocess.manifest import BLOCK_HEADER_BYTES, BlockLayout, Manifest, SplitBlocks

LABEL_PREFIX = "label_"
SLICE_EXAMPLES = 64  # training shuffles slices of blocks of (about) this many examples
WINDOW_BLOCKS = 8  # blocks' worth of examples permuted together before batching (training)
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
    cache: bool = False  # blocks: keep the decoded blocks in memory after the first pass (see `cache_plan`)


class CorruptBlockFile(ValueError):
    """A block file's size does not match the manifest (truncated or extended), or a block failed its check."""


@dataclass(frozen=True)
class CachePlan:
    """Whether a run caches its split's decoded blocks and what that takes (`training.cache`)."""

    cache: bool
    bytes: int  # decoded blocks of the split, padding included; 0 when nothing is cached
    reason: str


def split_bytes(manifest: Manifest, split: str) -> int | None:
    """Memory the decoded blocks of `split` take (padding included), or None without blocks."""
    blocks = manifest.splits[split].blocks
    if blocks is None or manifest.block_layout is None:
        return None
    return blocks.blocks * manifest.block_layout.block_examples * manifest.block_layout.row_bytes


def cache_plan(manifest: Manifest, split: str, mode: str, budget_bytes: int) -> CachePlan:
    """`mode` auto: cache when the split's decoded blocks fit `budget_bytes`; memory: always; none: never.
    Per-example records are never cached (their parse, the expensive part, runs after the shuffle)."""
    size = split_bytes(manifest, split)
    if mode == "none":
        return CachePlan(False, 0, "training.cache is none")
    if size is None:
        return CachePlan(False, 0, "the split has per-example records only: nothing to cache")
    if mode == "auto" and size > budget_bytes:
        return CachePlan(False, 0, f"the {split} split's blocks take {size / 2**20:,.0f} MiB, above "
                                   f"training.cache_memory_mb {budget_bytes / 2**20:,.0f}")
    return CachePlan(True, size, f"{size / 2**20:,.1f} MiB of decoded {split} blocks cached after the first epoch")


def make_dataset(
    examples_dir: str | Path,
    manifest: Manifest,
    split: str,
    options: InputOptions,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """Batches of `(features, {task: label[batch, 1]})` for `split`.

    Training: `options.seed` decides the file order, the interleave and the shuffles (see the module doc).
    With an `input_context` (multi-worker), each input pipeline reads its own subset of files and
    batches at the per-replica size.
    """
    blocks = manifest.splits[split].blocks
    if blocks is not None and manifest.block_layout is not None:
        return block_dataset(examples_dir, manifest, split, options, input_context)
    return example_dataset(examples_dir, manifest, split, options, input_context)


def example_dataset(
    examples_dir: str | Path,
    manifest: Manifest,
    split: str,
    options: InputOptions,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """`make_dataset` over per-example tf.Example shards (one vectorized `parse_example` per batch)."""
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


def block_files(examples_dir: str | Path, blocks: SplitBlocks, layout: BlockLayout) -> list[tuple[str, int]]:
    """(path, blocks) of a split's block files, each checked against the manifest: a missing, truncated or
    extended file is a `CorruptBlockFile` naming it and its first block that is not whole."""
    checked = []
    for name in sorted(blocks.files):
        path = str(Path(examples_dir) / name)
        expected = blocks.blocks_in(name)
        if not tf.io.gfile.exists(path):
            raise CorruptBlockFile(f"block file {path} is missing (the manifest lists {expected} blocks in it)")
        size = tf.io.gfile.stat(path).length
        if size != expected * layout.record_bytes:
            whole = size // layout.record_bytes
            what = "truncated" if size < expected * layout.record_bytes else "longer than the manifest says"
            raise CorruptBlockFile(
                f"block file {path} is {what}: {size:,} bytes, expected {expected} blocks of {layout.record_bytes:,} "
                f"bytes; block {min(whole, expected)} is the first that is not whole — rerun preprocess")
        checked.append((path, expected))
    return checked


def decode_block(layout: BlockLayout, path: tf.Tensor, index: tf.Tensor, record: tf.Tensor):
    """(int64 [rows, W_int], float32 [rows, W_float]) of one record, after checking its header and fingerprint;
    a mismatch fails the pipeline with the file and the block index in the message."""
    size, ints_width, floats_width = layout.block_examples, layout.width("int64"), layout.width("float32")
    header = tf.io.decode_raw(tf.strings.substr(record, 0, 16), tf.int64, little_endian=True)
    rows, written_index = header[0], header[1]
    payload = tf.strings.substr(record, BLOCK_HEADER_BYTES, layout.record_bytes - BLOCK_HEADER_BYTES)
    stored = tf.io.decode_raw(tf.strings.substr(record, 16, 8), tf.uint8)
    computed = tf.reshape(tf.fingerprint(tf.expand_dims(payload, 0)), [8])
    valid = tf.reduce_all(tf.equal(stored, computed)) & (rows >= 1) & (rows <= size) & (written_index == index)
    check = tf.debugging.Assert(valid, ["corrupt block: file", path, "block", index, "(header rows", rows,
                                        "index", written_index, "or its fingerprint does not match) — rerun preprocess"])
    with tf.control_dependencies([check]):
        int_bytes = size * ints_width * 8
        ints = tf.io.decode_raw(tf.strings.substr(payload, 0, int_bytes), tf.int64, little_endian=True)
        floats = tf.io.decode_raw(tf.strings.substr(payload, int_bytes, size * floats_width * 4), tf.float32,
                                  little_endian=True)
        return tf.reshape(ints, [size, ints_width])[:rows], tf.reshape(floats, [size, floats_width])[:rows]


def block_dataset(
    examples_dir: str | Path,
    manifest: Manifest,
    split: str,
    options: InputOptions,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """`make_dataset` over block files (see the module doc for the order a training run reads)."""
    layout, blocks = manifest.block_layout, manifest.splits[split].blocks
    assert layout is not None and blocks is not None
    files = block_files(examples_dir, blocks, layout)
    if not files:
        raise FileNotFoundError(f"the {split} split has no block files in {examples_dir}")
    batch_size = options.batch_size
    if input_context is not None:
        batch_size = input_context.get_per_replica_batch_size(options.batch_size)
        if input_context.num_input_pipelines > 1 and len(files) >= input_context.num_input_pipelines:
            files = files[input_context.input_pipeline_id::input_context.num_input_pipelines]
    if options.training and not options.cache and (warning := shuffle_coverage_warning(
            manifest, split, options.shuffle_buffer)):
        log.warning(warning)
    paths = [path for path, _ in files]
    record_bytes, seed = layout.record_bytes, options.seed
    slices_per_block = max(1, layout.block_examples // SLICE_EXAMPLES)
    total_slices = sum(n for _, n in files) * slices_per_block
    buffer = total_slices if options.cache else min(
        total_slices, -(-options.shuffle_buffer // layout.block_examples) * slices_per_block)

    def records_of(path):  # every file's size was checked against the manifest above
        records = tf.data.FixedLengthRecordDataset(path, record_bytes)
        return records.enumerate().map(lambda index, record: (path, index, record))

    def decoded_blocks(files_ds: tf.data.Dataset) -> tf.data.Dataset:
        records = files_ds.interleave(records_of, cycle_length=min(options.cycle_length, len(paths)),
                                      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        return records.map(lambda path, index, record: decode_block(layout, path, index, record),
                           num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

    # A cache holds the blocks in file order (the same whichever iterator completes it); every epoch reads it.
    cached = decoded_blocks(tf.data.Dataset.from_tensor_slices(paths)).cache() if options.cache else None

    def epoch(number: tf.Tensor) -> tf.data.Dataset:
        """One pass over the split. Training: its order a function of (seed, epoch number) alone, never of how
        many iterators or epochs came before (a shuffle's reshuffle seeds are shared by a dataset's iterators)."""
        epoch_seed = tf.constant(seed, tf.int64) * 1_000_003 + number
        if cached is not None:
            blocks = cached
        else:
            files_ds = tf.data.Dataset.from_tensor_slices(paths)
            if options.training:
                files_ds = files_ds.shuffle(len(paths), seed=epoch_seed)
            blocks = decoded_blocks(files_ds)
        if options.training:  # shuffled in slices of a block, so a block's examples end up all over the epoch
            blocks = blocks.rebatch(-(-layout.block_examples // slices_per_block)).shuffle(
                max(1, buffer), seed=epoch_seed)
        if options.holdout_fraction > 0:
            blocks = blocks.map(_holdout_filter(layout, options), num_parallel_calls=tf.data.AUTOTUNE,
                                deterministic=True)
        if not options.training:
            return blocks
        windows = blocks.rebatch(WINDOW_BLOCKS * layout.block_examples).enumerate()  # the last one partial

        def permuted(window_number, window):
            ints, floats = window
            order = tf.argsort(tf.random.stateless_uniform(
                [tf.shape(ints)[0]], seed=tf.stack([epoch_seed, window_number])))
            return tf.gather(ints, order), tf.gather(floats, order)

        return windows.map(permuted, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

    epochs = tf.data.Dataset.counter() if options.repeat else tf.data.Dataset.range(1)
    decoded = epochs.flat_map(epoch)
    batches = decoded.rebatch(batch_size, drop_remainder=options.drop_remainder)
    batches = batches.map(_columns_to_features(layout, manifest), num_parallel_calls=tf.data.AUTOTUNE,
                          deterministic=True)
    data_options = tf.data.Options()
    data_options.deterministic = True
    return batches.with_options(data_options).prefetch(tf.data.AUTOTUNE)


def _holdout_filter(layout: BlockLayout, options: InputOptions):
    """Keeps the rows of a block whose holdout bucket is (`only`) or is not (`exclude`) in the held-out slice."""
    cut = int(round(options.holdout_fraction * HOLDOUT_BUCKETS))
    column = _offsets(layout, "int64")[HOLDOUT_COLUMN][0]

    def keep(ints, floats):
        held = ints[:, column] < cut
        rows = held if options.holdout == "only" else tf.logical_not(held)
        return tf.boolean_mask(ints, rows), tf.boolean_mask(floats, rows)

    return keep


def _offsets(layout: BlockLayout, dtype: str) -> dict[str, tuple[int, int]]:
    """column name → (first column, width) in `dtype`'s matrix."""
    offsets, start = {}, 0
    for column in layout.of_dtype(dtype):
        offsets[column.name] = (start, column.width)
        start += column.width
    return offsets


def _columns_to_features(layout: BlockLayout, manifest: Manifest):
    """A batch's two matrices → `(features, {task: label[batch, 1]})` shaped as `feature_spec` says.

    A handful of ops whatever the number of features (per-feature ops cost ~20 µs each, which at 1,000 features
    was most of a batch's time): per dtype, the scalar columns are gathered, transposed and unstacked in one op
    each; only list features are sliced one by one."""
    spec = feature_spec(manifest)
    labels = {label_key(task): task for task in manifest.tasks}
    missing = sorted(set(spec) - {c.name for c in layout.columns})
    if missing:
        raise ValueError(f"the block layout has no column for {missing}")
    plans = {}
    for dtype in ("int64", "float32"):
        offsets = _offsets(layout, dtype)
        scalars = [(name, start) for name, (start, width) in offsets.items()
                   if (name in labels or name in spec) and width == 1 and (name in labels or not spec[name].shape)]
        lists = [(name, start, width) for name, (start, width) in offsets.items()
                 if name in spec and name not in labels and spec[name].shape]
        plans[dtype] = ([name for name, _ in scalars], [start for _, start in scalars], lists)

    def to_features(ints, floats):
        features, targets = {}, {}
        for dtype, matrix in (("int64", ints), ("float32", floats)):
            names, columns, lists = plans[dtype]
            if names:
                values = tf.unstack(tf.transpose(tf.gather(matrix, columns, axis=1)), num=len(names))
                for name, value in zip(names, values):
                    if name in labels:
                        targets[labels[name]] = tf.expand_dims(value, -1)
                    else:
                        features[name] = value
            for name, start, width in lists:
                features[name] = matrix[:, start:start + width]
        return features, targets

    return to_features
