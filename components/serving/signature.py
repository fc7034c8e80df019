"""What the serving signature expects of each instance, read from the SavedModel itself, and the check of a request
against it.

adrank's `serving_default` takes serialized raw tf.Examples and parses them with `tf.io.parse_example`; the parse
op in the signature's graph names every feature, its type, its shape and whether it has a default. A request is
checked against that before the model runs, so a wrong type is answered with the feature and the type it needs,
not with TensorFlow's `Graph execution error:`.
"""

from __future__ import annotations

from dataclasses import dataclass

# tf.Example value lists by the dtype the parse spec asks for.
LIST_OF_DTYPE = {"string": "bytes_list", "float32": "float_list", "int64": "int64_list"}
_PARSE_OPS = ("ParseExampleV2",)


@dataclass(frozen=True)
class FeatureExpectation:
    name: str
    dtype: str  # string | float32 | int64
    values: int | None  # values per example for a fixed-length feature; None: any number (sparse or ragged)
    required: bool  # a fixed-length feature without a default value

    def describe(self) -> str:
        count = "a list of" if self.values is None else ("1" if self.values == 1 else f"{self.values}")
        return f"{count} {self.dtype} ({LIST_OF_DTYPE[self.dtype]})"


class InstanceError(ValueError):
    """An instance does not fit the serving signature; the message names the instance, the feature and the type."""


def signature_expectations(signature) -> dict[str, FeatureExpectation]:
    """The features the signature's parse op reads (empty when the signature parses no tf.Example)."""
    import tensorflow as tf

    graph_def = signature.graph.as_graph_def()
    bodies = [list(graph_def.node)] + [list(function.node_def) for function in graph_def.library.function]
    for nodes in bodies:
        by_name = {node.name: node for node in nodes}
        for node in nodes:
            if node.op in _PARSE_OPS:
                return _expectations(node, by_name, tf)
    return {}


def _expectations(node, by_name: dict, tf) -> dict[str, FeatureExpectation]:
    def constant(input_name: str):
        const = by_name.get(input_name.split(":")[0])
        if const is None or const.op != "Const":
            return None
        return tf.make_ndarray(const.attr["value"].tensor)

    def names(input_name: str) -> list[str]:
        value = constant(input_name)
        return [] if value is None else [v.decode() for v in value.reshape(-1)]

    inputs = list(node.input)
    sparse_keys, dense_keys, ragged_keys = names(inputs[2]), names(inputs[3]), names(inputs[4])
    dense_types = [tf.dtypes.as_dtype(t).name for t in node.attr["Tdense"].list.type]
    dense_shapes = [[d.size for d in shape.dim] for shape in node.attr["dense_shapes"].list.shape]
    defaults = inputs[5:5 + len(dense_keys)]
    expectations = {}
    for index, name in enumerate(dense_keys):
        default = constant(defaults[index]) if index < len(defaults) else None
        values = 1
        for size in dense_shapes[index]:
            values *= max(size, 1)
        expectations[name] = FeatureExpectation(name, dense_types[index], values,
                                                required=default is not None and default.size == 0)
    for name, dtype in zip(sparse_keys, node.attr["sparse_types"].list.type):
        expectations[name] = FeatureExpectation(name, tf.dtypes.as_dtype(dtype).name, None, required=False)
    for name, dtype in zip(ragged_keys, node.attr["ragged_value_types"].list.type):
        expectations[name] = FeatureExpectation(name, tf.dtypes.as_dtype(dtype).name, None, required=False)
    return expectations


def check_instances(examples: list[bytes], expectations: dict[str, FeatureExpectation]) -> None:
    """Raise `InstanceError` for the first instance that is not a tf.Example or whose features do not fit."""
    if not expectations:
        return
    from google.protobuf.message import DecodeError
    from tensorflow.core.example.example_pb2 import Example

    for index, serialized in enumerate(examples):
        example = Example()
        try:
            example.ParseFromString(serialized)
        except DecodeError:
            raise InstanceError(f"instances[{index}]: not a serialized tf.Example") from None
        features = example.features.feature
        for name, expected in expectations.items():
            if name not in features:
                if expected.required:
                    raise InstanceError(f"instances[{index}]: feature '{name}' is missing; expected "
                                        f"{expected.describe()}")
                continue
            kind = features[name].WhichOneof("kind")
            if kind is None:
                if expected.required:
                    raise InstanceError(f"instances[{index}]: feature '{name}' has no values; expected "
                                        f"{expected.describe()}")
                continue
            if kind != LIST_OF_DTYPE[expected.dtype]:
                raise InstanceError(f"instances[{index}]: feature '{name}' is a {kind}; expected "
                                    f"{expected.describe()}")
            count = len(getattr(features[name], kind).value)
            if expected.values is not None and count != expected.values:
                raise InstanceError(f"instances[{index}]: feature '{name}' has {count} values; expected "
                                    f"{expected.describe()}")


def fitting_example(expectations: dict[str, FeatureExpectation], index: int = 0) -> bytes:
    """A serialized tf.Example that the signature takes: every feature it parses, with values of its type and count
    (a list feature gets two), varied by `index`. What a load test or a smoke check sends to a model whose raw
    features it does not know in advance."""
    from tensorflow.core.example import example_pb2, feature_pb2

    features = {}
    for name, expected in expectations.items():
        count = expected.values if expected.values is not None else 2
        if expected.dtype == "string":
            feature = feature_pb2.Feature(bytes_list=feature_pb2.BytesList(
                value=[f"{name}-{(index + k) % 7}".encode() for k in range(count)]))
        elif expected.dtype == "float32":
            feature = feature_pb2.Feature(float_list=feature_pb2.FloatList(
                value=[float((index + k) % 5) + 0.5 for k in range(count)]))
        else:
            feature = feature_pb2.Feature(int64_list=feature_pb2.Int64List(value=[(index + k) % 5 for k in range(count)]))
        features[name] = feature
    return example_pb2.Example(features=feature_pb2.Features(feature=features)).SerializeToString()
