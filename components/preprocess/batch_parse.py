"""A chunk of raw log records → a record batch of typed columns (`example_batches`) and dead letters, column by
column, with exactly the outcome of parsing each record on its own (`parse.ImpressionParser`,
`parse.EngagementParser`): the same records valid, the same values, the same dead-letter reason for each bad one.

    JSON lines ──► pyarrow's JSON reader (the chunk at once) ─┐
    CSV records ─► pyarrow's CSV reader (records without quotes)├─► per field, a vectorized conversion ─► batch
    Parquet row groups, BigQuery rows (tables) ───────────────┘    + {row: reason} ──► first reason per row in
                                                                     parse order ──► dead letters

Every step is taken column-wise only where it is provably the per-record parser's: a string's edges checked for
Python's whitespace before it is trusted unstripped, numbers in plain decimal notation (Arrow and Python both round
correctly), times in one strict RFC 3339 or `%Y-%m-%d %H:%M:%S` shape. Anything else is handed to the per-record
functions of `parse`: the values of one column that need it (`_per_value`), or the whole chunk (a JSON chunk
Arrow refuses: a duplicate key, a control character, an array on a line, two objects on one line; a JSON number
too large for int64, which Arrow reads as a float but Python as an exact integer id), or single records (CSV
records with quotes, NUL or CR, whose quoting rules differ). A record longer than `max_record_bytes` is
`record_too_large` before anything reads it. The raw record of a dead letter is the record as read.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from components.preprocess.example_batches import (
    ENGAGEMENT_SCHEMA,
    STRING,
    STRING_LIST,
    ImpressionColumns,
    engagements_from_records,
)
from components.preprocess.parse import (
    EARLIEST_MS,
    LATEST_MS,
    TIMESTAMP_MS,
    EngagementParser,
    FeatureField,
    ImpressionParser,
    InvalidRecord,
    ParseOutcomes,
    TimestampParser,
    dead_letter,
    feature_number,
    identifier,
    outcome_flag,
)
from configs.logs import EVENT_TYPE, IMPRESSION_ID

# Python's str.strip() removes exactly the characters for which str.isspace() is true
_SPACE_CLASS = "[" + "".join(f"\\x{{{c:x}}}" for c in range(sys.maxunicode + 1) if chr(c).isspace()) + "]"
_EDGE_SPACE = f"^{_SPACE_CLASS}|{_SPACE_CLASS}$"
_ONLY_SPACE = f"^{_SPACE_CLASS}*$"
_DECIMAL = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_DATE = r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
_CLOCK = r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
# time shapes read column-wise, each as the ISO text Arrow parses: (timestamp_format, pattern, text → ISO)
_RFC3339_UTC = rf"^{_DATE}T{_CLOCK}(\.[0-9]{{3}})?Z$"
_PLAIN_SECONDS = rf"^{_DATE} {_CLOCK}$"
# A control character (inside a string Python refuses it, between tokens Arrow may not; \n only separates records)
# and a byte-order mark (Arrow skips one at a line's start, Python refuses it) send a chunk to Python.
_CONTROL_BYTES = bytes(range(0x20)).replace(b"\n", b"")
_NOT_CONTROL_BYTES = bytes(sorted(set(range(256)) - set(_CONTROL_BYTES)))
BOM = b"\xef\xbb\xbf"
_INT64_EDGE = 2.0**63
# Every byte of a character for which str.isspace() is true: the ASCII ones, and any byte of a multi-byte UTF-8
# character (all non-ASCII spaces are). A string column none of whose bytes is among them has no space at its edges.
_SPACE_BYTES = bytes([*range(0x09, 0x0E), *range(0x1C, 0x21), *range(0x80, 0x100)])
_NOT_SPACE_BYTES = bytes(sorted(set(range(256)) - set(_SPACE_BYTES)))

Failures = dict[int, str]


class _WholeChunk(Exception):
    """The chunk must be parsed record by record (a column whose values Arrow may have read differently)."""


@dataclass
class ParsedChunk:
    """What a chunk became: its valid records as a batch, its dead letters, and the outcome counts (`ParseOutcomes`,
    the manifest's input accounting)."""

    batch: pa.RecordBatch
    dead_letters: list[dict] = field(default_factory=list)
    outcomes: ParseOutcomes = field(default_factory=ParseOutcomes)


@dataclass(frozen=True)
class ChunkParser:
    """Parses chunks of one stream's raw records: `parser` is the per-record parser whose outcome it reproduces."""

    stream: str
    parser: ImpressionParser | EngagementParser
    # top-level columns Arrow read as a time in an earlier chunk, read as text from the start in later ones
    json_text_columns: dict[str, pa.DataType] = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def impressions(self) -> ImpressionColumns | None:
        if isinstance(self.parser, ImpressionParser):
            return ImpressionColumns(self.parser.features, tuple(label.name for label in self.parser.outcome_labels))
        return None

    @property
    def schema(self) -> pa.Schema:
        columns = self.impressions
        return columns.schema if columns is not None else ENGAGEMENT_SCHEMA

    def parse_text(self, records: Sequence[bytes]) -> ParsedChunk:
        """JSON lines or CSV records (bytes, as `components.logs.text_files` frames them)."""
        decoder = self.parser.decoder
        limit = decoder.max_record_bytes
        oversized = ({} if limit is None else
                     {int(i): "record_too_large" for i in np.flatnonzero(_lengths(records) > limit)})
        rest = [i for i in range(len(records)) if i not in oversized] if oversized else list(range(len(records)))
        kept = [records[i] for i in rest] if oversized else records
        if decoder.file_format == "csv":
            table, table_rows, one_by_one = _csv_table(kept, decoder.csv_columns, decoder.csv_delimiter)
            table_rows, one_by_one = [rest[i] for i in table_rows], [rest[i] for i in one_by_one]
        else:
            table = _json_table(kept, self.json_text_columns)
            table_rows, one_by_one = (rest, []) if table is not None else ([], rest)
        return self._assemble(records, len(records), oversized, table, table_rows, one_by_one, "text")

    def parse_rows(self, rows: Sequence[dict]) -> ParsedChunk:
        """BigQuery rows (JSON-safe dicts): as a table when Arrow can type each column, else one by one."""
        try:
            table = pa.Table.from_pylist(list(rows))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            return self._assemble(None, len(rows), {}, None, [], list(range(len(rows))), "typed",
                                  rows_table=None, rows=rows)
        return self.parse_table(table)

    def parse_table(self, table: pa.Table) -> ParsedChunk:
        """Rows of a Parquet file or a BigQuery table (their values as `readers._json_safe` makes them JSON-safe)."""
        return self._assemble(None, table.num_rows, {}, table, list(range(table.num_rows)), [], "typed", table)

    def _assemble(self, records: Sequence[bytes] | None, count: int, failures: Failures, table: pa.Table | None,
                  table_rows: list[int], one_by_one: list[int], source: str, rows_table: pa.Table | None = None,
                  rows: Sequence[dict] | None = None) -> ParsedChunk:
        """The chunk's batch, dead letters and outcomes from what was parsed column-wise (`table`, its rows at
        `table_rows`) and what is parsed one by one (`one_by_one`: records, or rows of `rows_table` or `rows`)."""

        def raw_of(row: int) -> Any:
            if records is not None:
                return records[row]
            return rows[row] if rows is not None else _json_safe_row(rows_table, row)

        failures = dict(failures)
        parts: list[tuple[list[int], pa.RecordBatch]] = []
        if table is not None and table_rows:
            try:
                batch, table_failures = self._columns(table, source)
            except _WholeChunk:
                one_by_one = sorted(one_by_one + table_rows)
            else:
                failures.update({table_rows[i]: reason for i, reason in table_failures.items()})
                kept = [i for i in range(len(table_rows)) if i not in table_failures]
                parts.append(([table_rows[i] for i in kept], batch.take(pa.array(kept, pa.int64()))))
        if one_by_one:
            valid_rows, valid = [], []
            for row in one_by_one:
                raw = raw_of(row)
                try:
                    valid.append(self.parser(raw))
                    valid_rows.append(row)
                except InvalidRecord as error:
                    failures[row] = error.reason
                except Exception as error:  # noqa: BLE001 - a record must never be lost, whatever went wrong
                    failures[row] = f"unparsable:{type(error).__name__}"
            columns = self.impressions
            parts.append((valid_rows, columns.from_records(valid) if columns is not None
                          else engagements_from_records(valid)))
        failed = sorted(failures)
        letters = [dead_letter(self.stream, failures[row], raw_of(row)) for row in failed]
        # a row (dict) counts no bytes; text records (bytes) their length as read, summed at once
        total_bytes = sum(map(len, records)) if records is not None else 0
        failed_bytes = sum(len(records[row]) for row in failed) if records is not None else 0
        outcomes = ParseOutcomes(parsed=count - len(failed), parsed_bytes=total_bytes - failed_bytes,
                                 dead_letters=len(failed), dead_letter_bytes=failed_bytes)
        return ParsedChunk(_in_row_order(parts, self.schema), letters, outcomes)

    def _columns(self, table: pa.Table, source: str) -> tuple[pa.RecordBatch, Failures]:
        """Every field of the stream, converted column-wise; the failures of each row, first in parse order."""
        parser = self.parser
        steps: list[tuple[str, pa.Array, Failures]] = []
        present = set(table.column_names)

        def column(name: str) -> pa.Array:
            if name not in present:
                return pa.nulls(table.num_rows)
            values = table.column(name).combine_chunks()
            if source == "text" and _json_integers_beyond_int64(values):
                raise _WholeChunk(name)  # Python reads such a number as an exact integer, Arrow as a float
            return values

        required_id = isinstance(parser, EngagementParser) or parser.id_required
        ids = column(parser.id_column)
        if required_id:
            ids, missing = _required(ids, IMPRESSION_ID)
            identifiers, failures = _identifiers(ids, IMPRESSION_ID, source)
            steps.append((IMPRESSION_ID, identifiers, missing | {i: r for i, r in failures.items() if i not in missing}))
        else:
            steps.append((IMPRESSION_ID, *_identifiers(ids, IMPRESSION_ID, source)))
        if isinstance(parser, EngagementParser):
            types, missing = _required(column(parser.type_column), EVENT_TYPE)
            steps.append((EVENT_TYPE, *_event_types(types, parser.event_types, missing)))
        times, missing = _required(column(parser.timestamp_column), "timestamp")
        stamps, failures = _timestamps(times, parser.timestamps, source)
        steps.append((TIMESTAMP_MS, stamps, missing | {i: r for i, r in failures.items() if i not in missing}))
        if isinstance(parser, ImpressionParser):
            for feature in parser.features:
                steps.append((feature.name, *_feature_values(column(feature.column), feature, source)))
            for label in parser.outcome_labels:
                values, failures = _per_value(column(label.column), partial(
                    _label_value, column=label.column, positive_when=label.positive_when), source)
                steps.append((label.name, pa.array(values, pa.float64()), failures))
        merged: Failures = {}
        for _, _, failures in steps:
            for row, reason in failures.items():
                merged.setdefault(row, reason)
        arrays = {name: values for name, values, _ in steps}
        schema = self.schema
        return pa.RecordBatch.from_arrays([arrays[name].cast(schema.field(name).type) for name in schema.names],
                                          schema=schema), merged


def _label_value(value: Any, column: str, positive_when: str) -> float:
    return outcome_flag(value, column, positive_when)


def _in_row_order(parts: list[tuple[list[int], pa.RecordBatch]], schema: pa.Schema) -> pa.RecordBatch:
    """The rows of `parts` (each: its rows' positions in the chunk, and their batch) in chunk order."""
    parts = [(rows, batch) for rows, batch in parts if rows]
    if not parts:
        return pa.RecordBatch.from_pylist([], schema=schema)
    if len(parts) == 1:
        return parts[0][1]
    positions = np.concatenate([np.asarray(rows) for rows, _ in parts])
    table = pa.Table.from_batches([batch for _, batch in parts], schema=schema).combine_chunks()
    return table.take(pa.array(np.argsort(positions, kind="stable"))).combine_chunks().to_batches()[0]


# --- decoding a chunk ----------------------------------------------------------------------------------------------


def _lengths(records: Sequence[bytes]) -> np.ndarray:
    """Each record's length in bytes, as one array."""
    return np.fromiter(map(len, records), dtype=np.int64, count=len(records))


def _json_table(records: Sequence[bytes], text_columns: dict[str, pa.DataType] | None = None) -> pa.Table | None:
    """The chunk's JSON lines as one table, or None where Arrow's reading could differ from `json.loads`'.

    Arrow reads text that looks like a time as a timestamp: those columns are read again as the text they are.
    `text_columns` (the parser's own, updated here) holds the top-level ones found in earlier chunks, read as text
    from the start, so a stream's chunks are read once each, not twice: a chunk where such a column holds
    anything but text (a number, say) fails that read and is read as before; one where it is absent or null
    throughout reads it as no column (Arrow's explicit schema would add a text column of nulls; a fresh read, one of
    Arrow's null type, which `ChunkParser._columns` reads as it reads an absent one)."""
    if not records:
        return None
    text = b"\n".join(records)
    if text.translate(None, _NOT_CONTROL_BYTES) or BOM in text or not _is_utf8(text):
        return None
    known = text_columns if text_columns is not None else {}
    table = _read_json(text, known) if known else None
    if table is None:
        table = _read_json(text, {})
    if table is None:
        return None
    as_text = {f.name: _text_type(f.type) for f in table.schema if _text_type(f.type) != f.type}
    if as_text:
        table = _read_json(text, {**known, **as_text})
        if table is None:
            return None
        known.update((name, kind) for name, kind in as_text.items() if kind == STRING)
    absent = [name for name in known if name in table.column_names and table.column(name).null_count == len(table)]
    if absent:
        table = table.drop_columns(absent)
    return table if table.num_rows == len(records) else None  # `{}{}` on one line is two rows to Arrow


def _read_json(text: bytes, as_text: dict[str, pa.DataType]) -> pa.Table | None:
    """`text` as a table, the `as_text` columns with those types and the rest inferred; None where Arrow fails.
    One block, read on the calling thread: Arrow's thread pool only adds hand-offs to a one-block read (8,192
    synthetic impressions: 14.5 ms without it, 23 ms with it; docs/input.md)."""
    options = pajson.ReadOptions(block_size=len(text) + 1, use_threads=False)
    parse = (pajson.ParseOptions(explicit_schema=pa.schema(list(as_text.items())), unexpected_field_behavior="infer")
             if as_text else None)
    try:
        return pajson.read_json(io.BytesIO(text), read_options=options, parse_options=parse)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _is_utf8(text: bytes) -> bool:
    """Whether every record of the chunk is UTF-8 (Arrow's JSON reader does not check inside strings)."""
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _text_type(arrow_type: pa.DataType) -> pa.DataType:
    """`arrow_type` with every time type in it (a timestamp, a date, inferred from text) as a string."""
    if pa.types.is_temporal(arrow_type):
        return STRING
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return pa.list_(_text_type(arrow_type.value_type))
    if pa.types.is_struct(arrow_type):
        return pa.struct([pa.field(f.name, _text_type(f.type)) for f in arrow_type])
    return arrow_type


def _csv_table(records: Sequence[bytes], columns: Sequence[str],
               delimiter: str) -> tuple[pa.Table | None, list[int], list[int]]:
    """(table of the plain records, their positions, positions of the records to parse one by one): a record with a
    quote, CR or NUL is parsed by the `csv` module (its quoting and line rules), and so is one Arrow cannot split
    into as many values as the header has columns (the per-record parser names the count), or a blank one."""
    plain = [i for i, raw in enumerate(records)
             if raw.strip() and not any(byte in raw for byte in (b'"', b"\r", b"\x00"))]
    plain_set = set(plain)
    one_by_one = [i for i in range(len(records)) if i not in plain_set]
    if not plain:
        return None, [], one_by_one
    invalid: list[int] = []

    def skip(row) -> str:
        invalid.append(row.number - 1)  # 1-based line of the parsed text
        return "skip"

    text = b"\n".join(records[i] for i in plain) + b"\n"
    if not _is_utf8(text):  # a record that is not UTF-8 is `bad_encoding`, one by one
        return None, [], sorted(one_by_one + plain)
    try:
        table = pacsv.read_csv(
            io.BytesIO(text),
            read_options=pacsv.ReadOptions(column_names=list(columns), block_size=len(text) + 1),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char=False, escape_char=False,
                                              newlines_in_values=False, ignore_empty_lines=False,
                                              invalid_row_handler=skip),
            # the csv module's empty value is None (`RecordDecoder._csv_row`): Arrow reads it as null
            convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in columns}, null_values=[""],
                                                 strings_can_be_null=True, quoted_strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None, [], sorted(one_by_one + plain)
    skipped = set(invalid)
    kept = [plain[i] for i in range(len(plain)) if i not in skipped]
    if table.num_rows != len(kept):
        return None, [], sorted(one_by_one + plain)
    return table, kept, sorted(one_by_one + [plain[i] for i in skipped])


