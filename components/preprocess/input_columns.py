"""Which source columns the config reads from each log stream, checked against the input's header before Beam runs.

A CSV header (or a Parquet schema) that spells a configured column differently (`..ip` for `ip`) would otherwise
run to the end with that feature absent from every example. JSONL and BigQuery rows have no header to check:
their absent columns show up as the feature's missing share (`preprocess.max_missing_share`).

A feature is a column of the logs unless preprocess derives it (`logged_features`): a `time` part comes from the
impression time, a `history` feature from earlier examples of its ids (which are columns, checked as such).
"""

from __future__ import annotations

from dataclasses import dataclass

from apache_beam.io.filesystems import FileSystems

from components.logs.readers import any_day, csv_header, matched_files
from configs.features import Feature
from configs.logs import EVENT_TYPE, IMPRESSION_ID, TIMESTAMP
from configs.slices import PreprocessStepConfig


class MissingInputColumns(ValueError):
    """A column the config reads is absent from the header of the input file."""


@dataclass(frozen=True)
class RequiredColumn:
    column: str
    configured_by: str  # the config field that asks for it, e.g. "features.0 (ip)"


DERIVED_KINDS = ("time", "history")  # features preprocess computes rather than reads


def logged_features(features: list[Feature]) -> list[tuple[int, Feature]]:
    """(index in the config, feature) of each feature read from a column of the impression logs."""
    return [(index, feature) for index, feature in enumerate(features) if feature.kind not in DERIVED_KINDS]


def impression_columns(config: PreprocessStepConfig) -> list[RequiredColumn]:
    """The impression (or outcome-table) columns the config reads."""
    logs = config.logs
    required = [RequiredColumn(logs.impression_column(TIMESTAMP), _mapped(logs.impression_fields, TIMESTAMP, "impression_fields"))]
    if logs.label_mode == "engagements" or IMPRESSION_ID in logs.impression_fields:
        required.append(RequiredColumn(logs.impression_column(IMPRESSION_ID),
                                       _mapped(logs.impression_fields, IMPRESSION_ID, "impression_fields")))
    for index, feature in logged_features(config.features):
        where = f"features.{index} ({feature.name})"
        if feature.name in logs.impression_fields:
            where += f" via logs.impression_fields.{feature.name}"
        required.append(RequiredColumn(logs.impression_column(feature.name), where))
    if logs.label_mode == "outcome":
        required += [
            RequiredColumn(task.label_column, f"tasks.{index}.label_column ({task.name})")
            for index, task in enumerate(config.tasks) if task.label_column is not None
        ]
    return required


def engagement_columns(config: PreprocessStepConfig) -> list[RequiredColumn]:
    logs = config.logs
    return [RequiredColumn(logs.engagement_column(name), _mapped(logs.engagement_fields, name, "engagement_fields"))
            for name in (IMPRESSION_ID, EVENT_TYPE, TIMESTAMP)]


def input_header(path: str, file_format: str, csv_delimiter: str = ",") -> tuple[str, list[str]] | None:
    """(first file, its column names) for CSV and Parquet inputs of a configured path (`{date}`: any day); None for
    formats without a header."""
    if file_format not in ("csv", "parquet"):
        return None
    files = matched_files(any_day(path))
    if not files:
        return None  # the reader says that no file matches, naming the pattern
    if file_format == "csv":
        return files[0], csv_header(path, csv_delimiter)
    import pyarrow.parquet as pq

    with FileSystems.open(files[0]) as handle:
        return files[0], list(pq.read_schema(handle).names)


def check_input_columns(stream: str, pattern: str, file_format: str, required: list[RequiredColumn],
                        csv_delimiter: str = ",") -> None:
    """Raise `MissingInputColumns` naming every configured column the input lacks, and the columns it has."""
    header = input_header(pattern, file_format, csv_delimiter)
    if header is None:
        return
    path, columns = header
    present = set(columns)
    absent = [column for column in required if column.column not in present]
    if not absent:
        return
    names = "; ".join(f"'{c.column}' (configured by {c.configured_by})" for c in absent)
    raise MissingInputColumns(
        f"{stream}: {path} has no column {names}; its columns are: {', '.join(repr(c) for c in columns)}. "
        f"Rename the column in the file or map it with logs.{stream[:-1]}_fields"
    )


def _mapped(fields: dict[str, str], name: str, section: str) -> str:
    return f"logs.{section}.{name}" if name in fields else f"adrank's default column name for {name}"
