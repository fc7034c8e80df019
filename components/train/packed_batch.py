"""The packed batch: what the block reader hands the training step, and how the model splits it into features.

A batch read from blocks is `(features, labels)` with

    features = {PACKED_INT64: int64 [batch, W_int], PACKED_FLOAT32: float32 [batch, W_float]}
    labels   = {task: float32 [batch, 1]}

the two matrices exactly as the block layout (`Manifest.block_layout`) lays out a row: every transformed feature
and label in name order, then the holdout bucket. Handing the step two tensors instead of one per feature is the
point: a tf.data element of ~1,000 tensors costs more per batch than reading the blocks (docs/input.md). The model
splits the matrices into its per-feature inputs at the start of its call, inside the step's graph (on a TPU or GPU,
on the device; on TPU inside the replica step, before the embedding lookup), with one gather and one split per
dtype for the scalar features whatever their number, and one slice per list feature:

    scalars = unstack(take(matrix, [scalar feature columns], axis=1), axis=1)
    list f  = matrix[:, start_f : start_f + length_f]                (a list's columns are adjacent)

`PackedLayout` says which columns are which feature; it is learned from the manifest (the block layout and the
transformed feature spec), never from a batch, and it lists no label column: the model cannot read a label. It is
part of the model's config (plain data, no variables, so checkpoints are unchanged). The split is written with
`keras.ops` (static shapes kept), so both training lanes' models run it; how a lane's reader makes the batch is its
own (the TensorFlow lane: `components.train.input`; the JAX lane: `components.train.jax_lane.block_reader`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import keras

from components.contracts.manifest import BlockLayout, Manifest

PACKED_INT64 = "packed_int64"
PACKED_FLOAT32 = "packed_float32"
PACKED_KEYS = {"int64": PACKED_INT64, "float32": PACKED_FLOAT32}
LABEL_PREFIX = "label_"


@dataclass(frozen=True)
class PackedColumns:
    """The feature columns of one dtype's matrix: scalar features (name, column) and list features
    (name, first column, length), each in the layout's order."""

    width: int  # the matrix's columns, features or not
    scalars: tuple[tuple[str, int], ...] = ()
    lists: tuple[tuple[str, int, int], ...] = ()

    def split(self, matrix: Any) -> dict[str, Any]:
        """{feature: [batch] (scalar) or [batch, length] (list)} from `matrix` [batch, width], static shapes kept."""
        features: dict[str, Any] = {}
        if self.scalars:
            picked = keras.ops.take(matrix, [column for _, column in self.scalars], axis=1)
            features.update(zip([name for name, _ in self.scalars],
                                keras.ops.unstack(picked, num=len(self.scalars), axis=1)))
        for name, start, length in self.lists:
            features[name] = matrix[:, start:start + length]
        return features

    def to_config(self) -> dict[str, Any]:
        return {"width": self.width, "scalars": [list(s) for s in self.scalars], "lists": [list(x) for x in self.lists]}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PackedColumns:
        return cls(int(config["width"]), tuple((str(n), int(c)) for n, c in config["scalars"]),
                   tuple((str(n), int(s), int(w)) for n, s, w in config["lists"]))


@dataclass(frozen=True)
class PackedLayout:
    """Which columns of a packed batch's two matrices are which transformed feature (no labels)."""

    int64: PackedColumns
    float32: PackedColumns

    @classmethod
    def from_manifest(cls, manifest: Manifest) -> PackedLayout | None:
        """The layout of the manifest's blocks, or None when it has none (per-example records only). A feature the
        blocks do not hold, or whose width or dtype differs from the transformed spec, is a ValueError."""
        layout = manifest.block_layout
        if layout is None:
            return None
        by_dtype: dict[str, tuple[list, list]] = {"int64": ([], []), "float32": ([], [])}
        offsets = {dtype: layout.offsets(dtype) for dtype in by_dtype}
        for feature in manifest.features:
            dtype = "int64" if feature.dtype == "int64" else "float32"
            if feature.name in PACKED_KEYS.values():
                raise ValueError(f"feature '{feature.name}' has a name the packed batch reserves")
            if feature.name not in offsets[dtype]:
                raise ValueError(f"the block layout has no {dtype} column for feature '{feature.name}'")
            start, width = offsets[dtype][feature.name]
            scalars, lists = by_dtype[dtype]
            if feature.kind == "categorical_list":
                if width != feature.length:
                    raise ValueError(f"list feature '{feature.name}' has length {feature.length}, its block "
                                     f"columns {width}")
                lists.append((feature.name, start, width))
            else:
                if width != 1:
                    raise ValueError(f"scalar feature '{feature.name}' has {width} block columns")
                scalars.append((feature.name, start))
        return cls(*(PackedColumns(layout.width(dtype), tuple(by_dtype[dtype][0]), tuple(by_dtype[dtype][1]))
                     for dtype in ("int64", "float32")))

    def split(self, features: Mapping[str, Any]) -> dict[str, Any]:
        """A packed batch's features → {feature: tensor} as the per-example parse gives them."""
        return {**self.int64.split(features[PACKED_INT64]), **self.float32.split(features[PACKED_FLOAT32])}

    def to_config(self) -> dict[str, Any]:
        return {"int64": self.int64.to_config(), "float32": self.float32.to_config()}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PackedLayout:
        return cls(PackedColumns.from_config(config["int64"]), PackedColumns.from_config(config["float32"]))


def is_packed(features: Mapping[str, Any]) -> bool:
    """Whether `features` is a packed batch (the two matrices) rather than one tensor per feature."""
    return PACKED_INT64 in features and PACKED_FLOAT32 in features


def label_columns(layout: BlockLayout, tasks: list[str]) -> dict[str, tuple[str, int]]:
    """task → (dtype of the matrix holding its label, column); a ValueError naming a label the layout lacks."""
    offsets = {dtype: layout.offsets(dtype) for dtype in ("int64", "float32")}
    columns = {}
    for task in tasks:
        name = f"{LABEL_PREFIX}{task}"
        found = [(dtype, offsets[dtype][name][0]) for dtype in offsets if name in offsets[dtype]]
        if not found:
            raise ValueError(f"the block layout has no column for label '{name}'")
        columns[task] = found[0]
    return columns
