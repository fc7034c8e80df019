"""Read raw log records described by config: JSONL, CSV, Parquet files or a BigQuery table/query.

Records come out raw (a line's bytes, undecoded, or a dict for Parquet/BigQuery rows) so that a record that
fails to decode or parse can go to the dead-letter output exactly as it was read.

CSV is read by records, not lines: a quoted field may hold line breaks (RFC 4180), so a record ends at the first
line break outside quotes. Each CSV file is read by one worker, from its first byte (its header) to its last.
A record that grows past `max_record_bytes` without its quotes closing is cut there, so an unbalanced quote
costs one `record_too_large` dead letter, never the rest of the file in memory.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Iterable, Iterator

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from components.logs.records import parse_timestamp

DATE_PLACEHOLDER = "{date}"
DAY_MS = 86_400_000


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


def matching_patterns(patterns: list[str]) -> list[str]:
    """The patterns that match at least one file (a day without logs is not an error; no logs at all is)."""
    matched = [p for p in patterns if any(r.metadata_list for r in FileSystems.match([p]))]
    if not matched:
        raise FileNotFoundError(f"no log files match {patterns}")
    return matched


def csv_header(pattern: str, delimiter: str) -> list[str]:
    """Column names from the first line of the first file matching `pattern`."""
    import csv

    first = sorted(m.path for r in FileSystems.match([pattern]) for m in r.metadata_list)[0]
    with FileSystems.open(first) as handle:
        line = handle.readline()
    try:
        return next(csv.reader([line.decode("utf-8-sig")], delimiter=delimiter))
    except (UnicodeDecodeError, StopIteration):
        raise ValueError(f"the CSV header of {first} is empty or not UTF-8") from None


def csv_records(lines: Iterable[bytes], delimiter: str = ",", quote: str = '"',
                max_record_bytes: int | None = None) -> Iterator[bytes]:
    """The CSV records of a file's lines (each with its line break), without their final line break.

    A line break inside a quoted field continues the record. A record longer than `max_record_bytes` whose quotes
    are still open is yielded as it stands (it becomes a `record_too_large` dead letter) and reading restarts.
    """
    delimiter_byte, quote_byte = delimiter.encode(), quote.encode()
    parts: list[bytes] = []
    size = 0
    scanner = _QuoteScanner(delimiter_byte[0], quote_byte[0])
    for line in lines:
        parts.append(line)
        size += len(line)
        if scanner.in_quotes or quote_byte in line:
            scanner.scan(line)
        if scanner.in_quotes and (max_record_bytes is None or size <= max_record_bytes):
            continue
        yield _without_line_break(b"".join(parts))
        parts, size, scanner = [], 0, _QuoteScanner(delimiter_byte[0], quote_byte[0])
    if parts:
        yield _without_line_break(b"".join(parts))  # a quote still open at the end of the file


class _QuoteScanner:
    """Whether a CSV record is inside a quoted field after the bytes seen so far. A quote opens a quoted field
    only at a field's start (elsewhere it is a literal character); inside one, a doubled quote is an escaped quote."""

    def __init__(self, delimiter: int, quote: int):
        self.delimiter, self.quote = delimiter, quote
        self.in_quotes = False
        self.at_field_start = True

    def scan(self, line: bytes) -> None:
        index, end = 0, len(line)
        while index < end:
            byte = line[index]
            if self.in_quotes:
                if byte == self.quote:
                    if index + 1 < end and line[index + 1] == self.quote:
                        index += 1  # "" inside quotes
                    else:
                        self.in_quotes = False
            elif byte == self.delimiter or byte in (10, 13):
                self.at_field_start = True
            elif byte == self.quote and self.at_field_start:
                self.in_quotes, self.at_field_start = True, False
            else:
                self.at_field_start = False
            index += 1


def _without_line_break(record: bytes) -> bytes:
    if record.endswith(b"\n"):
        record = record[:-1]
    return record[:-1] if record.endswith(b"\r") else record


class _CsvFileRecords(beam.DoFn):
    """One matched CSV file → its records after the header."""

    def __init__(self, delimiter: str, max_record_bytes: int | None):
        super().__init__()
        self.delimiter = delimiter
        self.max_record_bytes = max_record_bytes

    def process(self, readable_file):
        with readable_file.open() as handle:
            records = csv_records(iter(handle.readline, b""), self.delimiter, max_record_bytes=self.max_record_bytes)
            next(records, None)  # the header
            yield from records


class ReadLogRecords(beam.PTransform):
    """Every record of one stream: text lines (JSONL), CSV records without the header (a record may span lines),
    or dicts (Parquet, BigQuery)."""

    def __init__(self, source: str, file_format: str, window: LogWindow = LogWindow(), extra_days_after: int = 0,
                 csv_delimiter: str = ",", max_record_bytes: int | None = None):
        super().__init__()
        self.source = source
        self.file_format = file_format
        self.window = window
        self.extra_days_after = extra_days_after
        self.csv_delimiter = csv_delimiter
        self.max_record_bytes = max_record_bytes

    def expand(self, pbegin):
        if self.file_format == "bigquery":
            is_query = self.source.lstrip().lower().startswith(("select", "with"))
            read_bigquery = (
                beam.io.ReadFromBigQuery(query=self.source, use_standard_sql=True)
                if is_query
                else beam.io.ReadFromBigQuery(table=self.source)
            )
            return pbegin | "ReadBigQuery" >> read_bigquery | "JsonSafe" >> beam.Map(_json_safe)
        patterns = matching_patterns(expand_pattern(self.source, self.window, self.extra_days_after))
        if self.file_format == "csv":
            from apache_beam.io import fileio

            return (
                pbegin
                | "CsvPatterns" >> beam.Create(patterns)
                | "MatchCsv" >> fileio.MatchAll()
                | "SpreadCsvFiles" >> beam.Reshuffle()
                | "OpenCsv" >> fileio.ReadMatches()
                | "CsvRecords" >> beam.ParDo(_CsvFileRecords(self.csv_delimiter, self.max_record_bytes))
            )
        reads = []
        for index, pattern in enumerate(patterns):
            if self.file_format == "parquet":
                read = beam.io.ReadFromParquet(pattern) | f"JsonSafe{index}" >> beam.Map(_json_safe)
            else:
                read = beam.io.ReadFromText(pattern, coder=beam.coders.BytesCoder())
            reads.append(pbegin | f"Read{index}" >> read)
        return reads[0] if len(reads) == 1 else tuple(reads) | "FlattenDays" >> beam.Flatten()


def _json_safe(row: dict) -> dict:
    """Parquet/BigQuery values (datetimes, decimals, numpy) as JSON-representable Python values."""
    return json.loads(json.dumps(row, default=str))


def _date_of(timestamp_ms: int) -> dt.date:
    return dt.datetime.fromtimestamp(timestamp_ms / 1000, tz=dt.timezone.utc).date()
