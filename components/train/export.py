"""The serving SavedModel: raw tf.Examples → tf.Transform layer → model → P(label) per task.

Signatures:
- `serving_default`: `examples` (serialized raw tf.Examples, as logged) → {task: probability [batch]}
- `serving_transformed`: already-transformed feature tensors → {task: probability [batch]}

Both apply the run's calibration step (`components.train.posthoc_calibration`) when `training.calibration` fitted one,
so what serving returns is what the run's eval metrics measured.
A TPU- or parameter-server-trained model is exported through `servable_copy`: the same model rebuilt on this
host, with the tables read back through the embedding interface (from the TPU embedding layer, or from the ps
tasks holding their row-range shards), so every target exports the same CPU-servable SavedModel.
"""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from components.contracts.calibrator import Calibrator
from components.contracts.manifest import Manifest
from components.preprocess import tft_dependencies
from components.preprocess.vocabulary_file import transform_vocabularies
from components.train.embedding import FeatureEmbedding, TPUFeatureEmbedding
from components.train.input import feature_spec
from components.train.models import DCN, PLE, LogisticRegression
from components.train.run_paths import tft_output_dir
from components.train.trained_weights import dense_variables
from components.train.warm_start import write_state

# loading the transform graph as a Keras layer: each output's graph inputs found in one pass (tft_dependencies)
tft_dependencies.install()


def raw_serving_spec(raw_spec: dict, tasks: list[str]) -> dict:
    """The raw feature spec without labels: serving requests carry no labels."""
    return {
        name: spec
        for name, spec in raw_spec.items()
        if not name.startswith("label") and name not in tasks
    }


def raw_feature_spec(output) -> dict:
    """The raw parse spec: from the raw metadata if written, else from the transform graph's inputs."""
    try:
        return output.raw_feature_spec()
    except OSError:
        pass
    loaded = tf.saved_model.load(output.transform_savedmodel_dir)
    function = loaded.transform_fn
    if hasattr(function, "concrete_functions"):
        function = function.concrete_functions[0]
    inputs = function.structured_input_signature[0][0]
    spec = {}
    for name, tensor_spec in inputs.items():
        if isinstance(tensor_spec, tf.SparseTensorSpec):
            spec[name] = tf.io.VarLenFeature(tensor_spec.dtype)
        else:
            spec[name] = tf.io.FixedLenFeature(tensor_spec.shape[1:], tensor_spec.dtype)
    return spec


class ServingModule(tf.Module):
    def __init__(self, model, manifest: Manifest, transform_fn_dir: str | None,
                 calibrators: dict[str, Calibrator] | None = None):
        super().__init__()
        self.model = model
        # every weight the signatures read, tracked by this module itself: Keras tracks a model built by calling it
        # once (not by `fit`) in ways TensorFlow's exporter does not follow into nested containers (PLE's experts)
        self.weights = [v.value if isinstance(v, keras.Variable) else v for v in model.weights]
        self.calibrators = dict(calibrators or {})
        self.tasks = list(manifest.tasks)
        self.feature_names = [f.name for f in manifest.features]
        transformed_spec = feature_spec(manifest, with_labels=False)
        self.transformed_signature = {
            name: tf.TensorSpec([None, *spec.shape], spec.dtype, name=name) for name, spec in transformed_spec.items()
        }
        self.tft_layer = None
        self.raw_spec = None
        if transform_fn_dir is not None:
            import tensorflow_transform as tft

            output = tft.TFTransformOutput(transform_fn_dir)
            self.tft_layer = output.transform_features_layer()
            self.raw_spec = raw_serving_spec(raw_feature_spec(output), self.tasks)
            self.label_inputs = [name for name in raw_feature_spec(output) if name not in self.raw_spec]

    def _predict(self, features):
        outputs = self.model({name: features[name] for name in self.feature_names}, training=False)
        probabilities = {task: tf.reshape(outputs[task], [-1]) for task in self.tasks}
        return {
            task: self.calibrators[task].apply_tensor(p) if task in self.calibrators else p
            for task, p in probabilities.items()
        }

    def signatures(self) -> dict:
        signatures = {
            "serving_transformed": tf.function(self._predict).get_concrete_function(self.transformed_signature)
        }
        tft_layer = self.tft_layer
        if tft_layer is not None:
            raw_spec = self.raw_spec

            @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
            def serve_raw(examples):
                raw = tf.io.parse_example(examples, raw_spec)
                # The transform graph passes labels through; serving requests have none, so feed zeros.
                for name in self.label_inputs:
                    raw[name] = tf.zeros_like(examples, dtype=tf.float32)
                transformed = tft_layer(raw)
                return self._predict(transformed)

            signatures["serving_default"] = serve_raw.get_concrete_function()
        else:
            signatures["serving_default"] = signatures["serving_transformed"]
        return signatures


