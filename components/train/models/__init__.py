"""Ranking models (Keras 3, backend-neutral): DCN-v2, PLE and a logistic-regression baseline, built from the config
with the embedding tables the training lane makes (`make_tables`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import keras_rs

from components.contracts.manifest import Manifest
from components.train.embedding_tables import EmbeddingTables, feature_configs, numeric_features
from components.train.models.base import RankingModel
from components.train.models.cross import CrossLayer
from components.train.models.dcn import DCN
from components.train.models.linear import LogisticRegression
from components.train.models.mlp import MLP
from components.train.models.ple import CGC, PLE
from components.train.packed_batch import PackedLayout
from configs.training import ModelConfig

TableFactory = Callable[[dict[str, keras_rs.layers.FeatureConfig]], EmbeddingTables]

__all__ = ["CGC", "DCN", "MLP", "PLE", "CrossLayer", "LogisticRegression", "RankingModel", "build_model"]


def prior_logits(manifest: Manifest) -> dict[str, float]:
    """log(r / (1 - r)) of each task's train positive rate r (clipped away from 0 and 1)."""
    rates = manifest.splits["train"].label_rates
    result = {}
    for task in manifest.tasks:
        rate = min(max(float(rates.get(task, 0.5)), 1e-6), 1 - 1e-6)
        result[task] = math.log(rate / (1 - rate))
    return result


def build_model(
    model: ModelConfig, manifest: Manifest, per_replica_batch: int, make_tables: TableFactory,
    table_optimizer: Any = "adam",
) -> RankingModel:
    """The configured model, its tables sized from the transform output (the manifest).

    `make_tables` makes the tables' implementation from the feature configs (each lane has its own: the TensorFlow
    lane's `components.train.embedding.table_factory`, the JAX lane's `components.train.jax_lane.embedding`);
    `table_optimizer` is the TableConfig optimizer an embedding API applies itself (the TPU embedding API, SparseCore).
    """
    dim = 1 if model.kind == "linear" else model.embedding_dim
    configs = feature_configs(
        manifest, dim, per_replica_batch, table_optimizer, initializer=model.embedding_initializer,
        shared_tables=model.shared_tables,
    )
    embedding = make_tables(configs)
    common = dict(
        embedding=embedding,
        numeric_features=[f.name for f in numeric_features(manifest)],
        tasks=list(manifest.tasks),
        prior_logits=prior_logits(manifest) if model.output_bias == "label_rate" else None,
        packed_layout=PackedLayout.from_manifest(manifest),
        name=model.kind,
    )
    if model.kind == "dcn":
        return DCN(
            cross_layers=model.cross_layers,
            structure=model.cross_structure,
            projection_dim=model.cross_projection_dim,
            num_experts=model.cross_experts,
            deep_layers=model.deep_layers,
            **common,
        )
    if model.kind == "ple":
        return PLE(
            levels=model.ple_levels,
            task_experts=model.ple_task_experts,
            shared_experts=model.ple_shared_experts,
            expert_layers=model.ple_expert_layers,
            tower_layers=model.ple_tower_layers,
            **common,
        )
    if model.kind == "linear":
        return LogisticRegression(**common)
    raise ValueError(f"unknown model kind '{model.kind}'")
