"""Reading a preprocess output's block files back as examples, for the tests of this folder."""

from __future__ import annotations

from pathlib import Path

from components.preprocess.block_format import HOLDOUT_COLUMN, column_values, decode_blocks
from components.preprocess.manifest import Manifest


def read_blocks(out: Path, manifest: Manifest, split: str) -> list[dict]:
    """Every example of a split's block files, one dict each (name → value, a list column as a list), file by file
    in the manifest's order."""
    layout, blocks = manifest.block_layout, manifest.splits[split].blocks
    assert layout is not None and blocks is not None
    rows = []
    for name in blocks.files:
        values = column_values(layout, *decode_blocks(layout, (out / name).read_bytes()))
        rows += [{column: (data[i].tolist() if data.ndim == 2 else data[i].item()) for column, data in values.items()}
                 for i in range(len(values[HOLDOUT_COLUMN]))]
    return rows