def _json_safe_row(table: pa.Table | None, row: int) -> Any:
    assert table is not None
    return _json_safe(table.slice(row, 1).to_pylist()[0])


def _json_safe(value: Any) -> Any:
    """A Parquet or BigQuery value as the JSON round trip makes it (datetimes and decimals as text)."""
    return json.loads(json.dumps(value, default=str))


def _json_integers_beyond_int64(values: pa.Array) -> bool:
    """A float column (or list of floats) of a JSON chunk holding an integral value beyond int64: Arrow read an
    integer literal Python reads exactly, or a float literal; the two cannot be told apart here."""
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        values = pc.list_flatten(values)
    if not pa.types.is_floating(values.type) or not len(values):
        return False
    numbers = values.to_numpy(zero_copy_only=False)
    numbers = numbers[np.isfinite(numbers)]
    return bool(np.any((np.abs(numbers) >= _INT64_EDGE) & (numbers == np.round(numbers))))


# --- one field, column-wise ----------------------------------------------------------------------------------------


def _per_value(values: pa.Array, function: Callable[[Any], Any], source: str) -> tuple[list, Failures]:
    """`function` (a per-record parser's) on each value, as the per-record parser sees it."""
    results: list = []
    failures: Failures = {}
    for row, value in enumerate(values.to_pylist()):
        if source == "typed":
            value = _json_safe(value)
        try:
            results.append(function(value))
        except InvalidRecord as error:
            results.append(None)
            failures[row] = error.reason
        except Exception as error:  # noqa: BLE001 - as ParseRecords: never lose a record
            results.append(None)
            failures[row] = f"unparsable:{type(error).__name__}"
    return results, failures


