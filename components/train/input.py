"""tf.data input: a preprocessed split → batches of (features, labels) with static shapes.

Two formats, chosen by the manifest. **Blocks** (what preprocess writes, components/preprocess/block_format.py):
fixed-length records of `block_examples` examples, one int64 and one float32 matrix each, decoded with one copy
of the record. With `InputOptions.packed` (training and evaluation) a batch's features are its two matrices,
which the model splits itself (`components.train.packed_batch`); without it the columns become one tensor per
feature after batching (one unstack per dtype), as the per-example parse gives them. **Per-example tf.Examples**
(manifests without blocks: older outputs, hand-written fixtures): parsed as below.

Blocks, training: every epoch, from (run seed, epoch number) alone, the files and (through a buffer of one window)
the blocks are shuffled, and the examples of each window of blocks are permuted with one gather per dtype, drawn
with a stateless seed (epoch seed, window number). A window is the whole split when it is cached, else
`training.shuffle_buffer` examples' worth of blocks. Batches are sliced from the permuted rows, the rows left over
from a window opening the next one's first batch, so every batch is full and none is lost between windows or
epochs. A repeated training read works one epoch (and one window) ahead of what it hands out; cached, it gathers an
epoch's batches at once (`stream_batches`). A block whose header or fingerprint does not match, or a file shorter or longer than the manifest says,
is an error naming the file and the block.

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
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from components.contracts.manifest import BLOCK_HEADER_BYTES, BlockLayout, Manifest
from components.preprocess.block_format import HOLDOUT_BUCKETS, HOLDOUT_COLUMN
from components.train.block_files import checked_block_files
from components.train.packed_batch import LABEL_PREFIX, PACKED_FLOAT32, PACKED_INT64, label_columns

log = logging.getLogger(__name__)
# The block files' read buffer: 1 MiB whatever the record size. Reading 4 MiB records (1,000 features) alone, a
# buffer of one record ran at 61k examples/s per core, 1 MiB at 203k, 64 KiB at 191k, 16 MiB at 38k (one ad-hoc
# run, load ~6; the reader's figures are benchmarks/input_pipeline.py's).
READ_BUFFER_BYTES = 2**20


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
    # blocks: features are the batch's two packed matrices (`components.train.packed_batch`), which the model
    # splits in its graph, instead of one tensor per feature; per-example records ignore it (the model takes both)
    packed: bool = False


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


def decode_block(layout: BlockLayout, path: tf.Tensor, salt: tf.Tensor, blocks: tf.Tensor, last_rows: tf.Tensor,
                 index: tf.Tensor, record: tf.Tensor):
    """(int64 [block_examples, W_int], float32 [block_examples, W_float], rows) of one record — the whole padded
    block, so shapes stay static — after checking its fingerprint (salted with its file and layout: `salt`, 8 bytes)
    and its header against the manifest (its index, and its rows: full but for the file's last block, `last_rows`);
    a mismatch fails the pipeline with the file and the block index in the message. One copy of the record
    (`decode_raw` to bytes); the matrices are bitcast views of it (little-endian, as the writer packs them), the
    fingerprint is hashed from it in place."""
    size, ints_width, floats_width = layout.block_examples, layout.width("int64"), layout.width("float32")
    data = tf.io.decode_raw(record, tf.uint8)
    header = tf.bitcast(tf.reshape(data[8:BLOCK_HEADER_BYTES], [2, 8]), tf.int64)
    rows, written_index = header[0], header[1]
    payload = data[BLOCK_HEADER_BYTES:]
    computed = tf.bitwise.bitwise_xor(tf.reshape(tf.fingerprint(tf.expand_dims(data[8:], 0)), [8]), salt)
    expected_rows = tf.where(index == blocks - 1, last_rows, tf.constant(size, tf.int64))
    valid = tf.reduce_all(tf.equal(data[:8], computed)) & (rows == expected_rows) & (written_index == index)
    check = tf.debugging.Assert(valid, ["corrupt block: file", path, "block", index, "(header rows", rows,
                                        "index", written_index, "where the manifest says rows", expected_rows,
                                        "index", index, "or its fingerprint does not match) — rerun preprocess"])
    with tf.control_dependencies([check]):
        int_bytes = size * ints_width * 8
        ints = tf.bitcast(tf.reshape(payload[:int_bytes], [size * ints_width, 8]), tf.int64)
        floats = tf.bitcast(tf.reshape(payload[int_bytes:], [size * floats_width, 4]), tf.float32)
        return tf.reshape(ints, [size, ints_width]), tf.reshape(floats, [size, floats_width]), tf.identity(rows)


def window_blocks(layout: BlockLayout, total_blocks: int, options: InputOptions) -> int:
    """Blocks whose examples a training run permutes together: the whole split when it is cached, else
    `training.shuffle_buffer` examples' worth (at least one block, at most the split)."""
    if options.cache:
        return total_blocks
    return max(1, min(total_blocks, -(-options.shuffle_buffer // layout.block_examples)))


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
    if sys.byteorder != "little":
        raise RuntimeError("the block reader bitcasts little-endian records: it needs a little-endian host")
    files = checked_block_files(examples_dir, blocks, layout, tf.io.gfile.exists,
                                lambda path: tf.io.gfile.stat(path).length)
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
    paths = [f.path for f in files]
    described = (paths, np.array([list(f.salt.to_bytes(8, "little")) for f in files], np.uint8),
                 np.array([f.blocks for f in files], np.int64), np.array([f.last_rows for f in files], np.int64))
    record_bytes, seed = layout.record_bytes, options.seed
    window = window_blocks(layout, sum(f.blocks for f in files), options)
    keep = _holdout_rows(layout, options)

    def records_of(path, salt, blocks, last_rows):  # every file's size was checked against the manifest above
        records = tf.data.FixedLengthRecordDataset(path, record_bytes, buffer_size=READ_BUFFER_BYTES)
        return records.enumerate().map(lambda index, record: (path, salt, blocks, last_rows, index, record))

    def decoded_blocks(files_ds: tf.data.Dataset) -> tf.data.Dataset:
        records = files_ds.interleave(records_of, cycle_length=min(options.cycle_length, len(paths)),
                                      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        return records.map(lambda *fields: decode_block(layout, *fields),
                           num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

    # A cache holds the blocks in file order (the same whichever iterator completes it), for training as one
    # element [blocks, block_examples, W] per dtype: every epoch permutes it with one gather per dtype.
    cached = None
    if options.cache:
        cached = decoded_blocks(tf.data.Dataset.from_tensor_slices(described))
        cached = (cached.batch(window) if options.training else cached).cache()

    def epoch_seed(number: tf.Tensor) -> tf.Tensor:
        return tf.constant(seed, tf.int64) * 1_000_003 + number

    def permuted(epoch_seed: tf.Tensor):
        def permute(number, window):
            """A window's kept rows (not padding, not held out) in an order drawn from (epoch seed, window)."""
            ints, floats, positions = window_rows(window, layout.block_examples, keep)
            # the kept rows' positions shuffled (linear in rows, one thread: half the cost of sorting random keys)
            order = tf.random.experimental.stateless_shuffle(positions, seed=tf.stack([epoch_seed, number]))
            return tf.gather(ints, order), tf.gather(floats, order)
        return permute

    def epoch(number: tf.Tensor) -> tf.data.Dataset:
        """One pass over the split as (ints [n, W_int], floats [n, W_float]) runs of kept rows in reading order.
        Training: that order a function of (seed, epoch number) alone, never of how many iterators or epochs came
        before (a shuffle's reshuffle seeds are shared by a dataset's iterators)."""
        this_seed = epoch_seed(number)
        if not options.training:
            blocks = cached if cached is not None else decoded_blocks(tf.data.Dataset.from_tensor_slices(described))
            return blocks.map(lambda ints, floats, rows: _kept(ints[:rows], floats[:rows], keep),
                              num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        if cached is not None:
            windows = cached
        else:
            files_ds = tf.data.Dataset.from_tensor_slices(described).shuffle(len(paths), seed=this_seed)
            blocks = decoded_blocks(files_ds)
            if window > 1:
                blocks = blocks.shuffle(window, seed=this_seed)
            windows = blocks.batch(window).prefetch(1)  # the next window is read while this one is permuted
        return windows.enumerate().map(permuted(this_seed), num_parallel_calls=tf.data.AUTOTUNE,
                                       deterministic=True)

    epochs = tf.data.Dataset.counter() if options.repeat else tf.data.Dataset.range(1)
    to_batch = packed_labels(layout, list(manifest.tasks)) if options.packed else _columns_to_features(layout, manifest)
    data_options = tf.data.Options()
    data_options.deterministic = True
    if options.repeat and options.training and cached is not None:
        # an epoch's batches cut from the permuted rows in one gather, ahead by a prefetch of one: the same
        # batches as the scan below, without its copies (benchmarks/train_input_cpu.py)
        stacks = tf.data.Dataset.zip(epochs, cached.repeat()).map(
            stream_batches(batch_size, epoch_seed, keep, layout.block_examples)).prefetch(1)
        if options.packed:
            batches = stacks.flat_map(lambda ints, floats: tf.data.Dataset.from_tensor_slices(to_batch(ints, floats)))
        else:
            batches = stacks.flat_map(lambda ints, floats: tf.data.Dataset.from_tensor_slices((ints, floats))).map(
                to_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        return batches.with_options(data_options).prefetch(tf.data.AUTOTUNE)
    if options.repeat and options.training:
        # the next epoch is read while this one is consumed, one epoch ahead, in order: an epoch yields at most
        # `block_length` runs, and the interleave takes all of one epoch's before the next's
        runs = epochs.interleave(epoch, cycle_length=2, block_length=-(-sum(f.blocks for f in files) // window),
                                 num_parallel_calls=2, deterministic=True)
    else:
        runs = epochs.flat_map(epoch)
    runs = runs.map(lambda ints, floats: (ints, floats, False))
    if not options.repeat:  # the end of the split: what is left is the last, partial batch (or dropped)
        runs = runs.concatenate(tf.data.Dataset.from_tensors(
            (tf.zeros([0, layout.width("int64")], tf.int64), tf.zeros([0, layout.width("float32")]), True)))
    if options.packed and options.training:
        # training batches: the labels are cut from a run's stacked batches at once, not in a map stage per batch
        batches = _full_batches(runs, batch_size, options.drop_remainder, to_batch)
    else:  # evaluation, export, per-feature reads: a map per batch (a per-feature split per run grows with width)
        batches = _full_batches(runs, batch_size, options.drop_remainder).map(
            to_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return batches.with_options(data_options).prefetch(tf.data.AUTOTUNE)


def window_rows(window, block_examples: int, keep: Callable[[tf.Tensor], tf.Tensor] | None
                ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """A window of blocks (ints [blocks, block_examples, W_int], floats [..., W_float], rows per block) → its
    rows flattened (ints [blocks·block_examples, W_int], floats [...]) and the positions of the kept ones (not
    padding, not held out by `keep`), in file order."""
    ints, floats, rows = window
    ints, floats = tf.reshape(ints, [-1, ints.shape[-1]]), tf.reshape(floats, [-1, floats.shape[-1]])
    kept = tf.reshape(tf.range(block_examples, dtype=tf.int64)[tf.newaxis, :] < rows[:, tf.newaxis], [-1])
    if keep is not None:
        kept &= keep(ints)
    return ints, floats, tf.where(kept)[:, 0]


def stream_batches(batch_size: int, epoch_seed: Callable[[tf.Tensor], tf.Tensor],
                   keep: Callable[[tf.Tensor], tf.Tensor] | None, block_examples: int):
    """(epoch number, the cached split [blocks, block_examples, W] per dtype and rows per block) → the batches that
    complete in that epoch, stacked `(ints [k, batch, W_int], floats [k, batch, W_float])`.

    The stream a repeated training read yields is every epoch's kept rows in that epoch's order (the positions
    shuffled by `(epoch_seed(epoch), 0)`, as `permuted` draws them), one epoch after another, cut into batches:
    batch j holds stream positions [j·batch, (j+1)·batch). The batches completing in epoch e are those with
    e·n < (j+1)·batch ≤ (e+1)·n (n kept rows an epoch) — the ones `_full_batches`' scan emits for that epoch's
    run — and their rows are gathered at once, the leading ones from the orders of the epochs before (one epoch
    unless the split has fewer kept rows than a batch). Each epoch is a function of its number alone."""

    def batches(number: tf.Tensor, window) -> tuple[tf.Tensor, tf.Tensor]:
        ints, floats, positions = window_rows(window, block_examples, keep)
        n = tf.shape(positions, out_type=tf.int64)[0]
        size = tf.constant(batch_size, tf.int64)
        first, end = number * n // size, (number + 1) * n // size  # no batch an epoch when n is 0
        stream = tf.range(first * size, end * size, dtype=tf.int64)
        oldest = tf.where(n > 0, tf.minimum(first * size // tf.maximum(n, 1), number), number)
        orders = tf.map_fn(
            lambda epoch: tf.random.experimental.stateless_shuffle(
                positions, seed=tf.stack([epoch_seed(epoch), tf.constant(0, tf.int64)])),
            tf.range(oldest, number + 1, dtype=tf.int64), fn_output_signature=tf.int64)
        # stream position q·n + r is row r of epoch q's order: orders[q - oldest, r], flat at (q - oldest)·n + r
        picked = tf.gather(tf.reshape(orders, [-1]), stream - oldest * n)
        return (tf.reshape(tf.gather(ints, picked), [-1, batch_size, ints.shape[-1]]),
                tf.reshape(tf.gather(floats, picked), [-1, batch_size, floats.shape[-1]]))
    return batches


def _full_batches(runs: tf.data.Dataset, batch_size: int, drop_remainder: bool,
                  to_batch: Callable[[tf.Tensor, tf.Tensor], Any] | None = None) -> tf.data.Dataset:
    """Runs of rows `(ints [n, W_int], floats [n, W_float], end)` → batches of `batch_size` rows, in order, as
    `(ints, floats)` or, with `to_batch`, as `to_batch(ints, floats)`.

    Rows left over from a run open the next run's first batch (an epoch's last rows open the next epoch's);
    at `end` the rows left are a last, partial batch unless `drop_remainder`. Batches are slices of the runs
    (one copy a row): `Dataset.rebatch` does the same cut but costs about a millisecond per example at
    1,000 columns (benchmarks/block_reader_stages.py).

    `to_batch` is applied to a run's stacked batches `[k, batch, W]` in one op (it must index the last axis), so
    a batch passes no stage of its own: a stage's hand-off costs more per batch than `packed_labels`' work. It is
    traced three times (opening rows, whole batches, last batch): only for a split whose cost does not grow with
    the number of columns (not `_columns_to_features`)."""
    ints_width, floats_width = runs.element_spec[0].shape[-1], runs.element_spec[1].shape[-1]
    split = to_batch if to_batch is not None else lambda ints, floats: (ints, floats)

    def cut(left, run):
        left_ints, left_floats = left
        ints, floats, end = run
        held, rows = tf.shape(left_ints)[0], tf.shape(ints)[0]
        full = (held + rows) // batch_size
        first = tf.minimum(batch_size - held, rows)  # rows of this run that complete the held ones' batch
        rest = tf.maximum(first, full * batch_size - held)  # rows up to here fill whole batches
        opened_ints = tf.concat([left_ints, ints[:first]], 0)
        opened_floats = tf.concat([left_floats, floats[:first]], 0)
        whole = full >= 1
        shown = tf.where(whole, batch_size, 0)
        last = tf.where(end & tf.logical_not(whole), held, 0)
        kept_ints = tf.cond(whole, lambda: ints[rest:], lambda: opened_ints[:tf.shape(opened_ints)[0] - last])
        kept_floats = tf.cond(whole, lambda: floats[rest:],
                              lambda: opened_floats[:tf.shape(opened_floats)[0] - last])
        emitted = (
            tf.reshape(opened_ints[:shown], [-1, batch_size, ints_width]),
            tf.reshape(opened_floats[:shown], [-1, batch_size, floats_width]),
            tf.reshape(ints[first:rest], [-1, batch_size, ints_width]),
            tf.reshape(floats[first:rest], [-1, batch_size, floats_width]),
            left_ints[:last], left_floats[:last],
        )
        return (kept_ints, kept_floats), emitted

    def batches_of(opened_ints, opened_floats, ints, floats, last_ints, last_floats):
        data = tf.data.Dataset.from_tensor_slices(split(opened_ints, opened_floats)).concatenate(
            tf.data.Dataset.from_tensor_slices(split(ints, floats)))
        if not drop_remainder:
            last = tf.data.Dataset.from_tensors((last_ints, last_floats)).filter(
                lambda rows, _: tf.shape(rows)[0] > 0)
            data = data.concatenate(last.map(split) if to_batch is not None else last)
        return data

    start = (tf.zeros([0, ints_width], tf.int64), tf.zeros([0, floats_width], tf.float32))
    return runs.scan(start, cut).flat_map(batches_of)


def _holdout_rows(layout: BlockLayout, options: InputOptions) -> Callable[[tf.Tensor], tf.Tensor] | None:
    """ints [n, W_int] → bool [n]: the rows whose holdout bucket is (`only`) or is not (`exclude`) in the held-out
    slice; None without a holdout (every row is kept)."""
    if options.holdout_fraction <= 0:
        return None
    cut = int(round(options.holdout_fraction * HOLDOUT_BUCKETS))
    column = layout.offsets("int64")[HOLDOUT_COLUMN][0]

    def keep(ints):
        held = ints[:, column] < cut
        return held if options.holdout == "only" else tf.logical_not(held)

    return keep


def _kept(ints, floats, keep):
    """The rows of (ints, floats) that `keep` keeps (all of them when it is None)."""
    if keep is None:
        return ints, floats
    rows = keep(ints)
    return tf.boolean_mask(ints, rows), tf.boolean_mask(floats, rows)


def packed_labels(layout: BlockLayout, tasks: list[str]):
    """A batch's two matrices → `(features, {task: label[batch, 1]})`: the matrices pass through untouched as the
    packed features (the model splits them, `components.train.packed_batch`); each task's label is its column, as
    float32."""
    columns = label_columns(layout, tasks)

    def to_packed(ints: tf.Tensor, floats: tf.Tensor):
        matrices = {"int64": ints, "float32": floats}
        labels = {task: tf.cast(matrices[dtype][..., column:column + 1], tf.float32)
                  for task, (dtype, column) in columns.items()}
        return {PACKED_INT64: ints, PACKED_FLOAT32: floats}, labels

    return to_packed


def _columns_to_features(layout: BlockLayout, manifest: Manifest):
    """A batch's two matrices → `(features, {task: label[batch, 1]})` shaped as `feature_spec` says.

    One op per dtype whatever the number of features: the matrix is unstacked along its columns (a strided copy
    per column) and the scalar features and labels are picked from that; only list features are sliced one by
    one. Gathering the scalar columns and transposing them first (the previous way) copies the batch twice more
    and was 5x slower at 1,000 columns; one op per feature costs ~20 µs each (benchmarks/block_reader_stages.py)."""
    spec = feature_spec(manifest)
    labels = {label_key(task): task for task in manifest.tasks}
    missing = sorted(set(spec) - {c.name for c in layout.columns})
    if missing:
        raise ValueError(f"the block layout has no column for {missing}")
    plans = {}
    for dtype in ("int64", "float32"):
        offsets = layout.offsets(dtype)
        scalars = [(name, start) for name, (start, width) in offsets.items()
                   if (name in labels or name in spec) and width == 1 and (name in labels or not spec[name].shape)]
        lists = [(name, start, width) for name, (start, width) in offsets.items()
                 if name in spec and name not in labels and spec[name].shape]
        plans[dtype] = (scalars, lists, layout.width(dtype))

    def to_features(ints, floats):
        features, targets = {}, {}
        for dtype, matrix in (("int64", ints), ("float32", floats)):
            scalars, lists, width = plans[dtype]
            if scalars:
                columns = tf.unstack(matrix, num=width, axis=1)
                for name, start in scalars:
                    if name in labels:
                        targets[labels[name]] = tf.expand_dims(columns[start], -1)
                    else:
                        features[name] = columns[start]
            for name, start, width in lists:
                features[name] = matrix[:, start:start + width]
        return features, targets

    return to_features
