"""Repeated runs are independent: each run's seed decides its whole order over the train split (same seed, same
batches; another seed, other batches), and a shuffle buffer holding only a slice of the split is a warning, in the
train step's log (from the manifest) and at config load (synthetic sizes)."""

import logging
import warnings
from pathlib import Path

import numpy as np
import pytest
from fixture_data import write_transformed_examples

from components.train.input import InputOptions, make_dataset, shuffle_coverage_warning
from configs import load_config
from configs.shuffle_coverage import ShuffleCoverageWarning, expected_train_examples

REPO = Path(__file__).resolve().parents[3]
TRAIN = 2048
SHARDS = 4


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """(examples dir, manifest, written position of each train example keyed by its unique bid)."""
    directory = tmp_path_factory.mktemp("ordered")
    manifest = write_transformed_examples(directory, train=TRAIN, eval=256, shards=SHARDS, seed=5)
    # Shard s holds rows s, s + SHARDS, ...: read every shard in order to learn each bid's written position.
    import tensorflow as tf

    position = {}
    for shard in range(SHARDS):
        path = directory / "train" / f"part-{shard:05d}-of-{SHARDS:05d}.tfrecord.gz"
        for index, record in enumerate(tf.data.TFRecordDataset(str(path), compression_type="GZIP")):
            bid = tf.train.Example.FromString(record.numpy()).features.feature["ad_bid"].float_list.value[0]
            position[np.float32(bid).item()] = shard + index * SHARDS
    assert len(position) == TRAIN  # bids identify examples
    return directory, manifest, position


def batches(sharded, seed: int, buffer: int = TRAIN, count: int = 3) -> list[list[int]]:
    directory, manifest, position = sharded
    options = InputOptions(batch_size=64, training=True, seed=seed, shuffle_buffer=buffer, repeat=True)
    data = make_dataset(directory, manifest, "train", options)
    return [[position[np.float32(b).item()] for b in features["ad_bid"].numpy()] for features, _ in data.take(count)]


def test_same_seed_reads_the_same_batches_and_another_seed_other_ones(sharded):
    first = batches(sharded, seed=11)
    assert batches(sharded, seed=11) == first
    others = [batches(sharded, seed=seed) for seed in (12, 13)]
    for other in others:
        assert other[0] != first[0]
        assert len(set(other[0]) & set(first[0])) < 16  # not the same examples in another order
    assert others[0][0] != others[1][0]


def test_a_buffer_over_the_whole_split_draws_the_first_batch_from_all_of_it(sharded):
    first_batch = batches(sharded, seed=3, buffer=TRAIN, count=1)[0]
    assert max(first_batch) > 0.75 * TRAIN and min(first_batch) < 0.25 * TRAIN


def test_a_small_buffer_reads_the_written_order_and_the_train_log_says_so(sharded, caplog):
    with caplog.at_level(logging.WARNING, logger="components.train.input"):
        first_batch = batches(sharded, seed=3, buffer=64, count=1)[0]
    assert max(first_batch) < 0.25 * TRAIN  # only the heads of the shards: every run starts nearly alike
    assert "training.shuffle_buffer 64 holds 3% of the 2,048 train examples" in caplog.text
    _, manifest, _ = sharded
    assert shuffle_coverage_warning(manifest, "train", TRAIN) is None


def test_config_load_warns_when_the_buffer_is_below_the_synthetic_train_split():
    with pytest.warns(ShuffleCoverageWarning, match=r"training\.shuffle_buffer: 1,000 holds 2% of the ~45,000"):
        load_config(None, overrides=["training.shuffle_buffer=1000"])
    with pytest.warns(ShuffleCoverageWarning, match=r"targets\.0\.training\.shuffle_buffer: 500"):
        load_config(None, overrides=["targets.0.training={shuffle_buffer: 500}"])
    config = load_config(None, overrides=["logs.lookback_days=2"])
    assert expected_train_examples(config.logs, config.split) == 15000  # one train day within the lookback


@pytest.mark.parametrize("path", [None, "configs/examples/low_rate.yaml", "configs/examples/click_log.yaml"])
def test_shipped_configs_shuffle_their_whole_train_split(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShuffleCoverageWarning)
        config = load_config(REPO / path if path else None)
    if config.logs.source == "files":  # the size is known only after preprocessing: the buffer must be generous
        assert config.training.shuffle_buffer >= load_config(None).training.shuffle_buffer