def _may_have_edge_space(values: pa.Array) -> bool:
    """Whether a value of the string column `values` may start or end with a space (str.isspace): a regular
    expression on every value, unless none of the column's bytes can be part of a space character at all."""
    if not len(values):
        return False
    _, offsets, data = values.buffers()
    if data is None:
        return False
    width = np.int64 if pa.types.is_large_string(values.type) else np.int32
    ends = np.frombuffer(offsets, width)[[values.offset, values.offset + len(values)]]
    if not data.slice(int(ends[0]), int(ends[1] - ends[0])).to_pybytes().translate(None, _NOT_SPACE_BYTES):
        return False
    return bool(_mask(pc.match_substring_regex(values, _EDGE_SPACE)).any())


def _empty_as_null(values: pa.Array) -> pa.Array:
    """A string column with each empty value null (`parse.identifier` gives None for it)."""
    if not len(values):
        return values
    offsets = np.frombuffer(values.buffers()[1], np.int64 if pa.types.is_large_string(values.type) else np.int32)
    lengths = np.diff(offsets[values.offset:values.offset + len(values) + 1])
    empty = (lengths == 0) & np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
    if not empty.any():
        return values
    return pc.if_else(pa.array(empty), pa.scalar(None, values.type), values)


def _is_string(values: pa.Array) -> bool:
    return pa.types.is_string(values.type) or pa.types.is_large_string(values.type)


