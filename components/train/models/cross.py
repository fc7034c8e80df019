"""The DCN-v2 cross layer (Wang et al., 2021), full-rank or a mixture of low-rank experts.

    full rank:        x_{l+1} = x_0 ⊙ (W x_l + b) + x_l
    low rank:         W = U V^T, with U, V ∈ R^{d×r}
    mixture (K > 1):  x_{l+1} = Σ_i g_i(x_l) · x_0 ⊙ (U_i V_i^T x_l + b_i) + x_l,   g = softmax(G x_l)
"""

from __future__ import annotations

from typing import Any

import keras


class CrossLayer(keras.layers.Layer):
    def __init__(self, projection_dim: int | None = None, num_experts: int = 1, **kwargs):
        super().__init__(**kwargs)
        if num_experts > 1 and projection_dim is None:
            raise ValueError("a mixture of cross experts needs projection_dim")
        self.projection_dim = projection_dim
        self.num_experts = num_experts

    def build(self, input_shape):
        dim = int(input_shape[-1])
        self.experts = []
        for i in range(self.num_experts):
            if self.projection_dim is None:
                expert = [keras.layers.Dense(dim, name=f"w_{i}")]
            else:
                expert = [
                    keras.layers.Dense(self.projection_dim, use_bias=False, name=f"v_{i}"),
                    keras.layers.Dense(dim, name=f"u_{i}"),
                ]
            for layer in expert:
                layer.build((None, dim) if layer is expert[0] else (None, self.projection_dim))
            self.experts.append(expert)
        self.gate = None
        if self.num_experts > 1:
            self.gate = keras.layers.Dense(self.num_experts, use_bias=False, name="gate")
            self.gate.build((None, dim))

    def call(self, x0, x):
        outputs = []
        for expert in self.experts:
            projected = x
            for layer in expert:
                projected = layer(projected)
            outputs.append(x0 * projected)
        if self.gate is None:
            return outputs[0] + x
        gates = keras.ops.softmax(self.gate(x), axis=-1)  # [batch, K]
        stacked = keras.ops.stack(outputs, axis=1)  # [batch, K, d]
        return keras.ops.sum(stacked * keras.ops.expand_dims(gates, -1), axis=1) + x

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "projection_dim": self.projection_dim, "num_experts": self.num_experts}
