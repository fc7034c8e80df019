"""Warm start: embedding rows follow their vocabulary token into today's ids, new tokens keep fresh rows, hashed
buckets keep their index, dense weights carry over where the shape is unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from components.contracts.manifest import FeatureInfo, Manifest, SplitInfo
from components.train.embedding import table_factory
from components.train.models import build_model
from components.train.warm_start import WarmStartUnavailable, apply_state, write_state
from configs.training import ModelConfig


def _manifest(ads: int, deep_input: int = 0) -> Manifest:
    features = [
        FeatureInfo(name="ad_id", kind="categorical", dtype="int64", table_rows=ads + 1),  # + 1 OOV bucket
        FeatureInfo(name="user_id", kind="categorical", dtype="int64", table_rows=16),   # hashed
        FeatureInfo(name="user_interests", kind="categorical_list", dtype="int64", length=3, table_rows=4 + 1,
                    combiner="mean"),
        FeatureInfo(name="ad_bid", kind="numeric", dtype="float32"),
    ] + [FeatureInfo(name=f"extra_{i}", kind="numeric", dtype="float32") for i in range(deep_input)]
    split = SplitInfo(examples=100, label_rates={"engagement": 0.1}, file_pattern="x")
    return Manifest(tasks=["engagement"], features=features, splits={"train": split, "eval": split})


def _model(manifest: Manifest, seed: int):
    import keras

    keras.utils.set_random_seed(seed)
    model = build_model(ModelConfig(kind="dcn", embedding_dim=4, cross_layers=1, deep_layers=[8]), manifest, 4,
                        table_factory())
    inputs = {f.name: np.zeros((4, f.length) if f.length > 1 else (4,), "int64" if f.dtype == "int64" else "float32")
              for f in manifest.features}
    model(inputs)
    return model


def _table(model, name: str) -> np.ndarray:
    for group, parts in model.embedding.table_variables():
        for table, offset in zip(group.tables, group.offsets):
            if table.name == name:
                return np.concatenate([p.numpy() for p in parts])[offset:offset + table.vocabulary_size]
    raise KeyError(name)


def _dense(model) -> list[np.ndarray]:
    tables = {id(v) for v in model.embedding.weights}
    return [v.numpy() for v in model.weights if id(v) not in tables]


def test_rows_follow_their_token_and_new_tokens_start_fresh(tmp_path):
    yesterday = {"ad_id": [b"a3", b"a1", b"a2"], "user_interests": [b"sports", b"news", b"cars", b"food"]}
    today = {"ad_id": [b"a1", b"a9", b"a3", b"a7"], "user_interests": [b"news", b"sports", b"games", b"cars"]}
    champion = _model(_manifest(ads=3), seed=1)
    write_state(champion, _manifest(ads=3), yesterday, tmp_path / "saved_model")

    model = _model(_manifest(ads=4), seed=2)
    fresh = {name: _table(model, name) for name in ("ad_id_table", "user_id_table", "user_interests_table")}
    summary = apply_state(model, _manifest(ads=4), today, str(tmp_path / "saved_model"))

    old_ads, new_ads = _table(champion, "ad_id_table"), _table(model, "ad_id_table")
    np.testing.assert_array_equal(new_ads[0], old_ads[1])   # a1: id 1 yesterday, id 0 today
    np.testing.assert_array_equal(new_ads[2], old_ads[0])   # a3
    np.testing.assert_array_equal(new_ads[1], fresh["ad_id_table"][1])  # a9 is new
    np.testing.assert_array_equal(new_ads[3], fresh["ad_id_table"][3])  # a7 is new
    np.testing.assert_array_equal(new_ads[4], old_ads[3])   # the one OOV bucket of one: the same hash bucket
    old_lists, new_lists = _table(champion, "user_interests_table"), _table(model, "user_interests_table")
    np.testing.assert_array_equal(new_lists[0], old_lists[0])  # padding row
    np.testing.assert_array_equal(new_lists[1], old_lists[2])  # news (1-based ids after the padding row)
    np.testing.assert_array_equal(new_lists[2], old_lists[1])  # sports
    np.testing.assert_array_equal(new_lists[3], fresh["user_interests_table"][3])  # games is new
    np.testing.assert_array_equal(new_lists[4], old_lists[3])  # cars
    np.testing.assert_array_equal(_table(model, "user_id_table"), _table(champion, "user_id_table"))  # hashed

    counts = {t.table: (t.copied, t.new) for t in summary.tables}
    assert counts == {"ad_id_table": (3, 2), "user_id_table": (16, 0), "user_interests_table": (4, 1)}
    assert summary.dense_skipped == [] and summary.dense_copied == len(_dense(model))
    for old, new in zip(_dense(champion), _dense(model)):
        np.testing.assert_array_equal(old, new)


def test_dense_weights_whose_shape_changed_start_fresh(tmp_path):
    champion = _model(_manifest(ads=3), seed=1)
    write_state(champion, _manifest(ads=3), {}, tmp_path / "saved_model")
    wider = _manifest(ads=3, deep_input=2)  # two more numeric inputs: x_0 is wider
    model = _model(wider, seed=2)
    before = _dense(model)
    summary = apply_state(model, wider, {}, str(tmp_path / "saved_model"))
    assert summary.dense_skipped and summary.dense_copied + len(summary.dense_skipped) == len(before)
    changed = [not np.array_equal(a, b) for a, b in zip(before, _dense(model))]
    assert sum(changed) <= summary.dense_copied  # only copied weights moved


def test_a_directory_without_state_is_refused(tmp_path):
    manifest = _manifest(ads=3)
    with pytest.raises(WarmStartUnavailable, match="no warm_start/ state"):
        apply_state(_model(manifest, seed=1), manifest, {}, str(tmp_path))
