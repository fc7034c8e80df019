"""The block format: the trainer reads the same examples from blocks as from per-example records, each seed draws
its own order every epoch, the calibration holdout holds the same examples, caching follows its budget, and a
truncated or corrupt block is an error naming the file and the block."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import tensorflow as tf
from fixture_data import write_transformed_examples

from components.preprocess.manifest_markdown import manifest_markdown
from components.train.block_files import CorruptBlockFile, cache_plan, split_bytes
from components.train.input import InputOptions, block_dataset, example_dataset, make_dataset

TRAIN, BLOCK = 1000, 16


@pytest.fixture(scope="module")
def both_formats(tmp_path_factory):
    directory = tmp_path_factory.mktemp("blocks")
    manifest = write_transformed_examples(directory, train=TRAIN, eval=300, shards=2, seed=3, block_examples=BLOCK)
    return directory, manifest


def bids(data) -> list[float]:
    return [float(b) for features, _ in data for b in features["ad_bid"].numpy()]


def rows(data) -> list[tuple]:
    out = []
    for features, labels in data:
        columns = [features[n].numpy().reshape(len(features["ad_bid"]), -1) for n in sorted(features)]
        columns += [labels[t].numpy() for t in sorted(labels)]
        out += [tuple(np.concatenate(row).tolist()) for row in zip(*columns)]
    return out


def test_blocks_hold_the_same_examples_and_count_the_partial_blocks(both_formats):
    directory, manifest = both_formats
    blocks = manifest.splits["train"].blocks
    assert blocks.examples == TRAIN and blocks.blocks == 2 * 32  # 500 a file: 31 full blocks of 16 and 1 of 4
    assert blocks.partial_blocks == {"train/blocks-00000-of-00002.blocks": 4, "train/blocks-00001-of-00002.blocks": 4}
    assert "| train | 2 | 64 | 1000 | 4, 4 |" in manifest_markdown(manifest)  # manifest.md counts them too
    options = InputOptions(batch_size=100, training=False, drop_remainder=False)
    from_blocks = block_dataset(directory, manifest, "eval", options)
    assert make_dataset(directory, manifest, "eval", options).element_spec == from_blocks.element_spec
    assert sorted(rows(from_blocks)) == sorted(rows(example_dataset(directory, manifest, "eval", options)))
    assert len(rows(from_blocks)) == 300


def test_training_batches_have_static_shapes_and_each_seed_its_own_order_every_epoch(both_formats):
    directory, manifest = both_formats

    def order(seed: int, epochs: int = 1) -> list[float]:
        options = InputOptions(batch_size=50, training=True, seed=seed, shuffle_buffer=TRAIN, repeat=True)
        data = make_dataset(directory, manifest, "train", options)
        assert data.element_spec[0]["user_interests"].shape == (50, 4)
        assert data.element_spec[0]["ad_bid"].shape == (50,)
        return bids(data.take(epochs * TRAIN // 50))

    first = order(1, epochs=2)
    assert first == order(1, epochs=2)  # the seed decides
    assert sorted(first[:TRAIN]) == sorted(first[TRAIN:])  # an epoch is the whole split once
    rank = {b: i for i, b in enumerate(first[:TRAIN])}
    for other in (order(2), first[TRAIN:]):  # another seed, the next epoch: orders unrelated to the first
        correlation = np.corrcoef(np.arange(TRAIN), [rank[b] for b in other])[0, 1]
        assert abs(correlation) < 0.2


def test_the_holdout_is_the_same_slice_in_both_formats(both_formats):
    directory, manifest = both_formats
    for holdout in ("only", "exclude"):
        options = InputOptions(batch_size=128, training=False, drop_remainder=False, holdout_fraction=0.2,
                               holdout=holdout)
        assert sorted(bids(block_dataset(directory, manifest, "train", options))) == sorted(
            bids(example_dataset(directory, manifest, "train", options)))


def test_cache_follows_the_budget_and_a_cached_run_reads_the_same_examples(both_formats):
    directory, manifest = both_formats
    size = split_bytes(manifest, "train")
    assert size == 64 * BLOCK * manifest.block_layout.row_bytes
    assert cache_plan(manifest, "train", "auto", size).cache
    assert not cache_plan(manifest, "train", "auto", size - 1).cache
    assert cache_plan(manifest, "train", "memory", 0).bytes == size
    assert not cache_plan(manifest, "train", "none", 10 * size).cache
    options = InputOptions(batch_size=50, training=True, seed=4, shuffle_buffer=10, repeat=True, cache=True)
    epochs = bids(make_dataset(directory, manifest, "train", options).take(2 * TRAIN // 50))
    assert sorted(epochs[:TRAIN]) == sorted(epochs[TRAIN:]) and epochs[:TRAIN] != epochs[TRAIN:]


@pytest.mark.parametrize(("batch", "holdout"), [(64, 0.0), (64, 0.3), (1536, 0.0)])
def test_a_cached_training_read_is_each_epochs_seeded_order_cut_into_batches(both_formats, batch, holdout):
    """The cached read cuts an epoch's batches in one gather (`stream_batches`); it must yield the stream the
    module doc defines: epoch e's kept rows (file order) permuted by the stateless shuffle of (seed·1,000,003 + e,
    0), epochs one after another, cut into batches across epoch ends — batches smaller than, and larger than, an
    epoch's kept rows, with and without the calibration holdout."""
    directory, manifest = both_formats
    kept = InputOptions(batch_size=100, training=False, drop_remainder=False, holdout_fraction=holdout)
    in_file_order = np.array(bids(make_dataset(directory, manifest, "train", kept)))
    n = len(in_file_order)
    assert (n == TRAIN) == (holdout == 0)
    seed, epochs = 9, 4
    stream = np.concatenate([in_file_order[tf.random.experimental.stateless_shuffle(
        tf.range(n), seed=tf.constant([seed * 1_000_003 + epoch, 0], tf.int64)).numpy()] for epoch in range(epochs)])
    cached = InputOptions(batch_size=batch, training=True, seed=seed, repeat=True, cache=True, holdout_fraction=holdout)
    batches = epochs * n // batch
    assert bids(make_dataset(directory, manifest, "train", cached).take(batches)) == stream[:batches * batch].tolist()


