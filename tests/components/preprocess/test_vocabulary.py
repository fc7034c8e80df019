"""`apply_vocabularies` (one analyzer, one table) gives exactly the ids of one `tft.compute_and_apply_vocabulary`
per feature: ordering and ties, top_k, frequency_threshold, several OOV buckets, lists, empty and newline
tokens, and a feature whose vocabulary is empty."""

from __future__ import annotations

import tempfile
from types import SimpleNamespace

import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from components.preprocess.vocabulary import apply_vocabularies, feature_vocabulary, vocabulary_sizes

FEATURES = (
    SimpleNamespace(name="ad", top_k=None, frequency_threshold=1, oov_buckets=1),
    SimpleNamespace(name="country", top_k=2, frequency_threshold=1, oov_buckets=3),
    SimpleNamespace(name="device", top_k=None, frequency_threshold=2, oov_buckets=2),
    SimpleNamespace(name="tags", top_k=None, frequency_threshold=1, oov_buckets=2),  # a list
    SimpleNamespace(name="rare", top_k=None, frequency_threshold=5, oov_buckets=1),  # empty vocabulary
)
SPEC = {
    "ad": tf.io.FixedLenFeature([], tf.string), "country": tf.io.FixedLenFeature([], tf.string),
    "device": tf.io.FixedLenFeature([], tf.string), "tags": tf.io.VarLenFeature(tf.string),
    "rare": tf.io.FixedLenFeature([], tf.string),
}
TRAIN = [
    {"ad": "a1", "country": "de", "device": "ios", "tags": ["x", "y"], "rare": "r1"},
    {"ad": "a2", "country": "fr", "device": "ios", "tags": ["y"], "rare": "r2"},
    {"ad": "a1", "country": "de", "device": "web", "tags": [], "rare": "r1"},
    {"ad": "a3", "country": "us", "device": "and", "tags": ["z", "y", "z"], "rare": "r3"},
    {"ad": "a\nb", "country": "fr", "device": "and", "tags": [""], "rare": "r1"},
]
SERVE = TRAIN + [
    {"ad": "a9", "country": "it", "device": "win", "tags": ["q", "x"], "rare": "r9"},
    {"ad": "", "country": "us", "device": "web", "tags": ["y"], "rare": ""},
]


def _tokens(inputs):
    return {f.name: (tf.RaggedTensor.from_sparse(inputs[f.name]).flat_values if f.name == "tags" else inputs[f.name])
            for f in FEATURES}


def _batched(inputs, ids):
    """The list's flat ids back into rows, padded with -7 to length 3 (outputs need a batch dimension)."""
    rows = tf.RaggedTensor.from_sparse(inputs["tags"]).with_flat_values(ids["tags"])
    return ids | {"tags": rows.to_tensor(default_value=-7, shape=[None, 3])}


def one_analyzer_per_feature(inputs):
    return _batched(inputs, {
        f.name: tft.compute_and_apply_vocabulary(
            tokens, top_k=f.top_k, frequency_threshold=f.frequency_threshold if f.frequency_threshold > 1 else None,
            num_oov_buckets=f.oov_buckets, vocab_filename=f"vocab_{f.name}",
        )
        for f, tokens in zip(FEATURES, _tokens(inputs).values())
    })


def one_analyzer_for_all(inputs):
    return _batched(inputs, apply_vocabularies(_tokens(inputs), FEATURES))


def run(preprocessing_fn):
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(SPEC))
    temp = tempfile.mkdtemp(prefix="vocab-test-")
    with tft_beam.Context(temp_dir=temp, force_tf_compat_v1=False):
        transform_fn = (TRAIN, metadata) | tft_beam.AnalyzeDataset(preprocessing_fn)
        transformed, _ = ((SERVE, metadata), transform_fn) | tft_beam.TransformDataset()
        _ = transform_fn | tft_beam.WriteTransformFn(temp)
    return transformed, tft.TFTransformOutput(temp)


def test_ids_and_vocabularies_match_tf_transform():
    expected, expected_output = run(one_analyzer_per_feature)
    actual, actual_output = run(one_analyzer_for_all)

    for want, got in zip(expected, actual):
        for f in FEATURES:
            np.testing.assert_array_equal(np.asarray(got[f.name]), np.asarray(want[f.name]), err_msg=f.name)
    sizes = vocabulary_sizes(actual_output)
    for f in FEATURES:
        assert feature_vocabulary(actual_output, f.name) == expected_output.vocabulary_by_name(f"vocab_{f.name}")
        assert sizes[f.name] == expected_output.vocabulary_size_by_name(f"vocab_{f.name}"), f.name
    assert feature_vocabulary(actual_output, "country") == [b"fr", b"de"]  # top 2; the (2, fr)/(2, de) tie
    assert sizes["rare"] == 1  # tf.Transform's dummy entry
