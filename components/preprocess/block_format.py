"""What a block record is: a fixed-length run of bytes that holds `block_examples` transformed examples, one
packed row-major matrix per dtype, so that reading a batch is a few memory copies instead of a proto parse per
feature per example (docs/input.md has the measurements that chose it).

    record = header ‖ int64 [block_examples, W_int] ‖ float32 [block_examples, W_float]     (little-endian)
    header = fingerprint (8 bytes) ‖ int64 rows ‖ int64 block index in its file
    fingerprint = farmhash64(rows ‖ index ‖ payload) XOR farmhash64(file name ‖ "\n" ‖ layout)   (format 2)

Columns are the transformed features and labels in name order (a list of length L is L adjacent columns), then
`HOLDOUT_COLUMN`: the example's holdout bucket, its content fingerprint mod `HOLDOUT_BUCKETS` (`with_content_keys`).
Every record of a file has the same length; a file's last block may hold fewer than `block_examples` rows (its
`rows` says how many; the rest is zero padding). The fingerprint covers the header's rows and index with the
payload, and is salted with the file's name (as the manifest lists it) and the layout (`BlockLayout.canonical`), so a
corrupt, reordered or truncated block, a block whose header was edited, a file swapped for another and a manifest whose
layout was edited are each an error naming the file and block in both readers (the TensorFlow lane's
`components.train.input`, the JAX lane's numpy `components.train.jax_lane.block_reader`), never a short or wrong
epoch. The fingerprint (and the holdout bucket) is FarmHash64 as `tf.fingerprint` (`tf.strings.to_hash_bucket_fast`)
computes it; `pyfarmhash` computes the same value without TensorFlow, so writing and reading blocks needs no
TensorFlow.

An example's content fingerprint is the FarmHash64 of its row as a block stores it (its int64 values without the
holdout column, then its float32 values, little-endian): the same in every process, venv and working directory,
unlike the bytes of a serialized tf.Example, whose map order changes from process to process. It decides the
holdout bucket and, mixed with the seed, the order key that groups examples into files and orders them there
(`components/preprocess/blocks.py`), so the same config and seed write the same block files byte for byte.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

import farmhash
import numpy as np

from components.contracts.manifest import (
    BLOCK_FORMAT,
    BLOCK_HEADER_BYTES,
    BlockColumn,
    BlockLayout,
    TransformedFeatureSpec,
)

HOLDOUT_COLUMN = "__holdout_bucket__"
HOLDOUT_BUCKETS = 10_000
BLOCK_FILE_SUFFIX = ".blocks"


def block_layout(transformed_spec: Mapping[str, TransformedFeatureSpec], block_examples: int) -> BlockLayout:
    """The layout for examples of `transformed_spec` (name → dtype, shape): one column per value, name order."""
    columns = []
    for name in sorted(transformed_spec):
        spec = transformed_spec[name]
        if spec.dtype not in ("int64", "float32"):
            raise ValueError(f"transformed feature '{name}' has dtype {spec.dtype}: blocks hold int64 and float32")
        columns.append(BlockColumn(name=name, dtype=spec.dtype, width=int(np.prod(spec.shape, dtype=np.int64))))
    columns.append(BlockColumn(name=HOLDOUT_COLUMN, dtype="int64", width=1))
    return BlockLayout(block_examples=block_examples, columns=columns, format=BLOCK_FORMAT)


def holdout_buckets(serialized_examples: Sequence[bytes]) -> np.ndarray:
    """`tf.strings.to_hash_bucket_fast(record, HOLDOUT_BUCKETS)` of each serialized example: FarmHash64 of its bytes
    modulo the buckets, computed with `pyfarmhash` (the same value, no TensorFlow)."""
    return np.fromiter((farmhash.fingerprint64(record) % HOLDOUT_BUCKETS for record in serialized_examples),
                       np.int64, count=len(serialized_examples))


def example_matrices(layout: BlockLayout, examples: Sequence[Mapping[str, object]],
                     buckets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int64 [n, W_int], float32 [n, W_float]) of `examples` (name → value) and their holdout buckets."""
    n = len(examples)
    matrices: dict[str, np.ndarray] = {"int64": np.zeros([n, layout.width("int64")], np.int64),
                "float32": np.zeros([n, layout.width("float32")], np.float32)}
    for dtype, matrix in matrices.items():
        offset = 0
        for column in layout.of_dtype(dtype):
            if column.name == HOLDOUT_COLUMN:
                values = np.asarray(buckets, np.int64).reshape(n, 1)
            else:
                values = np.asarray([example[column.name] for example in examples], dtype).reshape(n, -1)
            if values.shape[1] != column.width:
                raise ValueError(f"'{column.name}' has {values.shape[1]} values per example, the layout {column.width}")
            matrix[:, offset:offset + column.width] = values
            offset += column.width
    return matrices["int64"], matrices["float32"]


