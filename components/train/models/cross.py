"""The DCN-v2 cross layer (Wang et al., 2021), full-rank or a mixture of low-rank experts.

    full rank:        x_{l+1} = x_0 ⊙ (W x_l + b) + x_l
    low rank:         W = U V^T, with U, V ∈ R^{d×r}
    mixture (K > 1):  x_{l+1} = Σ_i g_i(x_l) · x_0 ⊙ (U_i V_i^T x_l + b_i) + x_l,   g = softmax(G x_l)
                              = Σ_i g_i(x_l) · cross_i(x_0, x_l)                  (Σ_i g_i = 1)

Each expert is keras-rs's `FeatureCross` (its `diag_scale` 0, no pre-activation, Glorot-uniform kernels and zero
biases: the function above); this layer adds the softmax mixture and fixed weight paths. Keras names an unnamed
sublayer with a per-process counter (`dense_7`), and warm start and export match dense weights by path, so each
expert's projections are named and built here under this layer's scope, keeping the paths
`cross_0/w_0/{kernel,bias}` (full rank), `cross_0/v_0/kernel`, `cross_0/u_0/{kernel,bias}` (low rank) and
`cross_0/gate/kernel` whichever process builds the model.
"""

from __future__ import annotations

from typing import Any

import keras
from keras_rs.layers import FeatureCross


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
            expert = FeatureCross(projection_dim=self.projection_dim, name=f"expert_{i}")
            expert.build((None, dim))  # makes its projections (Dense layers), which hold no weights until built
            if self.projection_dim is None:
                projections = [(expert.dense, f"w_{i}", dim)]
            else:
                projections = [(expert.down_proj_dense, f"v_{i}", dim), (expert.dense, f"u_{i}", self.projection_dim)]
            for projection, name, input_dim in projections:
                projection.name = name
                projection.build((None, input_dim))  # its weights are made here: `cross_k/<name>/kernel`
            self.experts.append(expert)
        self.gate = None
        if self.num_experts > 1:
            self.gate = keras.layers.Dense(self.num_experts, use_bias=False, name="gate")
            self.gate.build((None, dim))

    def call(self, x0, x):
        if self.gate is None:
            return self.experts[0](x0, x)
        gates = keras.ops.softmax(self.gate(x), axis=-1)  # [batch, K]
        stacked = keras.ops.stack([expert(x0, x) for expert in self.experts], axis=1)  # [batch, K, d]
        return keras.ops.sum(stacked * keras.ops.expand_dims(gates, -1), axis=1)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "projection_dim": self.projection_dim, "num_experts": self.num_experts}
