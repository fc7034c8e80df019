"""The learned_hash encoding: frequent ids get their own rows, tail ids of similar label rate share rows, and
the transform graph (what serving runs) applies the mapping the analyzer learned."""

from __future__ import annotations

import tempfile
from types import SimpleNamespace

import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from components.preprocess.learned_hash import (
    LearnedHashSpec,
    apply_learned_hashing,
    feature_mapping,
    learn_mapping,
)


def test_frequent_ids_get_their_own_rows_in_frequency_order():
    history = [(b"a", 50, (1,)), (b"b", 40, (0,)), (b"c", 30, (3,)), (b"d", 2, (0,)), (b"e", 1, (1,))]
    mapping = learn_mapping(history, LearnedHashSpec("ad", rows=4, dedicated_rows=2))
    assert mapping.rows[b"a"] == 0 and mapping.rows[b"b"] == 1
    assert {mapping.rows[t] for t in (b"c", b"d", b"e")} <= {2, 3}
    assert 2 <= mapping.unseen_row <= 3


def test_tail_ids_of_similar_label_rate_collide():
    rng = np.random.default_rng(0)
    # 200 tail ids: half convert at 20%, half at 0.5%; each seen 100-150 times (10-15 expected positives)
    history, rates = [], {}
    for i in range(200):
        rate = 0.2 if i % 2 else 0.005
        count = int(rng.integers(100, 150))
        token = f"id{i}".encode()
        history.append((token, count, (int(rng.binomial(count, rate)),)))
        rates[token] = rate
    mapping = learn_mapping(history + [(b"once", 1, (0,))], LearnedHashSpec("ad", rows=4, dedicated_rows=0))
    # an unseen id goes to the row of an id seen once
    assert mapping.rows.pop(b"once") == mapping.unseen_row
    by_row: dict[int, list[float]] = {}
    for token, row in mapping.rows.items():
        by_row.setdefault(row, []).append(rates[token])
    assert sorted(by_row) == [0, 1, 2, 3]
    purity = np.mean([max(np.mean(np.array(r) == 0.2), np.mean(np.array(r) == 0.005)) for r in by_row.values()])
    assert purity > 0.9  # random hashing would give about 0.5
    # each shared row gets about a quarter of the tail's accesses
    accesses = {row: 0 for row in by_row}
    for token, count, _ in history:
        accesses[mapping.rows[token]] += count
    assert max(accesses.values()) < 1.3 * sum(accesses.values()) / 4


def test_ids_with_too_little_history_are_grouped_by_frequency_not_by_their_labels():
    # 400 ids seen 1-3 times at a 1% rate: a conversion among them is luck, so it must not decide the group
    history = [(f"id{i}".encode(), 1 + i % 3, (1 if i % 50 == 0 else 0,)) for i in range(400)]
    mapping = learn_mapping(history, LearnedHashSpec("ad", rows=8, dedicated_rows=0))
    converted = {mapping.rows[f"id{i}".encode()] for i in range(0, 400, 50)}
    assert len(converted) > 1  # the lucky ids are not gathered in one row
    by_count = {}
    for token, count, _ in history:
        by_count.setdefault(count, set()).add(mapping.rows[token])
    assert max(by_count[1]) <= min(by_count[3])  # rarer ids in the first rows, next to the unseen ones
    assert mapping.unseen_row == 0


def test_several_tasks_are_reduced_to_one_score():
    history = [(f"id{i}".encode(), 100, (30 if i < 10 else 1, 20 if i < 10 else 0)) for i in range(20)]
    mapping = learn_mapping(history, LearnedHashSpec("ad", rows=3, dedicated_rows=1))
    tail_rows = {token: row for token, row in mapping.rows.items() if row >= 1}
    high = {tail_rows[f"id{i}".encode()] for i in range(10) if f"id{i}".encode() in tail_rows}
    low = {tail_rows[f"id{i}".encode()] for i in range(10, 20) if f"id{i}".encode() in tail_rows}
    assert high.isdisjoint(low)


def test_unmappable_tokens_and_an_empty_history_use_the_unseen_row():
    mapping = learn_mapping([(b"", 5, (1,)), (b"a\tb", 3, (0,))], LearnedHashSpec("ad", rows=4, dedicated_rows=2))
    assert mapping.rows == {} and mapping.unseen_row == 2


FEATURES = (SimpleNamespace(name="ad", hash_buckets=4, dedicated_rows=1),
            SimpleNamespace(name="site", hash_buckets=3, dedicated_rows=None))
SPEC = {"ad": tf.io.FixedLenFeature([], tf.string), "site": tf.io.FixedLenFeature([], tf.string),
        "label_click": tf.io.FixedLenFeature([], tf.float32)}


def train_rows():
    rng = np.random.default_rng(1)
    rows = []
    for i in range(400):
        ad = "top" if i % 4 == 0 else f"ad{rng.integers(0, 40)}"
        rate = 0.05 if ad == "top" else (0.4 if int(ad[2:] if ad != "top" else 0) % 2 else 0.01)
        rows.append({"ad": ad, "site": f"s{i % 5}", "label_click": float(rng.random() < rate)})
    return rows


def preprocessing_fn(inputs):
    tokens = {"ad": inputs["ad"], "site": inputs["site"]}
    return apply_learned_hashing(tokens, tf.reshape(inputs["label_click"], [-1, 1]), FEATURES)


def test_the_transform_graph_applies_the_learned_mapping():
    train = train_rows()
    serve = train[:50] + [{"ad": "never-seen", "site": "s9", "label_click": 0.0},
                          {"ad": "", "site": "", "label_click": 0.0}]
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(SPEC))
    temp = tempfile.mkdtemp(prefix="learned-hash-test-")
    with tft_beam.Context(temp_dir=temp, force_tf_compat_v1=False):
        transform_fn = (train, metadata) | tft_beam.AnalyzeDataset(preprocessing_fn)
        transformed, _ = ((serve, metadata), transform_fn) | tft_beam.TransformDataset()
        _ = transform_fn | tft_beam.WriteTransformFn(temp)
    output = tft.TFTransformOutput(temp)
    ad, site = feature_mapping(output, "ad"), feature_mapping(output, "site")
    assert ad.rows[b"top"] == 0  # the most frequent ad has the one dedicated row
    assert set(ad.rows.values()) == {0, 1, 2, 3} and set(site.rows.values()) <= {0, 1, 2}
    for row, example in zip(transformed, serve):
        want_ad = ad.rows.get(example["ad"].encode(), ad.unseen_row)
        want_site = site.rows.get(example["site"].encode(), site.unseen_row)
        assert (int(row["ad"]), int(row["site"])) == (want_ad, want_site), example
    # the serving layer (what the exported model wraps) maps raw ids the same way, labels absent
    layer = output.transform_features_layer()
    served = layer({"ad": tf.constant(["top", "never-seen"]), "site": tf.constant(["s1", "s9"]),
                    "label_click": tf.zeros([2])})
    assert served["ad"].numpy().tolist() == [0, ad.unseen_row]
