"""Read raw log records described by config: JSONL, CSV, Parquet files or a BigQuery table/query.

Records come out raw (a line's bytes, undecoded, or a dict for Parquet/BigQuery rows) so that a record that
fails to decode or parse can go to the dead-letter output exactly as it was read. Next to them, one `FileTally`
per file says where its bytes went (records, blank lines, framing), so the preprocess manifest can account for
every input byte.

`ReadLogChunks` hands them on in chunks, which the preprocess job parses column-wise (a list of at most
`CHUNK_RECORDS` records and `CHUNK_BYTES` bytes of a text file; a Parquet row group's table, cut to
`CHUNK_RECORDS` rows; a list of BigQuery rows); `ReadLogRecords` one by one.

Each JSONL or CSV file is read by one worker, from its first byte to its last (`components.logs.text_files`:
decompression that fails loudly at a truncated stream, BOMs, blank lines, CSV records spanning lines and the
cut-back of an unbalanced quote).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from components.logs.records import parse_timestamp
from components.logs.text_files import (
    FileTally,
    TextLogFile,
    check_readable_compression,
    csv_file_records,
    jsonl_record_lists,
)

DATE_PLACEHOLDER = "{date}"
RECORDS = "records"  # the outputs of ReadLogRecords (records) and ReadLogChunks (chunks of them)
FILES = "files"
DAY_MS = 86_400_000
CHUNK_RECORDS = 8192
CHUNK_BYTES = 8 * 2**20


@dataclass(frozen=True)
class LogWindow:
    """Impressions with start_ms <= t < end_ms are read (None: unbounded on that side)."""

    start_ms: int | None = None
    end_ms: int | None = None

    @classmethod
    def ending_at(cls, window_end: str | None, lookback_days: int | None) -> LogWindow:
        if window_end is None:
            return cls()
        end = parse_timestamp(window_end)
        return cls(end - lookback_days * DAY_MS if lookback_days else None, end)

    def contains(self, timestamp_ms: int) -> bool:
        return (self.start_ms is None or timestamp_ms >= self.start_ms) and (
            self.end_ms is None or timestamp_ms < self.end_ms
        )

    def dates(self) -> list[dt.date] | None:
        """The UTC days the window touches, or None when it has no start (read every day)."""
        if self.start_ms is None or self.end_ms is None:
            return None
        first = _date_of(self.start_ms)
        last = _date_of(self.end_ms - 1)
        return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]


def expand_pattern(pattern: str, window: LogWindow, extra_days_after: int = 0) -> list[str]:
    """`{date}` → one pattern per day of the window (plus `extra_days_after` days for late events),
    or `*` when the window has no start."""
    if DATE_PLACEHOLDER not in pattern:
        return [pattern]
    dates = window.dates()
    if dates is None:
        return [pattern.replace(DATE_PLACEHOLDER, "*")]
    dates += [dates[-1] + dt.timedelta(days=i + 1) for i in range(extra_days_after)]
    return [pattern.replace(DATE_PLACEHOLDER, day.isoformat()) for day in dates]


def match_pattern(path: str) -> str:
    """A configured log path (`{date}` expanded) as the pattern Beam's file systems match: `*` and `**` are wildcards
    and every other character is itself. (`?` and `[...]` are pattern syntax to Beam: a directory `logs[1]/` would
    match its sibling `logs1/` and read another day's logs without a word.)"""
    return "".join("[?]" if c == "?" else "[[]" if c == "[" else c for c in path)


def matched_files(path: str) -> list[str]:
    """The files a configured path (`{date}` expanded) names, sorted."""
    return sorted(m.path for r in FileSystems.match([match_pattern(path)]) for m in r.metadata_list)


def matching_patterns(patterns: list[str]) -> list[str]:
    """The patterns (as `match_pattern` writes them) of the configured paths that match at least one file (a day
    without logs is not an error; no logs at all is)."""
    matched = [match_pattern(p) for p in patterns if matched_files(p)]
    if not matched:
        raise FileNotFoundError(f"no log files match {patterns}")
    return matched


def any_day(path: str) -> str:
    """A configured path with `{date}` matching any day."""
    return path.replace(DATE_PLACEHOLDER, "*")


def csv_column_names(path: str, delimiter: str, header: str, configured: list[str]) -> list[str]:
    """A CSV stream's column names in file order: its first file's header (`logs.csv_header: first_row`), or the
    names the config lists for a file without one (`none`: `logs.csv_columns` / `logs.engagement_csv_columns`)."""
    return list(configured) if header == "none" else csv_header(path, delimiter)


def csv_header(path: str, delimiter: str) -> list[str]:
    """Column names from the first line of the first file a configured path names (`{date}`: any day)."""
    import csv

    paths = matched_files(any_day(path))
    if not paths:
        raise FileNotFoundError(f"no log files match {[any_day(path)]}")
    first = paths[0]
    with FileSystems.open(first) as handle:
        line = handle.readline()
    try:
        return next(csv.reader([line.decode("utf-8-sig")], delimiter=delimiter))
    except (UnicodeDecodeError, StopIteration):
        raise ValueError(f"the CSV header of {first} is empty or not UTF-8") from None


class _TextFileChunks(beam.DoFn):
    """One matched JSONL or CSV file → its records in chunks (lists of bytes, in file order); tagged `FILES`: its
    `FileTally` (`components.logs.text_files`)."""

    def __init__(self, file_format: str, delimiter: str, max_record_bytes: int | None, max_record_lines: int | None,
                 csv_has_header: bool = True):
        super().__init__()
        self.file_format = file_format
        self.delimiter = delimiter
        self.csv_has_header = csv_has_header
        self.max_record_bytes = max_record_bytes
        self.max_record_lines = max_record_lines

    def process(self, readable_file):
        path = readable_file.metadata.path
        check_readable_compression(path)
        with readable_file.open(compression_type=CompressionTypes.UNCOMPRESSED) as raw:
            log_file = TextLogFile(path, raw, readable_file.metadata.size_in_bytes)
            if self.file_format == "csv":
                items: Iterator[Any] = csv_file_records(log_file, self.delimiter, self.max_record_bytes,
                                                        self.max_record_lines, self.csv_has_header)
            else:
                items = jsonl_record_lists(log_file)
            chunks = RecordChunks()
            for item in items:
                if isinstance(item, FileTally):
                    yield from chunks.rest()
                    yield beam.pvalue.TaggedOutput(FILES, item)
                    return
                if isinstance(item, list):
                    yield from chunks.add_many(item)
                else:
                    yield from chunks.add(item)


class RecordChunks:
    """Text records → chunks of them in order, each cut at its `CHUNK_RECORDS`-th record or at the record that
    brings it to `CHUNK_BYTES` bytes, whichever comes first; the rest at the end (`rest`)."""

    def __init__(self):
        self.chunk: list[bytes] = []
        self.size = 0

    def add(self, record: bytes) -> Iterator[list[bytes]]:
        self.chunk.append(record)
        self.size += len(record)
        if len(self.chunk) >= CHUNK_RECORDS or self.size >= CHUNK_BYTES:
            yield self.chunk
            self.chunk, self.size = [], 0

    def add_many(self, records: list[bytes]) -> Iterator[list[bytes]]:
        """`add` each of `records`, the cuts found on the list's running byte sums rather than record by record."""
        ends = np.cumsum(np.fromiter(map(len, records), dtype=np.int64, count=len(records)))
        start = 0
        while start < len(records):
            before = int(ends[start - 1]) if start else 0
            by_bytes = int(np.searchsorted(ends, CHUNK_BYTES - self.size + before, side="left"))
            cut = min(by_bytes, start + CHUNK_RECORDS - len(self.chunk) - 1)
            if cut >= len(records):
                self.chunk.extend(records[start:])
                self.size += int(ends[-1]) - before
                return
            self.chunk.extend(records[start:cut + 1])
            yield self.chunk
            self.chunk, self.size = [], 0
            start = cut + 1

    def rest(self) -> Iterator[list[bytes]]:
        if self.chunk:
            yield self.chunk
        self.chunk, self.size = [], 0


def parquet_tally(metadata) -> FileTally:
    """A Parquet file's rows (from its footer) and size: what `ReadFromParquet` must hand on, row for row."""
    import pyarrow.parquet as pq

    with FileSystems.open(metadata.path) as handle:
        rows = pq.ParquetFile(handle).metadata.num_rows
    size = metadata.size_in_bytes
    return FileTally(metadata.path, bytes=size, framing_bytes=size, records=rows)


class ReadLogChunks(beam.PTransform):
    """Every record of one stream in chunks, and what each file held.

    Returns `{RECORDS: chunks, FILES: tallies}`: a chunk is a list of text records (JSONL lines, or CSV records
    without the header, which may span lines; bytes), a `pyarrow.Table` of Parquet rows, or a list of BigQuery rows
    (dicts); `FILES` holds one `FileTally` per file read (none for BigQuery). A truncated or corrupt compressed file
    fails the job, naming the file and the offset. `csv_has_header` false (`logs.csv_header: none`): a CSV file's
    first record is a record like the others."""

    def __init__(self, source: str, file_format: str, window: LogWindow = LogWindow(), extra_days_after: int = 0,
                 csv_delimiter: str = ",", max_record_bytes: int | None = None, max_record_lines: int | None = None,
                 csv_has_header: bool = True):
        super().__init__()
        self.csv_has_header = csv_has_header
        self.source = source
        self.file_format = file_format
        self.window = window
        self.extra_days_after = extra_days_after
        self.csv_delimiter = csv_delimiter
        self.max_record_bytes = max_record_bytes
        self.max_record_lines = max_record_lines

    def expand(self, pbegin):
        if self.file_format == "bigquery":
            is_query = self.source.lstrip().lower().startswith(("select", "with"))
            read_bigquery = (
                beam.io.ReadFromBigQuery(query=self.source, use_standard_sql=True)
                if is_query
                else beam.io.ReadFromBigQuery(table=self.source)
            )
            chunks = (pbegin | "ReadBigQuery" >> read_bigquery | "JsonSafe" >> beam.Map(_json_safe)
                      | "Chunks" >> beam.BatchElements(min_batch_size=CHUNK_RECORDS, max_batch_size=CHUNK_RECORDS))
            return {RECORDS: chunks, FILES: pbegin | "NoFiles" >> beam.Create([])}
        from apache_beam.io import fileio

        patterns = matching_patterns(expand_pattern(self.source, self.window, self.extra_days_after))
        files = pbegin | "Patterns" >> beam.Create(patterns) | "Match" >> fileio.MatchAll()
        if self.file_format == "parquet":
            reads = [pbegin | f"Read{index}" >> beam.io.ReadFromParquetBatched(pattern)
                     for index, pattern in enumerate(patterns)]
            tables = reads[0] if len(reads) == 1 else tuple(reads) | "FlattenDays" >> beam.Flatten()
            chunks = tables | "RowGroupChunks" >> beam.FlatMap(
                lambda table: [table.slice(start, CHUNK_RECORDS) for start in range(0, table.num_rows, CHUNK_RECORDS)])
            return {RECORDS: chunks, FILES: files | "ParquetFooters" >> beam.Map(parquet_tally)}
        read = (
            files
            | "SpreadFiles" >> beam.Reshuffle()
            | "Open" >> fileio.ReadMatches()
            | "Chunks" >> beam.ParDo(_TextFileChunks(self.file_format, self.csv_delimiter, self.max_record_bytes,
                                                     self.max_record_lines, self.csv_has_header)
                                     ).with_outputs(FILES, main=RECORDS)
        )
        return {RECORDS: read[RECORDS], FILES: read[FILES]}


def chunk_records(chunk) -> list:
    """The records of a chunk one by one: text records as bytes, Parquet and BigQuery rows as JSON-safe dicts."""
    import pyarrow as pa

    if isinstance(chunk, pa.Table):
        return [_json_safe(row) for row in chunk.to_pylist()]
    return list(chunk)


class ReadLogRecords(beam.PTransform):
    """Every record of one stream, one by one (`ReadLogChunks`, flattened), and what each file held:
    `{RECORDS: records, FILES: tallies}`."""

    def __init__(self, source: str, file_format: str, window: LogWindow = LogWindow(), extra_days_after: int = 0,
                 csv_delimiter: str = ",", max_record_bytes: int | None = None, max_record_lines: int | None = None,
                 csv_has_header: bool = True):
        super().__init__()
        self.chunks = ReadLogChunks(source, file_format, window, extra_days_after, csv_delimiter, max_record_bytes,
                                    max_record_lines, csv_has_header)

    def expand(self, pbegin):
        read = pbegin | "ReadLogChunks" >> self.chunks
        return {RECORDS: read[RECORDS] | "OneByOne" >> beam.FlatMap(chunk_records), FILES: read[FILES]}


def _json_safe(row: dict) -> dict:
    """Parquet/BigQuery values (datetimes, decimals, numpy) as JSON-representable Python values."""
    return json.loads(json.dumps(row, default=str))


def _date_of(timestamp_ms: int) -> dt.date:
    return dt.datetime.fromtimestamp(timestamp_ms / 1000, tz=dt.timezone.utc).date()
