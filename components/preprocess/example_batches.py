"""What a batch of parsed records is: an Arrow record batch with one typed column per field, and its conversions to
and from the per-record dicts of `components.preprocess.parse` (which stay the reference, and the fallback for
records the columnar parser does not take).

    impressions (and examples):  impression_id string (null: none) · timestamp_ms int64 · one column per logged
                                 feature · label_<task> float64 (outcome mode; the join adds them otherwise)
    engagements:                 impression_id string · event_type string · timestamp_ms int64

A feature's column holds what the per-record parser gives, with absence as Arrow sees it: a categorical is a
string, null where absent (the dict form fills `__missing__`); a categorical list is a list of strings, empty
where absent; a number is a float64, null where absent (the dict form fills the feature's default). So a split's
missing values are null counts and empty lists, and the defaults are filled once, where tf.Transform's input is
built (`components.preprocess.transform`). History features add float64 columns (`components.preprocess.history`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from components.preprocess.parse import MISSING, MISSING_TOKEN, TIMESTAMP_MS, FeatureField
from configs.logs import EVENT_TYPE, IMPRESSION_ID

STRING = pa.string()
STRING_LIST = pa.list_(pa.string())
ENGAGEMENT_SCHEMA = pa.schema([(IMPRESSION_ID, STRING), (EVENT_TYPE, STRING), (TIMESTAMP_MS, pa.int64())])


def arrow_type(kind: str) -> pa.DataType:
    """The column type of a logged feature of `kind`."""
    return {"categorical": STRING, "categorical_list": STRING_LIST}.get(kind, pa.float64())


@dataclass(frozen=True)
class ImpressionColumns:
    """The columns of an impression batch: the logged features (in config order) and the outcome labels."""

    features: tuple[FeatureField, ...]
    labels: tuple[str, ...] = ()

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([(IMPRESSION_ID, STRING), (TIMESTAMP_MS, pa.int64())]
                         + [(f.name, arrow_type(f.kind)) for f in self.features]
                         + [(label, pa.float64()) for label in self.labels])

    def from_records(self, records: Sequence[dict[str, Any]]) -> pa.RecordBatch:
        """Parsed records (`ImpressionParser`'s dicts) as a batch: a feature listed in `_missing` is absent."""
        columns: dict[str, list] = {name: [] for name in self.schema.names}
        for record in records:
            missing = set(record[MISSING])
            columns[IMPRESSION_ID].append(record[IMPRESSION_ID])
            columns[TIMESTAMP_MS].append(record[TIMESTAMP_MS])
            for feature in self.features:
                value = record[feature.name]
                columns[feature.name].append(None if feature.name in missing and feature.kind != "categorical_list"
                                             else value)
            for label in self.labels:
                columns[label].append(record[label])
        return pa.RecordBatch.from_pydict(columns, schema=self.schema)


def engagements_from_records(records: Sequence[dict[str, Any]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([{name: r[name] for name in ENGAGEMENT_SCHEMA.names} for r in records],
                                      schema=ENGAGEMENT_SCHEMA)


def as_records(batch: pa.RecordBatch, rows: Iterable[int], features: Sequence[FeatureField]) -> list[dict[str, Any]]:
    """Rows of an impression or example batch as the per-record parser's dicts, defaults filled, without
    `_missing`: what a dead letter of a later stage (an implausible time) holds as `raw`, key for key."""
    by_name = {f.name: f for f in features}
    records = []
    for row in batch.take(pa.array(list(rows), pa.int64())).to_pylist():
        for name, feature in by_name.items():
            if name in row and row[name] is None:
                row[name] = MISSING_TOKEN if feature.kind == "categorical" else feature.default
        records.append(row)
    return records


def record_dicts(batch: pa.RecordBatch, rows: Sequence[int], features: Sequence[FeatureField]) -> list[dict[str, Any]]:
    """Rows as the per-record parser's dicts, `_missing` included (what `join.attribute` breaks ties by)."""
    records = as_records(batch, rows, features)
    for record, row in zip(records, rows):
        record[MISSING] = [f.name for f in features if _absent(batch, f, row)]
    return records


def _absent(batch: pa.RecordBatch, feature: FeatureField, row: int) -> bool:
    value = batch.column(feature.name)[row].as_py()
    return value == [] if feature.kind == "categorical_list" else value is None


def missing_counts(batch: pa.RecordBatch, features: Sequence[FeatureField]) -> dict[str, int]:
    """Examples of the batch whose value of each logged feature was absent."""
    counts = {}
    for feature in features:
        column = batch.column(feature.name)
        if feature.kind == "categorical_list":
            counts[feature.name] = int(np.count_nonzero(np.diff(np.asarray(column.offsets)) == 0))
        else:
            counts[feature.name] = column.null_count
    return counts


def concat(batches: Sequence[pa.RecordBatch], schema: pa.Schema) -> pa.RecordBatch:
    """One batch of every row of `batches`, in order (an empty batch of `schema` for none)."""
    if not sum(batch.num_rows for batch in batches):
        return pa.RecordBatch.from_pylist([], schema=schema)
    return pa.Table.from_batches(batches, schema=schema).combine_chunks().to_batches()[0]


def slices(batch: pa.RecordBatch, max_rows: int) -> list[pa.RecordBatch]:
    """`batch` cut into consecutive batches of at most `max_rows` rows (none for an empty batch)."""
    return [batch.slice(start, max_rows) for start in range(0, batch.num_rows, max_rows)]


def byte_slices(batch: pa.RecordBatch, max_bytes: int) -> list[pa.RecordBatch]:
    """`batch` cut into consecutive zero-copy slices of about `max_bytes` of Arrow data each (at least one row a
    slice; a batch within `max_bytes` whole, none for an empty batch)."""
    if batch.num_rows and batch.nbytes <= max_bytes:
        return [batch]
    return slices(batch, max(1, max_bytes * batch.num_rows // max(1, batch.nbytes)))
