"""How much memory a config's embedding tables will take, estimated before any data is read.

    bytes = Σ_tables rows × dim × 4 B × (1 + optimizer slots per value)

Rows per table (`configs.features.table_rows`): `hash_buckets` (hash, learned_hash); a vocabulary's `top_k + oov_buckets` (+1 padding row for lists); a
vocabulary without `top_k` is assumed to keep `training.untruncated_vocabulary_rows` tokens (its real
size is known only after preprocessing); `buckets` for quantile-bucketed numbers; 24 hours or 7 weekdays.
Slots: Adam keeps two values per weight, Adagrad one, row-wise Adagrad one per row, SGD none.

The limit is `training.max_embedding_memory_gb`. For a run on this machine (`adrank run`) a limit the config
does not set explicitly is LOCAL_MEMORY_SHARE of this machine's physical memory instead of the schema default,
so a table the kernel would kill the training step for is refused before the run starts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from configs.features import CategoricalFeature, Feature, NumericFeature, table_rows
from configs.training import ModelConfig, TrainingConfig, resolve_target

if TYPE_CHECKING:  # configs.schema validates with this module's checks, so it is imported only for the type
    from configs.schema import AdrankConfig

BYTES_PER_VALUE = 4
GIB = 1024**3
OPTIMIZER_SLOTS = {"adam": 2.0, "lazy_adam": 2.0, "adagrad": 1.0, "sgd": 0.0}
# Tables and their optimizer slots may take this share of the machine's memory in a local run; the rest is for
# TensorFlow, the input pipeline, Beam and the OS.
LOCAL_MEMORY_SHARE = 0.5


@dataclass(frozen=True)
class TableEstimate:
    feature: str
    rows: int
    size_field: str  # the config field the row count comes from, e.g. "features.0.hash_buckets"


@dataclass(frozen=True)
class EmbeddingMemory:
    tables: list[TableEstimate]
    embedding_dim: int
    slots_per_value: float
    optimizer: str

    @property
    def rows(self) -> int:
        return sum(table.rows for table in self.tables)

    @property
    def bytes(self) -> float:
        return self.rows * self.embedding_dim * BYTES_PER_VALUE * (1.0 + self.slots_per_value)

    @property
    def gib(self) -> float:
        return self.bytes / GIB

    @property
    def largest(self) -> TableEstimate | None:
        return max(self.tables, key=lambda table: table.rows, default=None)


def estimated_table(index: int, feature: Feature, untruncated_vocabulary_rows: int) -> TableEstimate | None:
    """The embedding table one feature becomes (None for a normalized number, which has no table)."""
    prefix = f"features.{index}"
    if isinstance(feature, CategoricalFeature) and feature.encoding == "vocabulary":
        if feature.top_k is not None:  # at most top_k entries survive
            entries, size_field = feature.top_k, f"{prefix}.top_k"
        else:
            entries, size_field = untruncated_vocabulary_rows, "training.untruncated_vocabulary_rows (no top_k)"
        rows = table_rows(feature, entries)
    else:
        rows = table_rows(feature)
        if isinstance(feature, CategoricalFeature):  # hash, learned_hash
            size_field = f"{prefix}.hash_buckets"
        elif isinstance(feature, NumericFeature):  # quantile_buckets
            size_field = f"{prefix}.buckets"
        else:
            size_field = f"{prefix}.part"
    return None if rows is None else TableEstimate(feature.name, rows, size_field)


def slots_per_value(training: TrainingConfig, embedding_dim: int) -> tuple[str, float]:
    """(optimizer name, optimizer slot values per table value) for the tables' optimizer."""
    optimizer = training.embedding_optimizer
    if optimizer == "rowwise_adagrad":
        return optimizer, 1.0 / embedding_dim
    return optimizer, OPTIMIZER_SLOTS.get(optimizer, 2.0)


def estimate_embedding_memory(features: Sequence[Feature], model: ModelConfig,
                              training: TrainingConfig) -> EmbeddingMemory:
    """The estimate for one resolved target (`model`, `training` with its overrides applied)."""
    dim = 1 if model.kind == "linear" else model.embedding_dim
    tables = [
        table for index, feature in enumerate(features)
        if (table := estimated_table(index, feature, training.untruncated_vocabulary_rows)) is not None
    ]
    optimizer, slots = slots_per_value(training, dim)
    return EmbeddingMemory(tables, dim, slots, optimizer)


def machine_memory_gib() -> float | None:
    """This machine's physical memory in GiB (None where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
    except (AttributeError, ValueError, OSError):
        return None


def local_memory_limit_gb(memory_gib: float | None = None) -> float | None:
    """The default embedding-memory limit of a local run: LOCAL_MEMORY_SHARE of the machine's memory."""
    memory_gib = machine_memory_gib() if memory_gib is None else memory_gib
    return None if memory_gib is None else round(memory_gib * LOCAL_MEMORY_SHARE, 1)


def check_local_embedding_memory(config: AdrankConfig, memory_gib: float | None = None) -> None:
    """The load-time check again for a run on this machine: every target whose config leaves
    `training.max_embedding_memory_gb` unset (pipeline-wide and per target) is held to `local_memory_limit_gb`."""
    local_limit = local_memory_limit_gb(memory_gib)
    if local_limit is None:
        return
    pipeline_wide = "max_embedding_memory_gb" in config.training.model_fields_set
    for target in config.targets:
        per_target = target.training is not None and target.training.max_embedding_memory_gb is not None
        if pipeline_wide or per_target:
            continue  # the config's own limit was already checked at load
        resolved = resolve_target(config.model, config.training, target)
        training = resolved.training.model_copy(update={"max_embedding_memory_gb": local_limit})
        check_embedding_memory(config.features, resolved.model, training, target.name,
                               limit_source=f"this machine's {memory_gib or machine_memory_gib():,.1f} GiB × "
                               f"{LOCAL_MEMORY_SHARE:g}, the default for a local run")


def check_embedding_memory(features: Sequence[Feature], model: ModelConfig, training: TrainingConfig, target_name: str,
                           limit_source: str | None = None) -> None:
    """Raise ValueError naming the limit and the largest table when the estimate exceeds the limit."""
    memory = estimate_embedding_memory(features, model, training)
    limit = training.max_embedding_memory_gb
    if memory.gib <= limit:
        return
    largest = memory.largest
    assert largest is not None
    raise ValueError(
        f"training.max_embedding_memory_gb: target '{target_name}' needs about {memory.gib:,.1f} GiB for "
        f"embedding tables ({memory.rows:,} rows × dim {memory.embedding_dim} × {BYTES_PER_VALUE} B × "
        f"(1 + {memory.slots_per_value:g} {memory.optimizer} slots)), over the limit of {limit:g} GiB"
        f"{f' ({limit_source})' if limit_source else ''}; "
        f"largest table: {largest.feature} with {largest.rows:,} rows from {largest.size_field}. "
        "Shrink it or model.embedding_dim, or raise training.max_embedding_memory_gb"
    )
