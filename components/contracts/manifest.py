"""The preprocess → train contract: what the transform step wrote, read back by the trainer, the report and the
promotion step.

The trainer learns every feature's shape and table size from here (written from the transform output),
never from a second copy of the feature list.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, ConfigDict, Field

from components.contracts.base import Contract
from foundation.canonical_json import canonical_json

MANIFEST_FILE = "manifest.json"
TRANSFORM_FN_DIR = "transform_fn"
CALIBRATION_SPLIT = "calibration"  # the last split.calibration_days of train, written again for the calibration step


class FeatureInfo(Contract):
    """One transformed model input. `length` 1 is a scalar; >1 is a fixed-length padded list (pad id 0)."""

    name: str
    kind: Literal["categorical", "categorical_list", "numeric"]
    dtype: Literal["int64", "float32"]
    length: int = Field(1, ge=1)
    # Written as `table_rows`; manifests written before the rename name it `vocabulary_size` and still load.
    table_rows: int | None = Field(
        None, validation_alias=AliasChoices("table_rows", "vocabulary_size"),
        description="embedding table rows (vocabulary entries + OOV buckets, hash buckets, ...; padding id included)")
    combiner: Literal["mean", "sum"] | None = None
    missing_rate: float | None = Field(None, description="share of examples where the raw value was absent")


class BlockColumn(Contract):
    """One column of a block: a model input, a label or the holdout bucket, `width` values per example."""

    model_config = ConfigDict(frozen=True)

    name: str
    dtype: Literal["int64", "float32"]
    width: int = Field(1, ge=1)


class BlockLayout(Contract):
    """The byte layout of every block record (components/preprocess/block_format.py): a header, then the int64
    columns as one [block_examples, Σ width] row-major matrix, then the float32 columns as another."""

    model_config = ConfigDict(frozen=True)

    block_examples: int = Field(ge=1, description="rows of every block; a file's last block may hold fewer")
    columns: list[BlockColumn]
    format: int = Field(1, description="the record format (components/preprocess/block_format.py); manifests "
                        "written before format 2 have none and read as 1, which the readers refuse")

    def canonical(self) -> str:
        """The layout as compact JSON with sorted keys: what each block's fingerprint is salted with."""
        return canonical_json(self.model_dump(mode="json"))

    def of_dtype(self, dtype: str) -> list[BlockColumn]:
        return [c for c in self.columns if c.dtype == dtype]

    def width(self, dtype: str) -> int:
        return sum(c.width for c in self.of_dtype(dtype))

    def offsets(self, dtype: str) -> dict[str, tuple[int, int]]:
        """column name → (first column, width) in `dtype`'s matrix."""
        offsets, start = {}, 0
        for column in self.of_dtype(dtype):
            offsets[column.name] = (start, column.width)
            start += column.width
        return offsets

    @property
    def row_bytes(self) -> int:
        return 8 * self.width("int64") + 4 * self.width("float32")

    @property
    def record_bytes(self) -> int:
        return BLOCK_HEADER_BYTES + self.block_examples * self.row_bytes


BLOCK_HEADER_BYTES = 24  # 8-byte salted farmhash64 fingerprint, int64 rows, int64 block index in its file
BLOCK_FORMAT = 2  # the header above; format 1 (rows, index, fingerprint of the payload alone) is refused


