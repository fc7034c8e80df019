"""Logistic regression: logit_t = Σ_f w_t[x_f] + v_t^T numeric + b_t (one-dimensional embeddings)."""

from __future__ import annotations

import keras

from components.train.models.base import RankingModel


class LogisticRegression(RankingModel):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.heads = {task: keras.layers.Dense(1, name=f"head_{task}") for task in self.tasks}

    def body(self, x0, training: bool = False):
        return {task: head(x0) for task, head in self.heads.items()}
