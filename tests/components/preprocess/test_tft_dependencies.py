"""`tft_dependencies.dependent_inputs` gives what tf.Transform's own `get_dependent_inputs` gives, and is the one in
use with the locked tf.Transform. (On a graph tf.Transform wrote: test_preprocess_tiny_log.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tensorflow as tf
import tensorflow_transform as tft
from tensorflow_transform import graph_tools
from tensorflow_transform.saved import saved_transform_io_v2

from components.preprocess import stages  # noqa: F401 (installs dependent_inputs, as the step does)
from components.preprocess.tft_dependencies import (
    _TFT_OWN,
    _TFT_OWN_OUTPUT_SOURCES,
    CHECKED_VERSION,
    dependent_inputs,
    output_sources,
)

REPO = Path(__file__).resolve().parents[3]


def _graph():
    """A TF1 graph with a dense, a sparse and a ragged string input, an unused input, and outputs that need some."""
    graph = tf.Graph()
    with graph.as_default():
        inputs = {
            "dense": tf.compat.v1.placeholder(tf.string, [None], name="dense"),
            "sparse": tf.compat.v1.sparse_placeholder(tf.string, [None, None], name="sparse"),
            "ragged": tf.RaggedTensor.from_row_splits(tf.compat.v1.placeholder(tf.string, [None], name="values"),
                                                      tf.compat.v1.placeholder(tf.int64, [None], name="splits")),
            "unused": tf.compat.v1.placeholder(tf.float32, [None], name="unused"),
        }
        outputs = {
            "dense_ids": tf.strings.to_hash_bucket_fast(inputs["dense"], 10),
            "sparse_ids": tf.sparse.SparseTensor(inputs["sparse"].indices,
                                                 tf.strings.to_hash_bucket_fast(inputs["sparse"].values, 10),
                                                 inputs["sparse"].dense_shape),
            "ragged_ids": tf.ragged.map_flat_values(tf.strings.to_hash_bucket_fast, inputs["ragged"], 10),
            "constant": tf.constant([1.0]),
        }
    return graph, inputs, outputs


@pytest.mark.parametrize("wanted", [["dense_ids", "sparse_ids", "ragged_ids", "constant"], ["sparse_ids"],
                                    ["ragged_ids", "dense_ids"], ["constant"]])
def test_the_same_inputs_as_tf_transform_in_the_same_order(wanted):
    graph, inputs, outputs = _graph()
    fetches = [outputs[name] for name in wanted]
    ours, theirs = dependent_inputs(graph, inputs, fetches), _TFT_OWN(graph, inputs, fetches)
    assert list(ours) == list(theirs)
    assert all(ours[name] is theirs[name] for name in ours)
    expected = {"dense_ids": "dense", "sparse_ids": "sparse", "ragged_ids": "ragged"}
    assert sorted(ours) == sorted(expected[name] for name in wanted if name in expected)
    assert dependent_inputs(graph, inputs, {name: outputs[name] for name in wanted}) == ours  # a dict of outputs


def test_an_output_on_a_placeholder_outside_the_inputs_fails_as_tf_transform_says():
    graph, inputs, outputs = _graph()
    with graph.as_default():
        stray = tf.compat.v1.placeholder(tf.string, [None], name="stray")
        fetches = [outputs["dense_ids"], tf.strings.to_hash_bucket_fast(stray, 10)]
    with pytest.raises(ValueError) as ours:
        dependent_inputs(graph, inputs, fetches)
    with pytest.raises(ValueError) as theirs:
        _TFT_OWN(graph, inputs, fetches)
    assert "depended on a placeholder" in str(ours.value)
    assert str(ours.value) == str(theirs.value)


def test_in_use_with_the_locked_tf_transform():
    """An upgrade of tf.Transform fails here until `dependent_inputs` is checked against its `get_dependent_inputs`
    again and `CHECKED_VERSION` moved."""
    locked = re.search(r"^tensorflow-transform==(\S+)$", (REPO / "requirements.lock").read_text(), re.MULTILINE)
    assert locked and locked.group(1) == CHECKED_VERSION == tft.__version__
    assert saved_transform_io_v2._get_output_to_inputs_map is output_sources
    assert graph_tools.get_dependent_inputs is dependent_inputs


def test_each_outputs_sources_are_tf_transforms_found_in_one_pass():
    graph, inputs, outputs = _graph()
    with graph.as_default():
        shared = tf.strings.join([inputs["dense"], inputs["dense"]])  # an op several outputs share
        outputs = dict(outputs, shared_a=tf.strings.to_hash_bucket_fast(shared, 10),
                       shared_b=tf.strings.length(shared),
                       both=tf.strings.to_hash_bucket_fast(tf.strings.join([shared, inputs["ragged"].flat_values]), 5))
        ours, theirs = output_sources(outputs), _TFT_OWN_OUTPUT_SOURCES(outputs)
    assert list(ours) == list(theirs) == list(outputs)
    for name in outputs:
        assert {id(t) for t in ours[name]} == {id(t) for t in theirs[name]}, name
        assert type(ours[name]) is type(theirs[name])
    assert {t.op.name for t in ours["both"]} == {"dense", "values"}
    assert not ours["constant"]
    assert {t.op.name for t in ours["sparse_ids"]} >= {"sparse/indices", "sparse/values"}


def test_a_graph_with_a_cycle_gets_tf_transforms_own_sources(monkeypatch):
    from tensorflow.python.ops import control_flow_util

    monkeypatch.setattr(control_flow_util, "ENABLE_CONTROL_FLOW_V2", False)  # TF1 loops: NextIteration → Merge
    graph = tf.Graph()
    with graph.as_default():
        start = tf.compat.v1.placeholder(tf.int32, [], name="start")
        loop = tf.compat.v1.while_loop(lambda i: i < 10, lambda i: i + 1, [start])
        outputs = {"looped": loop, "plain": tf.strings.length(tf.compat.v1.placeholder(tf.string, [None], name="s"))}
        assert any(op.type == "NextIteration" for op in graph.get_operations())
        ours, theirs = output_sources(outputs), _TFT_OWN_OUTPUT_SOURCES(outputs)
    assert {name: {id(t) for t in found} for name, found in ours.items()} == \
        {name: {id(t) for t in found} for name, found in theirs.items()}
    assert {t.op.name for t in ours["looped"]} == {"start"}