def copy_with(both_formats, tmp_path, edit) -> tuple:
    directory, manifest = both_formats
    shutil.copytree(directory, tmp_path / "copy")
    path = tmp_path / "copy" / "train" / "blocks-00001-of-00002.blocks"
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(edit(data, manifest.block_layout.record_bytes)))
    return tmp_path / "copy", manifest, path


def test_a_truncated_block_file_is_an_error_naming_the_file_and_block(both_formats, tmp_path):
    directory, manifest, path = copy_with(both_formats, tmp_path, lambda data, size: data[:3 * size + 100])
    with pytest.raises(CorruptBlockFile, match=rf"{path}.* truncated.*block 3 is the first that is not whole"):
        make_dataset(directory, manifest, "train", InputOptions(batch_size=50, training=True))


def test_a_corrupt_block_is_an_error_naming_the_file_and_block(both_formats, tmp_path):
    def flip(data, size):
        data[5 * size + 40] ^= 0xFF
        return data

    directory, manifest, path = copy_with(both_formats, tmp_path, flip)
    data = make_dataset(directory, manifest, "train", InputOptions(batch_size=50, training=False))
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"corrupt block: file.*{path}.*block.*\[5\]"):
        for _ in data:
            pass


def test_batches_cut_across_windows_and_epochs_lose_no_example(both_formats):
    directory, manifest = both_formats
    windowed = InputOptions(batch_size=64, training=True, seed=5, shuffle_buffer=5 * BLOCK, repeat=True)
    data = make_dataset(directory, manifest, "train", windowed)  # windows of 5 blocks: 80 rows, not 64s
    assert data.element_spec[0]["ad_bid"].shape == (64,)
    stream = bids(data.take(2 * TRAIN // 64))  # 1,984 rows: the leftovers of each window open the next one
    assert len(set(stream[:TRAIN])) == TRAIN and len(set(stream[TRAIN:])) == len(stream) - TRAIN
    once = InputOptions(batch_size=64, training=True, seed=5, shuffle_buffer=TRAIN, drop_remainder=False)
    sizes = [len(features["ad_bid"]) for features, _ in make_dataset(directory, manifest, "train", once)]
    assert sizes == [64] * (TRAIN // 64) + [TRAIN % 64]
    assert sorted(bids(make_dataset(directory, manifest, "train", once))) == sorted(
        bids(example_dataset(directory, manifest, "train", InputOptions(batch_size=64, training=False,
                                                                         drop_remainder=False))))
