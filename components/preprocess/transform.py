"""The tf.Transform side: raw feature spec and `preprocessing_fn` built from the feature config.

Transformed-example contract (the trainer depends on it):
  categorical      → int64 [] ids in [0, table_rows)               (vocabulary ids, then OOV buckets; or hash;
                                                                     or learned_hash rows, learned_hash.py)
  categorical_list → int64 [max_length], 0 = padding, ids 1..table_rows−1
  numeric          → float32 [] normalized; `quantile_buckets` → int64 [] bucket id (a categorical input)
  time             → int64 [] hour of day (24 rows) or day of week (7 rows), from the impression time
  history          → its numeric columns (configs.features.HistoryFeature.numeric_inputs), each as numeric above
  label_<task>     → float32 [] 0/1
The graph reads raw features only, so a model wrapping it (`TFTransformOutput.transform_features_layer`)
serves raw log fields.

tf.Transform is fed Arrow record batches through TFXIO (`tensor_adapter_config`, `tft_input`): one list column per
raw feature (a scalar as a list of one), each with the tensor representation of its raw spec, so neither side
converts examples to or from Python dicts.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import tensorflow as tf
import tensorflow_transform as tft
from tensorflow_metadata.proto.v0 import schema_pb2
from tfx_bsl.tfxio.tensor_adapter import TensorAdapterConfig

from components.contracts.manifest import FeatureInfo
from components.preprocess.attribution import label_key
from components.preprocess.learned_hash import apply_learned_hashing
from components.preprocess.parse import MISSING_TOKEN, TIMESTAMP_MS
from components.preprocess.vocabulary import apply_vocabularies, vocabulary_sizes
from configs.features import model_inputs, table_rows

HOURS, WEEKDAYS = 24, 7
MS_PER_HOUR, MS_PER_DAY = 3_600_000, 86_400_000
EPOCH_WEEKDAY = 3  # 1970-01-01 was a Thursday (Monday = 0)
LOG_RATIO_FLOOR = 1e-12  # log_ratio of a value ≤ 0 (not a valid rate): log(1e-12 / reference), finite


def raw_feature_spec(features, tasks) -> dict:
    spec: dict = {TIMESTAMP_MS: tf.io.FixedLenFeature([], tf.int64)}
    for feature in model_inputs(features):
        if feature.kind == "categorical":
            spec[feature.name] = tf.io.FixedLenFeature([], tf.string)
        elif feature.kind == "categorical_list":
            spec[feature.name] = tf.io.VarLenFeature(tf.string)
        elif feature.kind == "numeric":
            spec[feature.name] = tf.io.FixedLenFeature([], tf.float32)
    for task in tasks:
        spec[label_key(task.name)] = tf.io.FixedLenFeature([], tf.float32)
    return spec


def write_raw_metadata(root: str, features, tasks) -> None:
    """The raw parse spec beside `transform_fn/` (`metadata/`, where `TFTransformOutput.raw_feature_spec` reads it):
    what the serving export parses requests with, read from the spec and not from the transform graph's signature,
    which a TF1 graph (tf.Transform's compatibility mode, `AnalyzeAndTransform`) does not carry as a function."""
    from tensorflow_transform.tf_metadata import dataset_metadata, metadata_io

    metadata_io.write_metadata(dataset_metadata.DatasetMetadata.from_feature_spec(raw_feature_spec(features, tasks)),
                               f"{root}/{tft.TFTransformOutput.RAW_METADATA_DIR}")


def _arrow_type(spec) -> pa.DataType:
    value = {tf.string: pa.large_binary(), tf.int64: pa.int64(), tf.float32: pa.float32()}[spec.dtype]
    return pa.large_list(value)


def tensor_adapter_config(features, tasks, passthrough: str | None = None) -> TensorAdapterConfig:
    """What tf.Transform needs to read `tft_input`'s record batches as the raw feature spec's tensors: a dense tensor
    per fixed-length feature, a sparse one per list; `passthrough`: an int64 column that is no tensor (tf.Transform
    hands it on, `tft_beam.Context(passthrough_keys=...)`)."""
    spec = raw_feature_spec(features, tasks)
    representations = {}
    for name, feature_spec in spec.items():
        representation = schema_pb2.TensorRepresentation()
        if isinstance(feature_spec, tf.io.VarLenFeature):
            representation.varlen_sparse_tensor.column_name = name
        else:
            representation.dense_tensor.column_name = name
        representations[name] = representation
    schema = pa.schema([(name, _arrow_type(feature_spec)) for name, feature_spec in spec.items()]
                       + ([(passthrough, pa.large_list(pa.int64()))] if passthrough else []))
    return TensorAdapterConfig(schema, representations)


def _one_each(values: pa.Array) -> pa.Array:
    """A list of one value per row."""
    return pa.LargeListArray.from_arrays(pa.array(np.arange(len(values) + 1, dtype=np.int64)), values)


def tft_input(batch: pa.RecordBatch, features, tasks, passthrough: str | None = None) -> pa.RecordBatch:
    """An example batch (`components.preprocess.example_batches`, history columns included) as tf.Transform's input
    (`tensor_adapter_config`): absent values filled (`__missing__`, a number's default), numbers as float32;
    `passthrough`, an int64 column of the batch, as a list of one per row."""
    spec = raw_feature_spec(features, tasks)
    defaults = {f.name: f.default for f in model_inputs(features) if f.kind == "numeric"}
    columns = []
    for name, feature_spec in spec.items():
        column = batch.column(name)
        if isinstance(feature_spec, tf.io.VarLenFeature):
            column = column.cast(pa.large_list(pa.large_binary()))
        elif feature_spec.dtype == tf.string:
            column = _one_each(column.fill_null(MISSING_TOKEN).cast(pa.large_binary()))
        elif feature_spec.dtype == tf.float32:
            column = _one_each(column.fill_null(defaults.get(name, 0.0)).cast(pa.float32()))
        else:
            column = _one_each(column.cast(pa.int64()))
        columns.append(column)
    if passthrough:
        columns.append(_one_each(batch.column(passthrough)))
    return pa.RecordBatch.from_arrays(columns, names=list(spec) + ([passthrough] if passthrough else []))


def _categorical_ids(inputs: dict, features, task_names: tuple[str, ...]) -> dict[str, tf.Tensor]:
    """Ids of every categorical and categorical_list feature; all vocabularies come from one analyzer, all
    learned hash mappings from another (learned from the labels of `task_names`)."""
    tokens = {}
    for feature in features:
        if feature.kind == "categorical":
            tokens[feature.name] = inputs[feature.name]
        elif feature.kind == "categorical_list":
            tokens[feature.name] = inputs[feature.name].values  # every id of the batch, row after row
    categorical = [f for f in features if f.name in tokens]
    ids = apply_vocabularies(tokens, [f for f in categorical if f.encoding == "vocabulary"])
    learned = [f for f in categorical if f.encoding == "learned_hash"]
    if learned:
        labels = tf.stack([tf.reshape(inputs[label_key(name)], [-1]) for name in task_names], axis=1)
        ids |= apply_learned_hashing(tokens, labels, learned)
    ids |= {
        f.name: tf.strings.to_hash_bucket_fast(tokens[f.name], f.hash_buckets)
        for f in categorical if f.encoding == "hash"
    }
    for feature in categorical:
        if feature.kind == "categorical_list":
            ids[feature.name] = _padded(inputs[feature.name], ids[feature.name] + 1, feature.max_length)  # 0 pads
    return ids


def _padded(lists: tf.SparseTensor, values: tf.Tensor, length: int) -> tf.Tensor:
    """int64 [batch, length]: each row's `values` (one per id of `lists`, in its order) in its first `length`
    positions, 0 after them, any past `length` cut (a few ops per feature: a ragged tensor's conversion builds
    dozens, and a 1,000-feature graph is traced and saved several times)."""
    kept = lists.indices[:, 1] < length
    dense = tf.scatter_nd(tf.boolean_mask(lists.indices, kept), tf.boolean_mask(values, kept),
                          tf.stack([lists.dense_shape[0], tf.constant(length, tf.int64)]))
    return tf.reshape(dense, [-1, length])


def _z_scores(values: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """Each column z-scored with the mean and variance of its own train values: one analyzer for all of them (the
    columns stacked, `elementwise`), not one per feature, whose graph and Beam stages grow with every feature."""
    if not values:
        return {}
    scaled = tft.scale_to_z_score(tf.stack(list(values.values()), axis=1), elementwise=True)
    return dict(zip(values, tf.unstack(scaled, num=len(values), axis=1)))


def _quantile_buckets(values: dict[str, tf.Tensor], buckets: int) -> dict[str, tf.Tensor]:
    """Each column's train-split quantile bucket id: one quantiles analyzer for every column with the same bucket
    count (stacked, `elementwise`), not one per feature (a history feature alone brings 4 columns per window)."""
    if len(values) == 1:
        name, value = next(iter(values.items()))
        return {name: tft.bucketize(value, buckets)}
    ids = tft.bucketize(tf.stack(list(values.values()), axis=1), buckets, elementwise=True)
    return dict(zip(values, tf.unstack(ids, num=len(values), axis=1)))


def build_preprocessing_fn(features, tasks):
    features, task_names = tuple(model_inputs(features)), tuple(t.name for t in tasks)

    def preprocessing_fn(inputs):
        ids = _categorical_ids(inputs, features, task_names)
        outputs = {}
        z_scored = {}  # z-scored features: their (log1p'd) values, scaled together below
        bucketed: dict[int, dict[str, tf.Tensor]] = {}  # quantile_buckets features by bucket count, bucketized below
        for feature in features:
            if feature.name in ids:
                outputs[feature.name] = ids[feature.name]
            elif feature.kind == "numeric":
                value = inputs[feature.name]
                if feature.normalization == "quantile_buckets":
                    bucketed.setdefault(feature.buckets, {})[feature.name] = value
                elif feature.normalization == "zscore":
                    z_scored[feature.name] = value
                elif feature.normalization == "log_ratio":
                    outputs[feature.name] = tf.math.log(tf.maximum(value, LOG_RATIO_FLOOR) / feature.reference)
                else:
                    logged = tf.math.log1p(tf.maximum(value, 0.0))
                    if feature.normalization == "log1p_zscore":
                        z_scored[feature.name] = logged
                    else:
                        outputs[feature.name] = logged
            else:
                timestamp = inputs[TIMESTAMP_MS]
                if feature.part == "hour_of_day":
                    outputs[feature.name] = tf.math.floormod(tf.math.floordiv(timestamp, MS_PER_HOUR), HOURS)
                else:
                    days = tf.math.floordiv(timestamp, MS_PER_DAY)
                    outputs[feature.name] = tf.math.floormod(days + EPOCH_WEEKDAY, WEEKDAYS)
        outputs |= _z_scores(z_scored)
        for buckets, values in bucketed.items():
            outputs |= _quantile_buckets(values, buckets)
        for name in task_names:
            outputs[label_key(name)] = tf.identity(inputs[label_key(name)])
        return outputs

    return preprocessing_fn


def feature_infos(features, tft_output: tft.TFTransformOutput, missing_rates: dict[str, float]) -> list[FeatureInfo]:
    """The manifest's feature list: shapes and table sizes read from the transform output."""
    spec = tft_output.transformed_feature_spec()
    vocabularies = vocabulary_sizes(tft_output)
    infos = []
    for feature in model_inputs(features):
        out = spec[feature.name]
        length = int(out.shape[0]) if out.shape else 1
        dtype = "int64" if out.dtype == tf.int64 else "float32"
        size = table_rows(feature, vocabularies.get(feature.name))
        kind, combiner = "categorical", None
        if feature.kind == "categorical_list":
            kind, combiner = "categorical_list", feature.combiner
        elif size is None:  # a plain number
            kind = "numeric"
        infos.append(FeatureInfo(
            name=feature.name, kind=kind, dtype=dtype, length=length, table_rows=size, combiner=combiner,
            missing_rate=missing_rates.get(feature.name),
        ))
    return infos