def file_salt(layout: BlockLayout, file_name: str) -> int:
    """farmhash64 of the file's name (relative to the manifest, as its `files` lists it) and the layout: XORed into
    every block fingerprint of that file, so a block read under another name or layout fails its check."""
    return farmhash.fingerprint64(f"{file_name}\n{layout.canonical()}".encode())


def content_fingerprints(layout: BlockLayout, ints: np.ndarray, floats: np.ndarray) -> np.ndarray:
    """uint64 [n]: FarmHash64 of each row's values as a block stores them, the holdout column left out (one
    vectorized `tf.fingerprint` over the rows' bytes; equal to `pyfarmhash.fingerprint64` of each row)."""
    holdout = layout.offsets("int64")[HOLDOUT_COLUMN][0]
    kept = np.delete(ints, holdout, axis=1) if ints.shape[1] else ints
    rows = np.concatenate([np.ascontiguousarray(kept, "<i8").view(np.uint8).reshape(len(ints), -1),
                           np.ascontiguousarray(floats, "<f4").view(np.uint8).reshape(len(floats), -1)], axis=1)
    if not len(rows):
        return np.zeros([0], np.uint64)
    import tensorflow as tf  # only preprocess (a TensorFlow process) fingerprints content; readers need no TensorFlow

    return tf.fingerprint(tf.constant(rows)).numpy().view("<u8").reshape(-1).astype(np.uint64)


def order_keys(fingerprints: np.ndarray, seed: int) -> np.ndarray:
    """uint64 [n]: each example's seeded order key, `splitmix64(fingerprint ^ splitmix64(seed))` (a bijection of the
    fingerprint for a seed, so a seed reorders examples without a second pass over their bytes)."""
    seed_mix = _splitmix64(np.array([seed % 2**64], np.uint64))[0]
    return _splitmix64(np.asarray(fingerprints, np.uint64) ^ seed_mix)


def with_content_keys(layout: BlockLayout, ints: np.ndarray, floats: np.ndarray, seed: int) -> np.ndarray:
    """Fill `ints`' holdout column with each row's bucket (content fingerprint mod HOLDOUT_BUCKETS); returns their
    order keys (`order_keys`)."""
    fingerprints = content_fingerprints(layout, ints, floats)
    holdout = layout.offsets("int64")[HOLDOUT_COLUMN][0]
    ints[:, holdout] = (fingerprints % np.uint64(HOLDOUT_BUCKETS)).astype(np.int64)
    return order_keys(fingerprints, seed)


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64's output function (Steele et al.), elementwise on uint64 with wrap-around arithmetic."""
    with np.errstate(over="ignore"):
        x = values + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def block_fingerprint(checked: bytes, salt: int) -> bytes:
    """The 8 fingerprint bytes of a record whose bytes after the fingerprint (rows ‖ index ‖ payload) are `checked`."""
    return (farmhash.fingerprint64(checked) ^ salt).to_bytes(8, "little")


def encode_block(layout: BlockLayout, ints: np.ndarray, floats: np.ndarray, index: int, salt: int) -> bytes:
    """One record: `ints`/`floats` ([rows, W], rows ≤ block_examples) zero-padded to block_examples rows; `salt`:
    its file's `file_salt`."""
    rows = ints.shape[0]
    if not 0 < rows <= layout.block_examples or floats.shape[0] != rows:
        raise ValueError(f"a block holds 1 to {layout.block_examples} rows, got {rows} and {floats.shape[0]}")
    padded_ints = np.zeros([layout.block_examples, layout.width("int64")], "<i8")
    padded_floats = np.zeros([layout.block_examples, layout.width("float32")], "<f4")
    padded_ints[:rows], padded_floats[:rows] = ints, floats
    checked = struct.pack("<qq", rows, index) + padded_ints.tobytes() + padded_floats.tobytes()
    record = block_fingerprint(checked, salt) + checked
    assert len(record) == layout.record_bytes and BLOCK_HEADER_BYTES == 24 and layout.format == BLOCK_FORMAT
    return record


def encode_blocks(layout: BlockLayout, ints: np.ndarray, floats: np.ndarray, file_name: str) -> list[bytes]:
    """All rows of the file `file_name` (relative to the manifest) as consecutive blocks: full ones, then the
    remainder (if any) as a partial last block."""
    size, salt = layout.block_examples, file_salt(layout, file_name)
    return [encode_block(layout, ints[start:start + size], floats[start:start + size], index, salt)
            for index, start in enumerate(range(0, ints.shape[0], size))]
