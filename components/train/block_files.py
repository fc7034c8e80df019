"""A split's block files as the manifest describes them, checked before either lane's reader opens one: the format,
every file present, and every file exactly as long as the manifest's blocks (the readers then check each block's
fingerprint and header: `components.preprocess.block_format`); and what a split's decoded blocks take in memory, which
decides whether a run caches them (`training.cache`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from components.contracts.manifest import BLOCK_FORMAT, BlockLayout, Manifest, SplitBlocks
from components.preprocess.block_format import file_salt


class CorruptBlockFile(ValueError):
    """A block file's size does not match the manifest (truncated or extended), a block failed its check, or the
    rows read disagree with the manifest's counts."""


@dataclass(frozen=True)
class BlockFile:
    """One block file of a split as the manifest describes it: its name (as the manifest lists it), its path, its
    blocks, the rows of its last block and its fingerprint salt (`block_format.file_salt`)."""

    name: str
    path: str
    blocks: int
    last_rows: int
    salt: int

    def rows_of(self, index: int, block_examples: int) -> int:
        """The rows block `index` holds: full, but for the file's last block."""
        return self.last_rows if index == self.blocks - 1 else block_examples


def checked_block_files(examples_dir: str | Path, blocks: SplitBlocks, layout: BlockLayout,
                        exists: Callable[[str], bool], size_of: Callable[[str], int]) -> list[BlockFile]:
    """A split's block files in name order, each checked against the manifest (`exists` and `size_of` read the file
    system the lane reads: `tf.io.gfile` or the local one): a missing, truncated or extended file is a
    `CorruptBlockFile` naming it and its first block that is not whole; blocks of an older format are refused."""
    if layout.format != BLOCK_FORMAT:
        raise CorruptBlockFile(f"the blocks in {examples_dir} are of format {layout.format}, this adrank reads format "
                               f"{BLOCK_FORMAT} (its fingerprint covers the header and the file) — rerun preprocess")
    checked = []
    for name in sorted(blocks.files):
        path = str(Path(examples_dir) / name)
        expected = blocks.blocks_in(name)
        if not exists(path):
            raise CorruptBlockFile(f"block file {path} is missing (the manifest lists {expected} blocks in it)")
        size = size_of(path)
        if size != expected * layout.record_bytes:
            whole = size // layout.record_bytes
            what = "truncated" if size < expected * layout.record_bytes else "longer than the manifest says"
            raise CorruptBlockFile(
                f"block file {path} is {what}: {size:,} bytes, expected {expected} blocks of {layout.record_bytes:,} "
                f"bytes; block {min(whole, expected)} is the first that is not whole — rerun preprocess")
        last_rows = blocks.files[name] - (expected - 1) * blocks.block_examples
        checked.append(BlockFile(name, path, expected, last_rows, file_salt(layout, name)))
    return checked


@dataclass(frozen=True)
class CachePlan:
    """Whether a run caches its split's decoded blocks and what that takes (`training.cache`)."""

    cache: bool
    bytes: int  # decoded blocks of the split, padding included; 0 when nothing is cached
    reason: str


def split_bytes(manifest: Manifest, split: str) -> int | None:
    """Memory the decoded blocks of `split` take (padding included), or None without blocks."""
    blocks = manifest.splits[split].blocks
    if blocks is None or manifest.block_layout is None:
        return None
    return blocks.blocks * manifest.block_layout.block_examples * manifest.block_layout.row_bytes


def cache_plan(manifest: Manifest, split: str, mode: str, budget_bytes: int) -> CachePlan:
    """`mode` auto: cache when the split's decoded blocks fit `budget_bytes`; memory: always; none: never.
    Per-example records are never cached (their parse, the expensive part, runs after the shuffle)."""
    size = split_bytes(manifest, split)
    if mode == "none":
        return CachePlan(False, 0, "training.cache is none")
    if size is None:
        return CachePlan(False, 0, "the split has per-example records only: nothing to cache")
    if mode == "auto" and size > budget_bytes:
        return CachePlan(False, 0, f"the {split} split's blocks take {size / 2**20:,.0f} MiB, above "
                                   f"training.cache_memory_mb {budget_bytes / 2**20:,.0f}")
    return CachePlan(True, size, f"{size / 2**20:,.1f} MiB of decoded {split} blocks cached after the first epoch")
