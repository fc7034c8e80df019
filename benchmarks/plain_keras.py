"""The straightforward Keras DCN-v2 every trainer benchmark compares adrank against.

One `keras.layers.Embedding` per categorical feature (Keras defaults: uniform init, dense updates), raw numeric
inputs, `cross_layers` of x_{l+1} = x_0 ⊙ W(x_l) + x_l (W low-rank U·V^T when `projection_dim` is set), a ReLU
MLP, one sigmoid head per task, compiled with default Adam (`learning_rate`) and binary cross-entropy.
"""

from __future__ import annotations

import keras


def plain_keras_dcn(
    manifest,
    embedding_dim: int,
    cross_layers: int = 2,
    deep_layers=(64, 64),
    projection_dim: int | None = None,
    learning_rate: float = 1e-3,
) -> keras.Model:
    inputs, parts = {}, []
    for feature in manifest.features:
        if feature.kind == "numeric":
            inputs[feature.name] = keras.Input((), name=feature.name, dtype="float32")
            parts.append(keras.layers.Reshape((1,))(inputs[feature.name]))
            continue
        shape = (feature.length,) if feature.kind == "categorical_list" else ()
        inputs[feature.name] = keras.Input(shape, name=feature.name, dtype="int64")
        vectors = keras.layers.Embedding(feature.table_rows, embedding_dim)(inputs[feature.name])
        if feature.kind == "categorical_list":
            vectors = keras.layers.GlobalAveragePooling1D()(vectors)
        parts.append(vectors)
    return _compiled(inputs, keras.layers.Concatenate()(parts), manifest.tasks, cross_layers, deep_layers,
                     projection_dim, learning_rate)


def dcn_body_only(
    x0_width: int,
    tasks: list[str],
    cross_layers: int = 2,
    deep_layers=(64, 64),
    projection_dim: int | None = None,
    learning_rate: float = 1e-3,
) -> keras.Model:
    """The same DCN body fed a ready x_0 ({"x0": [batch, x0_width]}): no embeddings at all. Its step time is
    the part every implementation of the embeddings shares, so keras / body bounds what any can gain."""
    inputs = {"x0": keras.Input((x0_width,), name="x0", dtype="float32")}
    return _compiled(inputs, inputs["x0"], tasks, cross_layers, deep_layers, projection_dim, learning_rate)


def _compiled(inputs, x0, tasks, cross_layers, deep_layers, projection_dim, learning_rate) -> keras.Model:
    x = x0
    for _ in range(cross_layers):
        projected = x if projection_dim is None else keras.layers.Dense(projection_dim, use_bias=False)(x)
        x = keras.layers.Add()([keras.layers.Multiply()([x0, keras.layers.Dense(x0.shape[-1])(projected)]), x])
    for units in deep_layers:
        x = keras.layers.Dense(units, activation="relu")(x)
    outputs = {task: keras.layers.Dense(1, activation="sigmoid", name=task)(x) for task in tasks}
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss={task: keras.losses.BinaryCrossentropy() for task in tasks},
    )
    return model


def fit_rate(examples: str, epochs: int, batch: int, embedding_dim: int, cross_layers: int = 2,
             deep_layers=(64, 64), learning_rate: float = 1e-3) -> float:
    """Examples/s of the plain model fitted on the train split of `examples` (numpy arrays in memory, `fit` at
    `batch`, Keras's global precision policy as set): the median epoch after the first (which traces and compiles)."""
    import time

    import numpy as np

    from components.contracts.manifest import Manifest
    from components.train.jax_lane.block_reader import BlockSplit
    from components.train.packed_batch import PackedLayout, label_columns
    from components.train.run_clock import examples_rate

    manifest = Manifest.read(examples)
    ints, floats = BlockSplit(examples, manifest, "train").all_rows()
    layout = PackedLayout.from_manifest(manifest)
    features = {name: ints[:, column] for name, column in layout.int64.scalars}
    features |= {name: ints[:, start:start + length] for name, start, length in layout.int64.lists}
    features |= {name: floats[:, column] for name, column in layout.float32.scalars}
    labels = {task: (floats if dtype == "float32" else ints)[:, column:column + 1].astype("float32")
              for task, (dtype, column) in label_columns(manifest.block_layout, manifest.tasks).items()}
    model = plain_keras_dcn(manifest, embedding_dim, cross_layers, deep_layers, learning_rate=learning_rate)
    seconds: list[float] = []

    class EpochTimes(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.started = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seconds.append(time.perf_counter() - self.started)

    model.fit(features, labels, batch_size=batch, epochs=max(2, epochs), verbose=0, shuffle=True,
              callbacks=[EpochTimes()])
    return examples_rate(len(ints) // batch, batch, float(np.median(seconds[1:]))) or 0.0