def export_serving_model(model, manifest: Manifest, examples_dir: str | Path, export_dir: str | Path,
                         calibrators: dict[str, Calibrator] | None = None) -> Path:
    """Writes the SavedModel to `export_dir` and returns it."""
    module = ServingModule(model, manifest, tft_output_dir(examples_dir, manifest), calibrators)
    tf.saved_model.save(module, str(export_dir), signatures=module.signatures())
    return Path(export_dir)


# a JAX lane's tables → the TensorFlow implementation that concatenates the features in the same order, so the dense
# weights after the tables mean the same: sparse-row tables are stacked per group like `FeatureEmbedding`; keras-rs on
# SparseCore orders them as the configs, like `TPUFeatureEmbedding` (ordinary variables outside a TPU strategy)
SAVED_MODEL_DIR = "saved_model"
SERVING_TABLES = {"sparse_rows": FeatureEmbedding.kind, "sparsecore": TPUFeatureEmbedding.kind}


def write_serving_model(model, manifest: Manifest, examples_dir: str | Path, model_dir: str | Path,
                        model_uri: str | None, calibrators: dict[str, Calibrator] | None = None) -> str:
    """The run's serving model and its warm-start state under `<model_dir>/saved_model`; the URI a summary records
    (`<model_uri>/saved_model` when the step's output has one, else the local path). Both lanes export here."""
    export_dir = Path(model_dir) / SAVED_MODEL_DIR
    export_serving_model(model, manifest, examples_dir, export_dir, calibrators)
    write_state(model, manifest, transform_vocabularies(tft_output_dir(examples_dir, manifest)), export_dir)
    return str(export_dir) if model_uri is None else f"{model_uri.rstrip('/')}/{SAVED_MODEL_DIR}"


def servable_copy(model, strategy: tf.distribute.Strategy, manifest: Manifest):
    """`model` (trained under `strategy`, e.g. on a TPU) as the same model on the default device, in float32.

    The tables are read back with `model.embedding.table_values()` under `strategy` (on a TPU this gathers every
    SparseCore shard); the copy is `rebuilt_model` from the config and every other weight."""
    with strategy.scope():
        tables = model.embedding.table_values()
    dense = dense_variables(model)
    return rebuilt_model(type(model).__name__, model.get_config(), [v.path for v in dense],
                         [np.asarray(v.value if hasattr(v, "value") else v) for v in dense], tables, manifest)


def rebuilt_model(model_class: str, config: dict, dense_paths: list[str], dense_values: list[np.ndarray],
                  tables: dict[str, np.ndarray], manifest: Manifest):
    """A trained model rebuilt in this process, in float32, its tables ordinary variables on the default device
    whatever held them in training (the TPU embedding API, SparseCore, parameter servers, the JAX lane): the class
    from its name, built from `config` with this lane's implementation of the same concatenation order
    (`SERVING_TABLES`), every dense weight copied in order (paths and shapes checked), the tables assigned by name."""
    classes = {cls.__name__: cls for cls in (DCN, PLE, LogisticRegression)}
    if model_class not in classes:
        raise ValueError(f"unknown model class {model_class!r}; one of {sorted(classes)}")
    embedding = config["embedding"]
    kind = SERVING_TABLES.get(embedding["kind"], embedding["kind"])
    stacked = {"kind": kind, "config": {"feature_configs": embedding["config"]["feature_configs"],
                                        "name": embedding["config"].get("name", "embedding")}}
    saved_policy = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("float32")  # serving on CPU: no bfloat16 compute
    try:
        copy = classes[model_class].from_config({**config, "embedding": stacked, "dtype": "float32"})
        copy(example_batch(copy, manifest))
    finally:
        keras.mixed_precision.set_global_policy(saved_policy)
    rebuilt = dense_variables(copy)
    if [v.path for v in rebuilt] != list(dense_paths) or [tuple(v.shape) for v in rebuilt] != [
            tuple(np.shape(value)) for value in dense_values]:
        raise RuntimeError("the rebuilt model's weights do not line up with the trained model's: "
                           f"{[v.path for v in rebuilt]} vs {list(dense_paths)}")
    for variable, value in zip(rebuilt, dense_values):
        variable.assign(np.asarray(value, np.float32))
    copy.embedding.assign_tables(tables)
    return copy


def example_batch(model, manifest: Manifest) -> dict[str, tf.Tensor]:
    """Zeros in the shapes the model's embedding configs fix (TPU lookups are static): enough to build it."""
    configs = model.feature_configs
    batch = next(iter(configs.values())).input_shape[0]
    batch_spec = feature_spec(manifest, with_labels=False)
    return {name: tf.zeros([batch, *spec.shape], spec.dtype) for name, spec in batch_spec.items()}
