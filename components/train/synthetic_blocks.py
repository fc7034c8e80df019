"""Training-ready blocks without logs or preprocess: a manifest and block files of a stated shape, with labels drawn
from a known logistic model of the features, for the trainer's benchmarks and the device check (which must run where
there is no TensorFlow, Beam or tf.Transform: numpy and `pyfarmhash` only).

    ids of categorical feature f  ~ a Zipf-like draw over its table rows (heavy-tailed, as ad ids are)
    numeric feature               ~ N(0, 1)
    logit = bias + Σ_f w_f[id_f] + Σ_k v_k · x_k,   label ~ Bernoulli(sigmoid(logit))

with the bias set so the positive rate is near `positive_rate`. The blocks are the format preprocess writes
(`components.preprocess.block_format`), so both training lanes read them as they read a real run's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from components.contracts.manifest import FeatureInfo, Manifest, SplitBlocks, SplitInfo, TransformedFeatureSpec
from components.preprocess.block_format import block_layout, encode_blocks, holdout_buckets

TASK = "click"  # the default task


@dataclass(frozen=True)
class BlockShape:
    """What the synthetic examples hold: categorical features with their table rows, list features
    (name, rows, length), numeric features."""

    categorical: dict[str, int]
    numeric: list[str] = field(default_factory=list)
    lists: tuple[tuple[str, int, int], ...] = ()
    positive_rate: float = 0.1
    task: str = TASK


def criteo_shape(rows: int) -> BlockShape:
    """Criteo's shape: 13 numeric and 26 categorical features, the tables from 10k rows up to `rows` (log-spaced)."""
    sizes = np.geomspace(10_000, max(rows, 10_000), 26).astype(int)
    return BlockShape(categorical={f"c{i:02d}": int(size) for i, size in enumerate(sizes)},
                      numeric=[f"n{i:02d}" for i in range(13)], positive_rate=0.25)


def _zipf_ids(rng: np.random.Generator, rows: int, count: int) -> np.ndarray:
    """Ids in [1, rows) (0 is padding / OOV), heavy-tailed: a few rows are most of the draws."""
    ranks = np.floor(np.exp(rng.uniform(0.0, np.log(max(rows - 1, 1)), count))).astype(np.int64)
    return 1 + (ranks * 2_654_435_761) % max(rows - 1, 1)


def write_blocks(directory: str | Path, shape: BlockShape, train: int, eval_examples: int, seed: int = 0,
                 block_examples: int = 1024, files: int = 2) -> Manifest:
    """Write `train` and `eval_examples` examples of `shape` as block files under `directory` and return (and write)
    their manifest."""
    directory = Path(directory)
    rng = np.random.default_rng(seed)
    effects = {name: rng.normal(0.0, 0.6, rows).astype(np.float32) for name, rows in shape.categorical.items()}
    list_effects = {name: rng.normal(0.0, 0.4, rows).astype(np.float32) for name, rows, _ in shape.lists}
    weights = rng.normal(0.0, 0.3, len(shape.numeric)).astype(np.float32)
    features = [FeatureInfo(name=n, kind="categorical", dtype="int64", table_rows=r)
                for n, r in shape.categorical.items()]
    features += [FeatureInfo(name=n, kind="categorical_list", dtype="int64", length=length, table_rows=r,
                             combiner="mean") for n, r, length in shape.lists]
    features += [FeatureInfo(name=n, kind="numeric", dtype="float32") for n in shape.numeric]
    spec = {f.name: TransformedFeatureSpec(dtype=f.dtype, shape=[f.length] if f.kind == "categorical_list" else [])
            for f in features}
    spec[f"label_{shape.task}"] = TransformedFeatureSpec(dtype="float32", shape=[])
    layout = block_layout(spec, block_examples)
    bias = float(np.log(shape.positive_rate / (1 - shape.positive_rate)))
    splits = {}
    for split, count in (("train", train), ("eval", eval_examples)):
        columns: dict[str, np.ndarray] = {}
        logit = np.full(count, bias, np.float32)
        for name, rows in shape.categorical.items():
            ids = _zipf_ids(rng, rows, count)
            columns[name] = ids
            logit += effects[name][ids] - effects[name].mean()
        for name, rows, length in shape.lists:
            ids = _zipf_ids(rng, rows, count * length).reshape(count, length)
            ids[rng.random((count, length)) < 0.3] = 0  # padding
            columns[name] = ids
            present = ids != 0
            logit += (list_effects[name][ids] * present).sum(1) / np.maximum(present.sum(1), 1)
        for k, name in enumerate(shape.numeric):
            columns[name] = rng.normal(0.0, 1.0, count).astype(np.float32)
            logit += weights[k] * columns[name]
        columns[f"label_{shape.task}"] = (rng.random(count) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
        ints, floats = _matrices(layout, columns, count, rng)
        written = {}
        (directory / split).mkdir(parents=True, exist_ok=True)
        for part in range(files):
            name = f"{split}/blocks-{part:05d}-of-{files:05d}.blocks"
            part_rows = slice(part, None, files)
            (directory / name).write_bytes(b"".join(encode_blocks(layout, ints[part_rows], floats[part_rows], name)))
            written[name] = len(ints[part_rows])
        labels = columns[f"label_{shape.task}"]
        splits[split] = SplitInfo(examples=count, label_rates={shape.task: float(labels.mean())},
                                  file_pattern=f"{split}/part-*.tfrecord.gz",
                                  blocks=SplitBlocks(files=written, block_examples=block_examples),
                                  positives={shape.task: int(labels.sum())})
    manifest = Manifest(tasks=[shape.task], features=features, splits=splits, feature_spec=spec, block_layout=layout)
    manifest.write(directory)
    return manifest


def _matrices(layout, columns: dict[str, np.ndarray], count: int,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(int64 [count, W_int], float32 [count, W_float]) in the layout's column order; the holdout bucket of each
    example from random bytes (synthetic examples have no serialized tf.Example)."""
    matrices = {"int64": np.zeros((count, layout.width("int64")), np.int64),
                "float32": np.zeros((count, layout.width("float32")), np.float32)}
    buckets = holdout_buckets([bytes(b) for b in rng.integers(0, 256, (count, 8), dtype=np.uint8)])
    for dtype, matrix in matrices.items():
        offset = 0
        for column in layout.of_dtype(dtype):
            values = buckets if column.name not in columns else columns[column.name]
            matrix[:, offset:offset + column.width] = np.asarray(values).reshape(count, column.width)
            offset += column.width
    return matrices["int64"], matrices["float32"]
