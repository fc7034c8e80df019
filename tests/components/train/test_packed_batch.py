"""The packed batch: the block reader hands the step two matrices, and the model's split of them gives back exactly
the features the per-feature reader gave (same values, same order, every example once, the partial last batch,
the holdout); the models train, evaluate and export from it, and serving keeps taking one tensor per feature."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from config_fixture import small_config
from fixture_data import write_transformed_examples

from components.contracts.manifest import Manifest
from components.evaluate import metrics as ranking_metrics
from components.train.embedding import table_factory
from components.train.input import InputOptions, make_dataset
from components.train.models import build_model
from components.train.packed_batch import PACKED_FLOAT32, PACKED_INT64, PackedLayout, is_packed
from components.train.training_run import train
from configs.training import ModelConfig

TRAIN, EVAL, BLOCK = 300, 70, 16


@pytest.fixture(scope="module")
def blocks_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("packed")
    manifest = write_transformed_examples(directory, train=TRAIN, eval=EVAL, tasks=("engagement", "conversion"),
                                          shards=2, seed=5, block_examples=BLOCK)
    return directory, manifest


def _as_numpy(batch):
    features, labels = batch
    return {k: v.numpy() for k, v in features.items()}, {k: v.numpy() for k, v in labels.items()}


def _both(directory, manifest, split, options):
    """The same batches read per feature and packed (the packed ones split by the model's layout)."""
    layout = PackedLayout.from_manifest(manifest)
    assert layout is not None
    plain = make_dataset(directory, manifest, split, options)
    packed = make_dataset(directory, manifest, split, InputOptions(**{**options.__dict__, "packed": True}))
    assert set(packed.element_spec[0]) == {PACKED_INT64, PACKED_FLOAT32}
    pairs = []
    for one, other in zip(plain, packed, strict=True):
        features, labels = _as_numpy(one)
        packed_features, packed_labels = other
        split_features = {k: v.numpy() for k, v in layout.split(packed_features).items()}
        pairs.append(((features, labels), (split_features, {k: v.numpy() for k, v in packed_labels.items()})))
    return pairs


def _assert_same(pairs):
    for (features, labels), (split_features, split_labels) in pairs:
        assert set(features) == set(split_features) and set(labels) == set(split_labels)
        for name in features:
            assert split_features[name].dtype == features[name].dtype
            np.testing.assert_array_equal(split_features[name], features[name], err_msg=name)
        for task in labels:
            np.testing.assert_array_equal(split_labels[task], labels[task], err_msg=task)


def test_the_split_packed_eval_batches_are_the_features_in_order_with_the_partial_last_batch(blocks_dir):
    directory, manifest = blocks_dir
    pairs = _both(directory, manifest, "eval", InputOptions(batch_size=32, training=False, drop_remainder=False))
    _assert_same(pairs)
    sizes = [len(labels["engagement"]) for _, (_, labels) in pairs]
    assert sizes == [32, 32, 6] and sum(sizes) == EVAL  # every example once, the last batch partial
    for _, (features, labels) in pairs:
        assert features["user_interests"].shape[1:] == (4,) and labels["conversion"].shape[1:] == (1,)


def test_the_split_packed_training_batches_follow_the_seed_and_the_holdout(blocks_dir):
    directory, manifest = blocks_dir
    options = InputOptions(batch_size=20, training=True, seed=11, shuffle_buffer=64, repeat=False,
                           drop_remainder=False, holdout_fraction=0.3)
    kept = {}
    for holdout in ("exclude", "only"):
        pairs = _both(directory, manifest, "train", InputOptions(**{**options.__dict__, "holdout": holdout}))
        _assert_same(pairs)
        kept[holdout] = [float(b) for _, (features, _) in pairs for b in features["ad_bid"]]
    # the two sides of the holdout: every train example once, on one side
    assert len(kept["exclude"]) + len(kept["only"]) == TRAIN and 0 < len(kept["only"]) < TRAIN / 2
    assert len(set(kept["exclude"] + kept["only"])) == TRAIN


@pytest.mark.parametrize("cache", [False, True])
def test_the_repeated_packed_training_batches_are_the_per_feature_ones_across_epochs(blocks_dir, cache):
    # the packed training read cuts labels from a run's stacked batches, the per-feature one maps each batch:
    # the same full batches, in the same order, across windows and epochs (300 rows: 12.5 batches of 24)
    directory, manifest = blocks_dir
    options = InputOptions(batch_size=24, training=True, seed=3, shuffle_buffer=64, repeat=True, cache=cache)
    pairs = []
    layout = PackedLayout.from_manifest(manifest)
    plain = make_dataset(directory, manifest, "train", options).take(40)
    packed = make_dataset(directory, manifest, "train", InputOptions(**{**options.__dict__, "packed": True})).take(40)
    for one, (packed_features, packed_labels) in zip(plain, packed, strict=True):
        pairs.append((_as_numpy(one), ({k: v.numpy() for k, v in layout.split(packed_features).items()},
                                       {k: v.numpy() for k, v in packed_labels.items()})))
    assert len(pairs) == 40  # 960 rows: into the fourth epoch
    _assert_same(pairs)


def test_the_packed_features_carry_only_the_two_static_matrices(blocks_dir):
    directory, manifest = blocks_dir
    data = make_dataset(directory, manifest, "train", InputOptions(batch_size=16, training=True, repeat=True,
                                                                   packed=True))
    ints, floats = data.element_spec[0][PACKED_INT64], data.element_spec[0][PACKED_FLOAT32]
    layout = manifest.block_layout
    assert ints.shape == (16, layout.width("int64")) and floats.shape == (16, layout.width("float32"))
    assert all(spec.shape == (16, 1) for spec in data.element_spec[1].values())


def test_the_layout_lists_no_label_and_survives_the_config(blocks_dir):
    _, manifest = blocks_dir
    layout = PackedLayout.from_manifest(manifest)
    names = [n for n, _ in layout.int64.scalars + layout.float32.scalars] + [
        n for n, _, _ in layout.int64.lists + layout.float32.lists]
    assert sorted(names) == sorted(f.name for f in manifest.features)
    assert PackedLayout.from_config(layout.to_config()) == layout
    per_example_only = manifest.model_copy(update={"block_layout": None})
    assert PackedLayout.from_manifest(per_example_only) is None


@pytest.mark.parametrize("kind", ["dcn", "ple", "linear"])
def test_every_model_predicts_the_same_from_a_packed_batch_and_from_features(blocks_dir, kind):
    directory, manifest = blocks_dir
    model = build_model(ModelConfig(kind=kind), manifest, per_replica_batch=32, make_tables=table_factory())
    options = InputOptions(batch_size=32, training=False, drop_remainder=False)
    features, _ = next(iter(make_dataset(directory, manifest, "eval", options)))
    packed, _ = next(iter(make_dataset(directory, manifest, "eval", InputOptions(**{**options.__dict__,
                                                                                   "packed": True}))))
    assert is_packed(packed) and not is_packed(features)
    expected = model(features)
    for task, probabilities in model(packed).items():
        np.testing.assert_array_equal(probabilities.numpy(), expected[task].numpy())
    clone = type(model).from_config(model.get_config())  # the serving copy's way: the layout is in the config
    clone(features)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(packed)["engagement"], expected["engagement"], rtol=1e-6)