def _is_integer(values: pa.Array) -> bool:
    return pa.types.is_integer(values.type)


def _mask(values: pa.Array) -> np.ndarray:
    """A boolean Arrow array (nulls false) as numpy."""
    return np.asarray(values.fill_null(False).to_numpy(zero_copy_only=False), bool)


def _rows(mask: np.ndarray) -> list[int]:
    return np.flatnonzero(mask).tolist()


def _required(values: pa.Array, name: str) -> tuple[pa.Array, Failures]:
    """`parse._required`: null or a string of whitespace is `missing_field:<name>` (those rows set to null)."""
    absent = ~np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
    if _is_string(values):
        absent |= _mask(pc.match_substring_regex(values, _ONLY_SPACE))
    failures = {row: f"missing_field:{name}" for row in _rows(absent)}
    if failures:
        values = pc.if_else(pa.array(absent), pa.scalar(None, values.type), values)
    return values, failures


def _identifiers(values: pa.Array, name: str, source: str) -> tuple[pa.Array, Failures]:
    """`parse.identifier` of each value: strings stripped (None if empty), integers and booleans as text."""
    if pa.types.is_null(values.type):
        return pa.nulls(len(values), STRING), {}
    if _is_string(values):
        if not _may_have_edge_space(values):
            return _empty_as_null(values).cast(STRING), {}
    elif _is_integer(values):
        return values.cast(STRING), {}
    elif pa.types.is_boolean(values.type):
        return pc.if_else(values, "true", "false").cast(STRING), {}
    identifiers, failures = _per_value(values, lambda v: identifier(v, name), source)
    return pa.array(identifiers, STRING), failures


