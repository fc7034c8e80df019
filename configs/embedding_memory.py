"""How much memory a config's embedding tables will take, estimated before any data is read.

    bytes = Σ_tables rows × dim × 4 B × (1 + optimizer slots per value)

Rows per table: `hash_buckets` (hash, learned_hash); a vocabulary's `top_k + oov_buckets` (+1 padding row for lists); a
vocabulary without `top_k` is assumed to keep `training.untruncated_vocabulary_rows` tokens (its real
size is known only after preprocessing); `buckets` for quantile-bucketed numbers; 24 hours or 7 weekdays.
Slots: Adam keeps two values per weight, Adagrad one, row-wise Adagrad one per row, SGD none.
"""

from __future__ import annotations

from dataclasses import dataclass

BYTES_PER_VALUE = 4
GIB = 1024**3
OPTIMIZER_SLOTS = {"adam": 2.0, "lazy_adam": 2.0, "adagrad": 1.0, "sgd": 0.0}
TIME_ROWS = {"hour_of_day": 24, "day_of_week": 7}


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


def table_rows(index: int, feature, untruncated_vocabulary_rows: int) -> TableEstimate | None:
    """The embedding table one feature becomes (None for a normalized number, which has no table)."""
    prefix = f"features.{index}"
    if feature.kind in ("categorical", "categorical_list"):
        padding = 1 if feature.kind == "categorical_list" else 0
        if feature.encoding in ("hash", "learned_hash"):
            return TableEstimate(feature.name, feature.hash_buckets + padding, f"{prefix}.hash_buckets")
        if feature.top_k is not None:
            return TableEstimate(feature.name, feature.top_k + feature.oov_buckets + padding, f"{prefix}.top_k")
        rows = untruncated_vocabulary_rows + feature.oov_buckets + padding
        return TableEstimate(feature.name, rows, "training.untruncated_vocabulary_rows (no top_k)")
    if feature.kind == "numeric":
        if feature.normalization == "quantile_buckets":
            return TableEstimate(feature.name, feature.buckets, f"{prefix}.buckets")
        return None
    return TableEstimate(feature.name, TIME_ROWS[feature.part], f"{prefix}.part")


def slots_per_value(training, embedding_dim: int) -> tuple[str, float]:
    """(optimizer name, optimizer slot values per table value) for the tables' optimizer."""
    optimizer = getattr(training, "embedding_optimizer", None) or training.optimizer
    if optimizer == "rowwise_adagrad":
        return optimizer, 1.0 / embedding_dim
    return optimizer, OPTIMIZER_SLOTS.get(optimizer, 2.0)


def estimate_embedding_memory(features, model, training) -> EmbeddingMemory:
    """The estimate for one resolved target (`model`, `training` with its overrides applied)."""
    dim = 1 if model.kind == "linear" else model.embedding_dim
    tables = [
        table for index, feature in enumerate(features)
        if (table := table_rows(index, feature, training.untruncated_vocabulary_rows)) is not None
    ]
    optimizer, slots = slots_per_value(training, dim)
    return EmbeddingMemory(tables, dim, slots, optimizer)


def check_embedding_memory(features, model, training, target_name: str) -> None:
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
        f"(1 + {memory.slots_per_value:g} {memory.optimizer} slots)), over the limit of {limit:g} GiB; "
        f"largest table: {largest.feature} with {largest.rows:,} rows from {largest.size_field}. "
        "Shrink it or model.embedding_dim, or raise training.max_embedding_memory_gb"
    )
