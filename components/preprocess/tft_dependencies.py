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

The same holds where a transform graph is loaded in TF2 (the export's `transform_features_layer`): tf.Transform's
loader finds each output's placeholders by walking back from that output alone, so ops that outputs share are walked
once per output; `output_sources` finds each op's sources once for all outputs, and `install` puts it in place too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import tensorflow_transform as tft
from tensorflow.python.util import object_identity
from tensorflow_transform import analyzer_nodes, graph_tools, tf_utils
from tensorflow_transform.saved import saved_transform_io_v2

CHECKED_VERSION = "1.21.0"  # the tensorflow-transform of requirements*.lock
_TFT_OWN = graph_tools.get_dependent_inputs
_TFT_OWN_OUTPUT_SOURCES = saved_transform_io_v2._get_output_to_inputs_map


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


def output_sources(output_signature: Mapping[str, Any]) -> dict[str, Any]:
    """For each output of a loaded transform graph, the placeholders it depends on (control dependencies ignored):
    what `saved_transform_io_v2._get_output_to_inputs_map` returns, each op's sources found once for all outputs.

    tf.Transform 1.21 walks back from each output on its own (`graph_tools.retrieve_sources`), so ops that many
    outputs share are walked once per output: loading the transform graph of a 5,000-feature config as a Keras
    layer (`TFTransformOutput.transform_features_layer`, what the export wraps) spent 28–41 s of a 35–47 s load
    there; this takes 2.4 s on the same graph, with the same sources for every output (docs/input.md)."""
    found: dict[Any, frozenset] = {}  # op → refs of the placeholder tensors it depends on
    entered: set = set()

    def sources(sink: Any) -> frozenset:
        stack = [(sink, False)]
        while stack:
            op, inputs_done = stack.pop()
            if op in found:
                continue
            inputs = [tensor.op for tensor in op.inputs]
            if not inputs_done:
                if op in entered:  # a cycle (TF1 control flow): tf.Transform's own walk handles it
                    raise _Cycle
                entered.add(op)
                stack.append((op, True))
                stack.extend((source, False) for source in inputs if source not in found)
                continue
            own = {tensor.ref() for tensor in op.outputs} if op.type == "Placeholder" else set()
            parts = [found[source] for source in inputs]
            if not own and len(parts) == 1:
                found[op] = parts[0]
            else:
                found[op] = frozenset(own.union(*parts))
        return found[sink]

    result: dict[str, Any] = {}
    try:
        for name, output in output_signature.items():
            refs: set = set()
            for component in saved_transform_io_v2._get_component_tensors(output):
                refs |= sources(saved_transform_io_v2._as_operation(component))
            result[name] = object_identity.ObjectIdentitySet(ref.deref() for ref in refs)
    except _Cycle:
        return _TFT_OWN_OUTPUT_SOURCES(output_signature)
    return result


class _Cycle(Exception):
    """The graph has a cycle (TF1 control flow's NextIteration → Merge): not a DAG to memoize over."""


def install() -> bool:
    """Use `dependent_inputs` for tf.Transform's `get_dependent_inputs` (its `Transform` DoFn looks the function up
    on the module when it loads a graph) and `output_sources` for the loader's `_get_output_to_inputs_map` (looked
    up on its module when a transform graph is loaded in TF2), if tf.Transform is the checked version. Returns
    whether they are in place."""
    if tft.__version__ != CHECKED_VERSION:
        return False
    graph_tools.get_dependent_inputs = dependent_inputs
    saved_transform_io_v2._get_output_to_inputs_map = output_sources
    return True
