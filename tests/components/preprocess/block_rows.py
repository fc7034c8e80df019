"""Reading a preprocess output's block files back as examples, for the tests of this folder: through the trainer's
own numpy block reader (`BlockSplit`, every fingerprint and row count checked)."""

from __future__ import annotations

from pathlib import Path

from components.contracts.manifest import Manifest
from components.preprocess.block_format import HOLDOUT_COLUMN
from components.train.jax_lane.block_reader import BlockSplit


def read_blocks(out: Path, manifest: Manifest, split: str) -> list[dict]:
    """Every example of a split's block files, one dict each (name → value, a list column as a list), file by file
    in the manifest's order."""
    layout = manifest.block_layout
    assert layout is not None
    matrices = dict(zip(("int64", "float32"), BlockSplit(out, manifest, split).all_rows(), strict=True))
    values = {}
    for dtype, matrix in matrices.items():
        for column, (start, width) in layout.offsets(dtype).items():
            values[column] = matrix[:, start] if width == 1 else matrix[:, start:start + width]
    return [{column: (data[i].tolist() if data.ndim == 2 else data[i].item()) for column, data in values.items()}
            for i in range(len(values[HOLDOUT_COLUMN]))]
