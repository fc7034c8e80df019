"""The one vocabulary file preprocess writes for every vocabulary feature (`components.preprocess.vocabulary` writes
and applies it with tf.Transform), read back without TensorFlow: per feature a header line `<feature>`, then
`<feature>:<token>` lines in id order; a last line `:` closes the file. It is an asset of the transform graph
(`transform_fn/assets/`, or where tf.Transform's `asset_map` points)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

VOCABULARIES_FILE = "vocabularies"
KEY_SEPARATOR = b":"  # feature names are [a-z][a-z0-9_]*: the first ':' ends the name
TRAILER = b":"  # the last line; a header line is the bare feature name, so no key equals a header
ASSET_MAP = "asset_map"  # tf.Transform's map of annotated asset names, under transformed_metadata/


def sizes_from_lines(lines: list[bytes]) -> dict[str, int]:
    """Vocabulary entries per feature (without OOV buckets)."""
    return dict(Counter(line.split(KEY_SEPARATOR, 1)[0].decode() for line in lines
                        if KEY_SEPARATOR in line and line != TRAILER))


def tokens_from_lines(lines: list[bytes], feature_name: str) -> list[bytes]:
    """One feature's vocabulary, id order."""
    prefix = feature_name.encode() + KEY_SEPARATOR
    return [line[len(prefix):] for line in lines if line.startswith(prefix)]


def vocabulary_lines(tft_output_dir: str | Path) -> list[bytes] | None:
    """The vocabulary file's lines from a tf.Transform output directory (None when it has none), read as tf.Transform's
    `vocabulary_by_name` reads a text asset."""
    root = Path(tft_output_dir)
    assets = root / "transform_fn" / "assets"
    name = VOCABULARIES_FILE
    mapping_path = root / "transformed_metadata" / ASSET_MAP
    if mapping_path.is_file():
        name = json.loads(mapping_path.read_text()).get(VOCABULARIES_FILE, name)
    path = assets / name
    if not path.is_file():
        return None
    return [line.rstrip(b"\n") for line in path.read_bytes().splitlines(keepends=True)]


def transform_vocabularies(tft_output_dir: str | Path | None) -> dict[str, list[bytes]]:
    """Every vocabulary feature's tokens in id order (none without a tf.Transform output or vocabulary)."""
    lines = None if tft_output_dir is None else vocabulary_lines(tft_output_dir)
    if not lines:
        return {}
    return {name: tokens_from_lines(lines, name) for name in sizes_from_lines(lines)}