def _numbers(values: pa.Array, name: str, source: str) -> tuple[pa.Array, Failures]:
    """`parse.feature_number` of each value: float64, null where absent; non-finite and non-numbers are failures."""
    if pa.types.is_null(values.type):
        return pa.nulls(len(values), pa.float64()), {}
    numbers: pa.Array | None = None
    if _is_integer(values) or pa.types.is_floating(values.type):
        numbers = values.cast(pa.float64(), safe=False)  # an int64 past 2^53 rounds to nearest, as float(int) does
    elif _is_string(values):
        decimal = _mask(pc.match_substring_regex(values, _DECIMAL))
        blank = _mask(pc.match_substring_regex(values, _ONLY_SPACE)) | ~np.asarray(
            values.is_valid().to_numpy(zero_copy_only=False), bool)
        if (decimal | blank).all():
            try:
                numbers = pc.if_else(pa.array(decimal), values, pa.scalar(None, values.type)).cast(pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                numbers = None
    if numbers is None:
        parsed, failures = _per_value(values, lambda v: feature_number(v, name), source)
        return pa.array(parsed, pa.float64()), failures
    array = numbers.to_numpy(zero_copy_only=False)
    bad = ~np.isfinite(array) & np.asarray(numbers.is_valid().to_numpy(zero_copy_only=False), bool)
    failures = {row: f"non_finite:{name}" for row in _rows(bad)}
    return (pc.if_else(pa.array(bad), pa.scalar(None, pa.float64()), numbers) if failures else numbers), failures


def _identifier_lists(values: pa.Array, feature: FeatureField, source: str) -> tuple[pa.Array, Failures]:
    """`ImpressionParser.id_list` of each value: a string split on the separator, or a list of ids; each id
    stripped, empty ones dropped."""
    if pa.types.is_null(values.type):
        return pa.array([[]] * len(values), STRING_LIST), {}
    tokens: pa.Array | None = None
    if _is_string(values):  # a null (no list) splits into no tokens, as None gives []
        tokens = pc.split_pattern(values.cast(STRING), feature.separator)
    elif pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        item = values.type.value_type
        if pa.types.is_string(item) or pa.types.is_large_string(item) or pa.types.is_integer(item):
            tokens = values
    if tokens is not None:
        flat = pc.list_flatten(tokens)
        if flat.null_count == 0 and (not _is_string(flat) or not len(flat)
                                     or not _may_have_edge_space(flat)):
            flat = flat.cast(STRING)
            keep = np.asarray(pc.not_equal(flat, "").to_numpy(zero_copy_only=False), bool)
            offsets = np.asarray(pc.list_value_length(tokens).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
            owner = np.repeat(np.arange(len(tokens)), offsets)
            counts = np.bincount(owner[keep], minlength=len(tokens))
            new_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
            return pa.ListArray.from_arrays(pa.array(new_offsets), flat.filter(pa.array(keep))), {}
    lists, failures = _per_value(values, lambda v: ImpressionParser.id_list(v, feature), source)
    return pa.array([value or [] for value in lists], STRING_LIST), failures


def _feature_values(values: pa.Array, feature: FeatureField, source: str) -> tuple[pa.Array, Failures]:
    if feature.kind == "categorical":
        return _identifiers(values, feature.name, source)
    if feature.kind == "categorical_list":
        return _identifier_lists(values, feature, source)
    return _numbers(values, feature.name, source)


def _event_types(values: pa.Array, event_types: frozenset[str], missing: Failures) -> tuple[pa.Array, Failures]:
    """`EngagementParser`'s event type: a string (else `wrong_type:event_type`) among the configured ones (else
    `unknown_event_type`), compared as written."""
    if _is_string(values):
        known = _mask(pc.is_in(values, pa.array(sorted(event_types), STRING)))
        failures = {row: "unknown_event_type" for row in _rows(~known) if row not in missing}
        return values.cast(STRING), missing | failures
    failures = dict(missing)
    present = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
    failures.update({row: f"wrong_type:{EVENT_TYPE}" for row in _rows(present) if row not in missing})
    return pa.nulls(len(values), STRING), failures


def _timestamps(values: pa.Array, parser: TimestampParser, source: str) -> tuple[pa.Array, Failures]:
    """`TimestampParser` of each value: epoch milliseconds within its bounds, else `bad_timestamp`."""
    stamps: np.ndarray | None = None
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
    fmt = parser.timestamp_format
    if fmt in ("epoch_seconds", "epoch_millis") and (_is_integer(values) or pa.types.is_floating(values.type)):
        numbers = values.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)
        scaled = numbers * (1000.0 if fmt == "epoch_seconds" else 1.0)
        finite = np.isfinite(scaled) & (np.abs(scaled) < 2.0**62)
        stamps = np.where(finite, np.round(np.where(finite, scaled, 0.0)), 0).astype(np.int64)
        good = finite
    elif _is_string(values) and fmt in ("rfc3339", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"):
        pattern = _RFC3339_UTC if fmt == "rfc3339" else _PLAIN_SECONDS.replace(" ", "T" if "T" in fmt else " ")
        if _mask(pc.match_substring_regex(values, pattern))[valid].all():
            text = values if fmt == "rfc3339" else pc.binary_join_element_wise(
                pc.replace_substring(values, " ", "T"), "Z", "")
            try:
                parsed = pc.cast(pc.cast(text, pa.timestamp("ms", "UTC")), pa.int64())
                stamps = parsed.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
                good = np.ones(len(values), bool)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                stamps = None
    if stamps is None:
        parsed_values, failures = _per_value(values, parser, source)
        return pa.array(parsed_values, pa.int64()), {row: reason for row, reason in failures.items() if valid[row]}
    within = good & (stamps >= EARLIEST_MS) & (stamps <= LATEST_MS)
    failures = {row: "bad_timestamp" for row in _rows(valid & ~within)}
    return pa.array(np.where(within, stamps, 0), pa.int64(), mask=~(within & valid)), failures

