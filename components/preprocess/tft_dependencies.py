"""Which graph inputs a set of outputs depends on, in one pass: tf.Transform's own answer takes time quadratic in
the features.

Every process that applies a TF1 transform graph (tf.Transform's `Transform` DoFn, once per process: this one on
the DirectRunner, each worker's on Dataflow) first asks `tensorflow_transform.graph_tools.get_dependent_inputs`
which of the graph's inputs its outputs need, so that only those are fed. tf.Transform 1.21 answers one output at a
time, and for each output tests every input: outputs × inputs membership tests in Python. With 1,000 features that
is a million tests, 1.6–2.6 s of a 17–23 s step on 10^4 impressions (measured: `benchmarks/preprocess.py --grid
--sizes --widths 1000 --wide-sizes 10000`, docs/input.md); with 5,000 features, 25 times that.

An input is needed when some component of it is among the sources of some output, so the union of the outputs'
sources, taken first, gives the same inputs in one pass over them: `dependent_inputs` (same arguments, same
dict in the same order, the same errors for a placeholder or table the graph should not have). `install` puts it
in tf.Transform's place for the version it was checked against (the lock's); for any other version tf.Transform's
own function stays (slower, never wrong), and `tests/components/preprocess/test_tft_dependencies.py` fails on the
upgrade so that the function is checked again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import tensorflow_transform as tft
from tensorflow_transform import analyzer_nodes, graph_tools, tf_utils

CHECKED_VERSION = "1.21.0"  # the tensorflow-transform of requirements*.lock
_TFT_OWN = graph_tools.get_dependent_inputs


@graph_tools._reraise_unexpected_error  # tf.Transform's messages for an unexpected placeholder or table
def _sources(analyzer: Any, tensor_or_op: Any) -> set:
    sources: set = set()
    for component in graph_tools._decompose_tensor_or_op(tensor_or_op):
        sources.update(analyzer._graph_analyzer.analyze_tensor(component).dependent_sources)
    return sources


def dependent_inputs(graph: Any, input_tensors: Mapping[str, Any],
                     output_tensors: Sequence[Any] | Mapping[str, Any]) -> dict[str, Any]:
    """The entries of `input_tensors` that (transitively) produce `output_tensors`: what
    `graph_tools.get_dependent_inputs` returns, with each input tested once against all outputs' sources."""
    outputs = list(output_tensors.values()) if isinstance(output_tensors, Mapping) else list(output_tensors)
    # as tf.Transform does: replacement tensors count as not ready, which does not change what depends on what
    sinks = graph.get_collection(analyzer_nodes.TENSOR_REPLACEMENTS)
    analyzer = graph_tools._QuietInitializableGraphAnalyzer(graph, input_tensors,
                                                            [(sink.tensor, False) for sink in sinks])
    sources: set = set()
    for output in outputs:
        sources |= _sources(analyzer, output)
    return {name: tensor for name, tensor in input_tensors.items()
            if any(tf_utils.hashable_tensor_or_op(component) in sources
                   for component in graph_tools._decompose_tensor_or_op(tensor))}


def install() -> bool:
    """Use `dependent_inputs` for tf.Transform's `get_dependent_inputs` if tf.Transform is the checked version (its
    `Transform` DoFn looks the function up on the module when it loads a graph). Returns whether it is in place."""
    if tft.__version__ != CHECKED_VERSION:
        return False
    graph_tools.get_dependent_inputs = dependent_inputs
    return True
