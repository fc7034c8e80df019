"""A CSV log's shape (cells per record, delimiter, header) checked on its first records, with the fix named."""

from __future__ import annotations

import gzip

import pytest

from components.logs.csv_shape import CsvLayout, MalformedCsv, check_csv_shape, files_to_check, shape_problem

ROWS = [f"{100 + i},{i % 3},2026-01-0{1 + i % 3} 1{i % 10}:00:00,{'2026-01-01 23:00:00' if i % 2 else ''}"
        for i in range(12)]
HEADER = "ip,app,click_time,attributed_time"


def write(path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_well_formed_file_passes_with_a_header_and_without_one(tmp_path):
    assert shape_problem(write(tmp_path / "a.csv", [HEADER, *ROWS]), CsvLayout()) is None
    headerless = CsvLayout(header="none", columns=("ip", "app", "click_time", "attributed_time"))
    assert shape_problem(write(tmp_path / "b.csv", ROWS), headerless) is None


def test_a_header_with_fewer_cells_than_its_rows_names_the_counts_and_the_fix(tmp_path):
    path = write(tmp_path / "clicks.csv", ["app,click_time,attributed_time", *ROWS])
    with pytest.raises(MalformedCsv) as error:
        check_csv_shape("impressions", [path], CsvLayout())
    assert str(error.value) == (
        f"impressions: {path}: the header has 3 cells ('app', 'click_time', 'attributed_time') but 12 of the first "
        f"12 rows have 4 (line 2 the first): the header names fewer columns than the rows hold. Name every column "
        f"in the header, or set logs.csv_header: none and list all 4 column names in file order in logs.csv_columns")


def test_rows_with_fewer_cells_than_the_header_point_at_the_delimiter(tmp_path):
    rows = [row.rsplit(",", 1)[0] for row in ROWS]
    problem = shape_problem(write(tmp_path / "short.csv", [HEADER, *rows]), CsvLayout())
    assert problem is not None and problem.startswith("the header has 4 cells")
    assert "12 of the first 12 rows have 3" in problem and "Check logs.csv_delimiter (',')" in problem


def test_a_few_ragged_rows_are_dead_letters_not_a_shape(tmp_path):
    rows = [*ROWS[:10], ROWS[10] + ",extra", ROWS[11][:5]]
    assert shape_problem(write(tmp_path / "ragged.csv", [HEADER, *rows]), CsvLayout()) is None


def test_another_delimiter_is_recognised_and_named(tmp_path):
    path = write(tmp_path / "semicolons.csv", [HEADER.replace(",", ";")] + [r.replace(",", ";") for r in ROWS])
    assert shape_problem(path, CsvLayout()) == (
        "the first records are one cell each when split by ',' but 4 cells when split by ';': set "
        "logs.csv_delimiter: ';'")
    tabs = write(tmp_path / "tabs.tsv", [HEADER.replace(",", "\t")] + [r.replace(",", "\t") for r in ROWS])
    assert "set logs.csv_delimiter: '\\t'" in shape_problem(tabs, CsvLayout())


def test_a_file_without_a_header_read_as_one_says_so(tmp_path):
    problem = shape_problem(write(tmp_path / "noheader.csv", ROWS), CsvLayout())
    assert problem == ("the first row looks like data, not a header ('100', '0', '2026-01-01 10:00:00', '': a column "
                       "name is not a number); if the file has no header, set logs.csv_header: none and name its 4 "
                       "columns in file order in logs.csv_columns")


def test_headerless_layout_checks_its_column_count_and_a_header_it_did_not_expect(tmp_path):
    three = CsvLayout(header="none", columns=("ip", "app", "click_time"))
    assert shape_problem(write(tmp_path / "rows.csv", ROWS), three) == (
        "logs.csv_columns names 3 columns but 12 of the first 12 rows have 4 cells (line 1 the first): list every "
        "column of the file, in file order")
    four = CsvLayout(header="none", columns=("ip", "app", "click_time", "attributed_time"))
    problem = shape_problem(write(tmp_path / "with_header.csv", [HEADER, *ROWS]), four)
    assert problem is not None and problem.startswith("logs.csv_header is none but the first row names the columns")
    assert problem.endswith("set logs.csv_header: first_row and drop logs.csv_columns")


def test_compressed_files_quoted_line_breaks_and_a_bom_are_framed_as_the_reader_frames_them(tmp_path):
    quoted = [f'{row.split(",", 1)[0]},"a\nb",{row.split(",", 2)[2]}' for row in ROWS]
    path = tmp_path / "clicks.csv.gz"
    path.write_bytes(gzip.compress(("\ufeff" + "\n".join([HEADER, *quoted]) + "\n").encode()))
    assert shape_problem(str(path), CsvLayout()) is None
    short_header = tmp_path / "short.csv.gz"
    short_header.write_bytes(gzip.compress(("\n".join(["ip,app", *quoted]) + "\n").encode()))
    assert "(line 2 the first)" in shape_problem(str(short_header), CsvLayout())


def test_the_first_and_last_files_of_a_stream_are_checked():
    days = [f"day{d}.csv" for d in range(10)]
    assert files_to_check(days) == ["day0.csv", "day1.csv", "day8.csv", "day9.csv"]
    assert files_to_check(days[:1]) == ["day0.csv"]
