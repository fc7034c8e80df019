"""A stack of ReLU dense layers: h_{k+1} = relu(W_k h_k + b_k)."""

from __future__ import annotations

from typing import Any

import keras


class MLP(keras.layers.Layer):
    def __init__(self, units: list[int], **kwargs):
        super().__init__(**kwargs)
        self.units = list(units)
        self.dense_layers = [keras.layers.Dense(n, activation="relu", name=f"dense_{i}") for i, n in enumerate(units)]

    def build(self, input_shape):
        shape = tuple(input_shape)
        for layer in self.dense_layers:
            layer.build(shape)
            shape = (*shape[:-1], layer.units)

    def call(self, x):
        for layer in self.dense_layers:
            x = layer(x)
        return x

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.units[-1]) if self.units else tuple(input_shape)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "units": self.units}
