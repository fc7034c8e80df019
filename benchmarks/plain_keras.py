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
        vectors = keras.layers.Embedding(feature.vocabulary_size, embedding_dim)(inputs[feature.name])
        if feature.kind == "categorical_list":
            vectors = keras.layers.GlobalAveragePooling1D()(vectors)
        parts.append(vectors)
    x0 = keras.layers.Concatenate()(parts)
    x = x0
    for _ in range(cross_layers):
        projected = x if projection_dim is None else keras.layers.Dense(projection_dim, use_bias=False)(x)
        x = keras.layers.Add()([keras.layers.Multiply()([x0, keras.layers.Dense(x0.shape[-1])(projected)]), x])
    for units in deep_layers:
        x = keras.layers.Dense(units, activation="relu")(x)
    outputs = {task: keras.layers.Dense(1, activation="sigmoid", name=task)(x) for task in manifest.tasks}
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss={task: keras.losses.BinaryCrossentropy() for task in manifest.tasks},
    )
    return model