class SplitBlocks(Contract):
    """Where a split's blocks are and how many examples each file holds: every block but a file's last is full."""

    files: dict[str, int] = Field(description="block file, relative to the manifest's directory → examples in it")
    block_examples: int = Field(ge=1)

    @property
    def examples(self) -> int:
        return sum(self.files.values())

    def blocks_in(self, file: str) -> int:
        return -(-self.files[file] // self.block_examples)

    @property
    def blocks(self) -> int:
        return sum(self.blocks_in(f) for f in self.files)

    @property
    def partial_blocks(self) -> dict[str, int]:
        """file → rows of its last block, for the files whose last block is not full."""
        return {f: n % self.block_examples for f, n in self.files.items() if n % self.block_examples}


class DayCount(Contract):
    """One UTC day of a split: its examples and positive labels per task."""

    date: str = Field(description="YYYY-MM-DD (UTC)")
    examples: int
    positives: dict[str, int] = Field(default_factory=dict, description="positive labels per task")


class SplitInfo(Contract):
    examples: int
    label_rates: dict[str, float]
    file_pattern: str = Field(description="glob of gzip TFRecord shards of per-example tf.Examples, relative to "
                              "the manifest's directory: what a manifest without `blocks` (written before them) "
                              "trains from; preprocess now writes blocks only, so it matches no file beside them")
    blocks: SplitBlocks | None = Field(
        None, description="the same examples in training-ready blocks (what the trainer reads when present)"
    )
    bayes_logloss: dict[str, float] | None = Field(
        None, description="log-loss of the true probabilities per task (synthetic logs only)"
    )
    positives: dict[str, int] = Field(default_factory=dict, description="positive labels per task")
    days: list[DayCount] = Field(
        default_factory=list, description="per UTC day, oldest first (train and calibration splits; empty in "
        "manifests written before it): what the calibration step's day-ahead backtest reads",
    )


class TransformedFeatureSpec(Contract):
    """One entry of the transformed feature spec: the tf.Example dtype and shape the trainer parses."""

    model_config = ConfigDict(frozen=True)

    dtype: str = Field(description="TensorFlow dtype name, e.g. int64, float32")
    shape: list[int] = Field(description="fixed shape per example; [] is a scalar")


class ImpressionWindow(Contract):
    """The impression time window a scheduled (or replayed) run read: start inclusive, end exclusive (RFC 3339,
    UTC); `start` None when the run read every day before `end` (no `logs.lookback_days`)."""

    model_config = ConfigDict(frozen=True)

    start: str | None
    end: str


class InputAccount(Contract):
    """Where one stream's input went, byte for byte: every byte read is framing (line breaks, a BOM, a CSV header),
    a blank line, or a record; every record read parsed or became a dead letter. Parquet rows have no byte size:
    a Parquet file's bytes are all framing, and its rows are checked against its footer. A stream read from
    BigQuery has no account."""

    files: int = Field(description="files read")
    bytes: int = Field(description="bytes read: text after decompression; Parquet: the files' sizes")
    framing_bytes: int = Field(description="line breaks, BOMs, CSV headers (Parquet: the whole files)")
    blank_lines: int = Field(description="blank lines: skipped, not records and not invalid")
    blank_bytes: int
    records: int = Field(description="records the readers handed on (Parquet: rows in the files' footers)")
    record_bytes: int
    parsed: int = Field(description="records that parsed (some may still be dropped later: duplicates, window)")
    parsed_bytes: int
    dead_letters: int = Field(description="records that failed to parse (dead letters of the parse stage)")
    dead_letter_bytes: int

    def problems(self) -> list[str]:
        """How the account fails to balance (empty when every byte and record is accounted for)."""
        found = []
        unaccounted = self.bytes - self.framing_bytes - self.blank_bytes - self.record_bytes
        if unaccounted:
            found.append(f"{unaccounted:,} of {self.bytes:,} bytes read are neither framing, blank lines nor records")
        if self.records != self.parsed + self.dead_letters:
            found.append(f"{self.records:,} records read but {self.parsed:,} parsed + {self.dead_letters:,} dead "
                         "letters")
        if self.record_bytes != self.parsed_bytes + self.dead_letter_bytes:
            found.append(f"{self.record_bytes:,} record bytes read but {self.parsed_bytes:,} parsed + "
                         f"{self.dead_letter_bytes:,} dead-letter bytes")
        return found


class Manifest(Contract):
    tasks: list[str]
    features: list[FeatureInfo]
    splits: dict[str, SplitInfo]
    transform_fn_dir: str = TRANSFORM_FN_DIR
    counts: dict[str, int] = Field(default_factory=dict, description="records read, joined, deduplicated, ...")
    dead_letter: dict[str, int] = Field(default_factory=dict, description="invalid records per reason")
    dead_letter_pattern: str | None = Field(None, description="glob of dead-letter JSONL ({stream, reason, raw})")
    invalid_fraction: float = Field(0.0, description="dead letters / records read")
    invalid_fraction_by_stream: dict[str, float] = Field(
        default_factory=dict, description="per stream (impressions, engagements): its dead letters / its records read"
    )
    feature_spec: dict[str, TransformedFeatureSpec] = Field(
        default_factory=dict, description="transformed feature spec: name → {dtype, shape}"
    )
    window: ImpressionWindow | None = Field(None, description="impression time window read (scheduled runs)")
    raw_eval_pattern: str | None = Field(
        None, description="glob of the eval split's raw tf.Examples (as logged, with labels), gzip TFRecords: what "
        "promotion scores the challenger and the champion on, through their raw serving signatures",
    )
    input: dict[str, InputAccount] = Field(
        default_factory=dict, description="per stream read from files: its bytes and records, accounted for",
    )
    block_layout: BlockLayout | None = Field(
        None, description="the layout of the splits' block records; None: preprocess wrote per-example records only"
    )
    mostly_missing_features: dict[str, float] = Field(
        default_factory=dict, description="features absent from more than preprocess.max_missing_share of examples "
        "→ that share",
    )
    unseen_eval_shares: dict[str, float] = Field(
        default_factory=dict, description="per id and time feature, the share of eval examples whose value never "
        "occurs in the train split (components.preprocess.unseen)",
    )
    mostly_unseen_features: dict[str, float] = Field(
        default_factory=dict, description="features whose unseen share is above preprocess.max_unseen_share → it",
    )

    def write(self, directory: str | Path) -> Path:
        path = Path(directory) / MANIFEST_FILE
        path.write_text(self.model_dump_json(indent=2))
        return path

    @classmethod
    def read(cls, directory: str | Path) -> Manifest:
        return cls.model_validate_json((Path(directory) / MANIFEST_FILE).read_text())

    def constant_ctr_logloss(self, task: str, split: str = "eval") -> float:
        """Log-loss on `split` of always predicting the train split's label rate for `task`."""
        train_rate = self.splits["train"].label_rates[task]
        rate = self.splits[split].label_rates[task]
        return binary_cross_entropy(rate, train_rate)


def binary_cross_entropy(label_rate: float, predicted: float, eps: float = 1e-7) -> float:
    """Mean log-loss of predicting `predicted` for every example when a share `label_rate` is positive."""
    p = min(max(predicted, eps), 1.0 - eps)
    return -(label_rate * math.log(p) + (1.0 - label_rate) * math.log(1.0 - p))
