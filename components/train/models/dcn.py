"""DCN-v2 (Wang et al., 2021): explicit feature crosses next to (parallel) or before (stacked) a deep MLP.

    stacked:   h = MLP(cross_L(…cross_1(x_0)))
    parallel:  h = [cross_L(…cross_1(x_0)) ‖ MLP(x_0)]
    logit_t = w_t^T h + b_t   for each task t
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import keras

from components.train.models.base import RankingModel
from components.train.models.cross import CrossLayer
from components.train.models.mlp import MLP


class DCN(RankingModel):
    def __init__(
        self,
        cross_layers: int = 2,
        structure: Literal["stacked", "parallel"] = "stacked",
        projection_dim: int | None = None,
        num_experts: int = 1,
        deep_layers: Sequence[int] = (64, 32),
        **kwargs,
    ):
        super().__init__(**kwargs)
        if structure not in ("stacked", "parallel"):
            raise ValueError(f"unknown DCN structure '{structure}'")
        self.num_cross_layers = cross_layers
        self.structure = structure
        self.projection_dim = projection_dim
        self.num_experts = num_experts
        self.deep_layers = list(deep_layers)
        self.crosses = [CrossLayer(projection_dim, num_experts, name=f"cross_{i}") for i in range(cross_layers)]
        self.deep = MLP(self.deep_layers, name="deep")
        self.heads = {task: keras.layers.Dense(1, name=f"head_{task}") for task in self.tasks}

    def body(self, x0, training: bool = False):
        crossed = x0
        for cross in self.crosses:
            crossed = cross(x0, crossed)
        if self.structure == "stacked":
            hidden = self.deep(crossed)
        else:
            hidden = keras.ops.concatenate([crossed, self.deep(x0)], axis=-1)
        return {task: head(hidden) for task, head in self.heads.items()}

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "cross_layers": self.num_cross_layers,
            "structure": self.structure,
            "projection_dim": self.projection_dim,
            "num_experts": self.num_experts,
            "deep_layers": self.deep_layers,
        }
