"""CSV is read by records: a quoted field may hold a line break; a bad row says what is wrong; size is bounded."""

from __future__ import annotations

import io

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from components.logs.readers import FILES, RECORDS, ReadLogRecords
from components.logs.text_files import csv_records
from components.preprocess.parse import InvalidRecord, RecordDecoder, dead_letter


def records(text: bytes, **options) -> list[bytes]:
    framed = list(csv_records(iter(io.BytesIO(text).readline, b""), **options))
    assert sum(consumed for _, consumed in framed) == len(text)  # every byte is in exactly one record
    return [record for record, _ in framed]


def test_a_line_break_inside_quotes_continues_the_record():
    text = b'id,note,n\n1,"two\nlines",3\r\n2,plain,4\n3,"say ""hi""\n, then go",5\n'
    assert records(text) == [b"id,note,n", b'1,"two\nlines",3', b"2,plain,4", b'3,"say ""hi""\n, then go",5']


def test_a_quote_inside_an_unquoted_field_is_a_literal_character():
    assert records(b'1,5" screen,3\n2,x,4\n') == [b'1,5" screen,3', b"2,x,4"]


def test_an_open_quote_is_cut_back_to_its_line_at_the_size_limit_and_the_next_lines_are_read_again():
    text = b'1,"never closed,3\n' + b"2,x,4\n" * 10 + b'3,"fine",5\n'
    assert records(text, max_record_bytes=40) == [b'1,"never closed,3'] + [b"2,x,4"] * 10 + [b'3,"fine",5']


def test_an_open_quote_is_cut_back_at_the_line_limit():
    text = b'1,"a\nb",2\n' + b'3,"open,4\n' + b"5,y,6\n" * 3
    assert records(text, max_record_lines=2) == [b'1,"a\nb",2', b'3,"open,4', b"5,y,6", b"5,y,6", b"5,y,6"]
    # within the limit a quoted line break still continues the record
    assert records(b'1,"a\nb\nc",2\n', max_record_lines=3) == [b'1,"a\nb\nc",2']


def test_an_open_quote_at_the_end_of_the_file_costs_its_own_line_only():
    assert records(b'1,x\n2,"open\n3,y') == [b"1,x", b'2,"open', b"3,y"]


@pytest.mark.parametrize("raw, reason", [
    ("1,2,3,4,5", "bad_csv_row:expected 3 columns, got 5"),
    ("1,2", "bad_csv_row:expected 3 columns, got 2"),
    ('1,"open,3', "bad_csv_row:unterminated quoted field"),
    ("1,2,3\n4,5,6", "bad_csv_row:2 rows in one record (a line break outside quotes)"),
    ('1,"a"b,3', "bad_csv_row:',' expected after '\"'"),
])
def test_a_bad_csv_row_says_what_is_wrong(raw, reason):
    with pytest.raises(InvalidRecord) as error:
        RecordDecoder("csv", ("a", "b", "c"))(raw.encode())
    assert error.value.reason == reason


def test_a_quoted_line_break_decodes_into_the_field():
    assert RecordDecoder("csv", ("a", "b", "c"))(b'1,"two\nlines",') == {"a": "1", "b": "two\nlines", "c": None}


def test_a_record_over_the_limit_is_too_large_and_its_dead_letter_keeps_an_excerpt():
    raw = b'{"impression_id": "' + b"x" * 1_000_000 + b'"}'
    with pytest.raises(InvalidRecord, match="record_too_large"):
        RecordDecoder("jsonl", max_record_bytes=65_536)(raw)
    letter = dead_letter("impressions", "record_too_large", raw)
    assert letter["raw_bytes"] == len(raw) and len(letter["raw"]) == 1024 and letter["raw"].startswith('{"impr')


def test_beam_reads_csv_files_by_records_without_their_headers(tmp_path):
    (tmp_path / "a.csv").write_bytes(b'id,note\n1,"x\ny"\n2,z\n')
    (tmp_path / "b.csv").write_bytes(b'id,note\n3,"w"\n')
    with TestPipeline() as pipeline:
        out = pipeline | ReadLogRecords(str(tmp_path / "*.csv"), "csv")
        assert_that(out[RECORDS], equal_to([b'1,"x\ny"', b"2,z", b'3,"w"']))
        sizes = out[FILES] | beam.Map(lambda tally: (tally.path.rsplit("/", 1)[1], tally.bytes, tally.records))
        assert_that(sizes, equal_to([("a.csv", 20, 2), ("b.csv", 14, 1)]), label="tallies")  # bytes on disk
