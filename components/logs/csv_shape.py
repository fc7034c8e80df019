"""Do a CSV log's first records have the shape the config says: as many cells as it has columns, split by the
configured delimiter, with a header where `logs.csv_header` says there is one?

Checked on the first `SAMPLE_RECORDS` rows (after the header) of a few files of each stream (`files_to_check`)
before the Beam job starts, in seconds, so that a header with fewer cells than its rows, a `;`-separated file read
with `,`, or a file without a header fails at once naming the file, the counts and the setting that fixes it, rather
than after a whole preprocess as a dead-letter share. Records are framed exactly as the reader frames them
(`components.logs.text_files`: compression, BOM, quoted line breaks). A few odd rows are not a shape: they become
`bad_csv_row` dead letters; the shape is the cell count most of the sampled rows have.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from components.logs.text_files import BOM, TextLogFile, csv_records

SAMPLE_RECORDS = 50
FILES_CHECKED = 4  # the first and the last files of a stream (days differ in who wrote them)
OTHER_DELIMITERS = (",", ";", "\t", "|")


class MalformedCsv(ValueError):
    """A CSV log's first records do not have the shape the config says (cells, delimiter, header)."""


@dataclass(frozen=True)
class CsvLayout:
    """How the config says a stream's CSV files are laid out (`logs.csv_delimiter`, `logs.csv_header`, and the
    column names of a file without a header)."""

    delimiter: str = ","
    header: str = "first_row"  # or "none"
    columns: tuple[str, ...] = ()  # header "none": the names, in file order


def first_records(path: str, delimiter: str, count: int = SAMPLE_RECORDS) -> list[tuple[int, list[str]]]:
    """(line number, cells) of the first `count` non-blank CSV records of a file, its header included."""
    records: list[tuple[int, list[str]]] = []
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
        log_file = TextLogFile(path, raw)
        lines = log_file.lines()
        line_number = 1
        for record, _ in csv_records(_without_bom(lines), delimiter):
            text = record.decode("utf-8", errors="replace")
            if text.strip():
                try:
                    records.append((line_number, next(csv.reader([text], delimiter=delimiter), [])))
                except csv.Error:  # a field past csv's limit: preprocess makes it a dead letter, its shape is no sample
                    pass
            line_number += text.count("\n") + 1
            if len(records) >= count:
                break
    return records


def check_csv_shape(stream: str, paths: list[str], layout: CsvLayout) -> None:
    """Raise `MalformedCsv` at the first of `paths` whose first records do not have the layout's shape."""
    for path in paths:
        problem = shape_problem(path, layout)
        if problem:
            raise MalformedCsv(f"{stream}: {path}: {problem}")


def files_to_check(paths: list[str]) -> list[str]:
    """The first and the last `FILES_CHECKED // 2` of a stream's files (sorted), each once."""
    half = FILES_CHECKED // 2
    return list(dict.fromkeys(paths[:half] + paths[-half:]))


def shape_problem(path: str, layout: CsvLayout) -> str | None:
    """What is wrong with the shape of one file's first records, with the fix; None when nothing is."""
    records = first_records(path, layout.delimiter, SAMPLE_RECORDS + (layout.header == "first_row"))
    if not records:
        return None  # an empty file: the reader counts it
    delimiter = _better_delimiter(path, layout.delimiter, records)
    if delimiter is not None:
        cells = len(first_records(path, delimiter, 1)[0][1])
        return (f"the first records are one cell each when split by {layout.delimiter!r} but {cells} cells when "
                f"split by {delimiter!r}: set logs.csv_delimiter: {delimiter!r}")
    if layout.header == "none":
        return _headerless_problem(records, layout.columns)
    (_, header), rows = records[0], records[1:]
    if not rows:
        return None
    if any(_is_number(cell) for cell in header):
        values = ", ".join(repr(cell) for cell in header[:6])
        return (f"the first row looks like data, not a header ({values}: a column name is not a number); if the "
                f"file has no header, set logs.csv_header: none and name its {len(header)} columns in file order "
                f"in logs.csv_columns")
    cells, matching, line = _usual_cells(rows)
    if cells == len(header):
        return None
    names = ", ".join(repr(cell) for cell in header)
    counts = (f"the header has {len(header)} cells ({names}) but {matching} of the first {len(rows)} rows have "
              f"{cells} (line {line} the first)")
    if cells > len(header):
        return (f"{counts}: the header names fewer columns than the rows hold. Name every column in the header, "
                f"or set logs.csv_header: none and list all {cells} column names in file order in logs.csv_columns")
    return (f"{counts}: the rows hold fewer cells than the header names. Check logs.csv_delimiter "
            f"({layout.delimiter!r}) and that every row writes every column")


def _headerless_problem(records: list[tuple[int, list[str]]], columns: tuple[str, ...]) -> str | None:
    (_, first), *_ = records
    named = set(columns)
    if sum(cell in named for cell in first) > len(first) // 2:
        return (f"logs.csv_header is none but the first row names the columns ({', '.join(map(repr, first[:6]))}): "
                f"set logs.csv_header: first_row and drop logs.csv_columns")
    cells, matching, line = _usual_cells(records)
    if cells == len(columns):
        return None
    return (f"logs.csv_columns names {len(columns)} columns but {matching} of the first {len(records)} rows have "
            f"{cells} cells (line {line} the first): list every column of the file, in file order")


def _usual_cells(rows: list[tuple[int, list[str]]]) -> tuple[int, int, int]:
    """(the cell count most rows have, how many rows have it, the first such row's line)."""
    (cells, matching), = Counter(len(row) for _, row in rows).most_common(1)
    line = next(number for number, row in rows if len(row) == cells)
    return cells, matching, line


def _better_delimiter(path: str, delimiter: str, records: list[tuple[int, list[str]]]) -> str | None:
    """Another common delimiter that splits every sampled record into the same number (> 1) of cells, when the
    configured one leaves them one cell each."""
    if any(len(cells) > 1 for _, cells in records):
        return None
    for other in OTHER_DELIMITERS:
        if other == delimiter:
            continue
        counts = {len(cells) for _, cells in first_records(path, other, len(records))}
        if len(counts) == 1 and counts.pop() > 1:
            return other
    return None


def _without_bom(lines):
    first = next(lines, None)
    if first is None:
        return
    yield first[len(BOM):] if first.startswith(BOM) else first
    yield from lines


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return cell.strip() != ""