def test_a_model_without_a_block_layout_refuses_a_packed_batch(blocks_dir):
    directory, manifest = blocks_dir
    model = build_model(ModelConfig(kind="dcn"), manifest.model_copy(update={"block_layout": None}), 32,
                        table_factory())
    packed, _ = next(iter(make_dataset(directory, manifest, "eval", InputOptions(32, training=False, packed=True))))
    with pytest.raises(ValueError, match="without a block layout"):
        model(packed)


def test_keras_fit_trains_from_packed_batches(blocks_dir):
    directory, manifest = blocks_dir
    model = build_model(ModelConfig(kind="dcn"), manifest, per_replica_batch=32, make_tables=table_factory())
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss={task: keras.losses.BinaryCrossentropy() for task in manifest.tasks})
    data = make_dataset(directory, manifest, "train", InputOptions(32, training=True, seed=1, repeat=True,
                                                                   packed=True))
    first, _ = next(iter(data))
    model(first)
    before = [w.copy() for w in model.get_weights()]
    history = model.fit(data, steps_per_epoch=4, epochs=1, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert all(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))  # every weight trained


@pytest.mark.slow
def test_a_run_trains_and_evaluates_packed_and_serves_one_tensor_per_feature(tmp_path):
    examples = tmp_path / "examples"
    write_transformed_examples(examples, train=256, eval=128, tasks=("engagement",), block_examples=64)
    manifest = Manifest.read(examples)
    config = small_config(epochs=1, global_batch_size=128, steps_per_execution=1)
    summary = train(config, "cpu", 0, str(examples), str(tmp_path / "model"))
    assert summary.input_format == "blocks" and summary.steps == 2
    loaded = tf.saved_model.load(str(tmp_path / "model" / "saved_model"))
    serve = loaded.signatures["serving_transformed"]
    served, labels = [], []
    for features, batch_labels in make_dataset(examples, manifest, "eval", InputOptions(64, training=False,
                                                                                        drop_remainder=False)):
        served.append(serve(**features)["engagement"].numpy())
        labels.append(batch_labels["engagement"].numpy().reshape(-1))
    # the run evaluated packed batches through the Keras model; serving, one tensor per feature, returns the same
    assert summary.metrics["engagement"].examples == 128
    served_logloss = ranking_metrics.logloss(np.concatenate(labels), np.concatenate(served))
    assert served_logloss == pytest.approx(summary.metrics["engagement"].logloss, rel=1e-5)
