"""Every byte of a text log file is accounted for: records, blank lines, framing (line breaks, BOM, header); a
truncated or corrupt compressed file is an error naming the file and the offset; one bad CSV quote costs one row."""

from __future__ import annotations

import bz2
import gzip
import io
import json
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from components.logs.readers import FILES, RECORDS, ReadLogRecords, RecordChunks, matched_files
from components.logs.text_files import (
    BOM,
    FileTally,
    LogFileUnreadable,
    TextLogFile,
    csv_file_records,
    jsonl_record_lists,
)
from components.preprocess.parse import (
    FeatureField,
    ImpressionParser,
    OutcomeLabel,
    ParseOutcomes,
    RecordDecoder,
    TimestampParser,
    parse_stream,
)

DIRECT = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]


def read(path: Path, file_format: str = "jsonl", **options) -> tuple[list[bytes], FileTally]:
    with open(path, "rb") as raw:
        log_file = TextLogFile(str(path), raw, path.stat().st_size)
        if file_format == "csv":
            items = list(csv_file_records(log_file, **options))
        else:
            items = [record for part in jsonl_record_lists(log_file)
                     for record in ([part] if isinstance(part, FileTally) else part)]
    *records, tally = items
    assert isinstance(tally, FileTally)
    return records, tally


def impression_lines(count: int) -> list[bytes]:
    return [json.dumps({"impression_id": f"i{n}", "timestamp": "2026-01-01T00:00:00Z", "ad_id": f"a{n % 7}"}).encode()
            for n in range(count)]


def test_a_bom_is_stripped_and_blank_lines_are_counted_not_read(tmp_path):
    lines = impression_lines(3)
    path = tmp_path / "impressions.jsonl"
    path.write_bytes(BOM + lines[0] + b"\r\n\n   \n" + lines[1] + b"\n" + lines[2])  # no final line break
    records, tally = read(path)
    assert records == lines
    assert (tally.blank_lines, tally.blank_bytes) == (2, 1 + 4)
    assert tally.framing_bytes == len(BOM) + 2 + 1
    assert tally.bytes == path.stat().st_size and tally.unaccounted_bytes == 0
    assert (tally.records, tally.record_bytes) == (3, sum(map(len, lines)))


def line_by_line(text: bytes) -> tuple[list[bytes], tuple]:
    """What a JSONL file of `text` holds, read a line at a time: the reference the block reader must match."""
    records, framing, blanks, blank_bytes = [], 0, 0, 0
    for index, line in enumerate(io.BytesIO(text).readlines()):
        content = line[:-1] if line.endswith(b"\n") else line
        content = content[:-1] if content.endswith(b"\r") else content
        if index == 0 and content.startswith(BOM):
            content = content[len(BOM):]
        if not content.strip():
            blanks, blank_bytes = blanks + 1, blank_bytes + len(line)
            continue
        framing += len(line) - len(content)
        records.append(content)
    return records, (len(text), framing, blanks, blank_bytes, len(records), sum(map(len, records)))


@pytest.mark.parametrize("text", [
    b"",
    b"\n\n",
    BOM,
    BOM + b"\r\n",
    BOM + b'{"a": 1}\r\n \t\n{"b": 2}\r\r\n\r\n{"c": 3}\r',
    b'{"a": 1}\n' * 7 + b'{"long": "' + b"x" * 40 + b'"}',
    b'\n  \n{"a": 1}\n\n\n{"b": 22}\n',
])
@pytest.mark.parametrize("block_bytes", [1, 2, 3, 7, 1 << 20])
def test_jsonl_read_in_blocks_gives_the_records_and_tally_of_reading_line_by_line(tmp_path, monkeypatch, text,
                                                                                 block_bytes):
    import components.logs.text_files as text_files

    monkeypatch.setattr(text_files, "JSONL_BLOCK_BYTES", block_bytes)
    path = tmp_path / "impressions.jsonl"
    path.write_bytes(text)
    records, tally = read(path)
    want_records, want_tally = line_by_line(text)
    assert records == want_records
    assert (tally.bytes, tally.framing_bytes, tally.blank_lines, tally.blank_bytes, tally.records,
            tally.record_bytes) == want_tally
    assert tally.unaccounted_bytes == 0


@pytest.mark.parametrize("chunk_records, chunk_bytes", [(4, 10**6), (10**6, 25), (3, 12), (1, 1)])
def test_records_added_a_list_at_a_time_are_cut_into_the_chunks_of_adding_them_one_by_one(monkeypatch, chunk_records,
                                                                                         chunk_bytes):
    import components.logs.readers as readers

    monkeypatch.setattr(readers, "CHUNK_RECORDS", chunk_records)
    monkeypatch.setattr(readers, "CHUNK_BYTES", chunk_bytes)
    lists = [[b"x" * ((n * 7 + i * 3) % 11 + 1) for i in range(n)] for n in (1, 5, 0, 13, 2, 9, 30)]
    one_by_one, many = RecordChunks(), RecordChunks()
    want = [list(c) for records in lists for record in records for c in one_by_one.add(record)]
    want += [list(c) for c in one_by_one.rest()]
    got = [list(c) for records in lists for c in many.add_many(records)] + [list(c) for c in many.rest()]
    assert got == want and sum(map(len, got)) == sum(map(len, lists))


def test_a_gzip_file_is_accounted_in_its_decompressed_bytes(tmp_path):
    text = b"\n".join(impression_lines(50)) + b"\n"
    path = tmp_path / "impressions.jsonl.gz"
    path.write_bytes(gzip.compress(text))
    records, tally = read(path)
    assert len(records) == 50 and tally.bytes == len(text) and tally.unaccounted_bytes == 0


@pytest.mark.parametrize("suffix, compress", [(".gz", gzip.compress), (".bz2", bz2.compress)])
def test_a_compressed_file_cut_in_half_is_an_error_naming_the_file_and_offset(tmp_path, suffix, compress):
    # the probe: 4,000 records, the file cut in half, used to read as 1,988 records without a word
    stored = compress(b"\n".join(impression_lines(4000)) + b"\n")
    path = tmp_path / f"impressions.jsonl{suffix}"
    path.write_bytes(stored[: len(stored) // 2])
    with pytest.raises(LogFileUnreadable) as error:
        read(path)
    message = str(error.value)
    assert message.startswith(f"{path}: compressed data truncated or corrupt after ")
    assert f"of {len(stored) // 2:,}" in message and "preprocess stops" in message


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_a_zero_byte_compressed_file_is_an_error_naming_it_and_an_empty_plain_file_is_no_record(tmp_path, suffix):
    """A zero-byte `.jsonl.gz` holds no compressed stream (an empty log compresses to 20 bytes): a failed copy,
    reported like a truncated file rather than read as a day without impressions. A zero-byte `.jsonl` is empty."""
    path = tmp_path / f"impressions.jsonl{suffix}"
    path.write_bytes(b"")
    with pytest.raises(LogFileUnreadable, match=rf"^{path}: the file is empty \(0 bytes\), which is no compressed "):
        read(path)
    (tmp_path / "empty.jsonl.gz").write_bytes(gzip.compress(b""))
    records, tally = read(tmp_path / "empty.jsonl.gz")  # an empty log, compressed: a valid stream of no records
    assert records == [] and tally.records == 0
    (tmp_path / "plain.jsonl").write_bytes(b"")
    records, tally = read(tmp_path / "plain.jsonl")
    assert records == [] and tally == FileTally(str(tmp_path / "plain.jsonl"))


def test_corrupt_gzip_bytes_are_an_error(tmp_path):
    stored = bytearray(gzip.compress(b"\n".join(impression_lines(400)) + b"\n"))
    stored[len(stored) // 2] ^= 0xFF
    path = tmp_path / "impressions.jsonl.gz"
    path.write_bytes(bytes(stored))
    with pytest.raises(LogFileUnreadable, match="compressed data truncated or corrupt"):
        read(path)


def test_a_compression_whose_truncation_cannot_be_seen_is_refused(tmp_path):
    path = tmp_path / "impressions.jsonl.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd")
    with pytest.raises(LogFileUnreadable, match="zst-compressed logs are not read"):
        TextLogFile(str(path), io.BytesIO(path.read_bytes()))


def test_a_configured_path_is_literal_but_for_its_stars(tmp_path):
    """`logs[1]/*.jsonl` reads the directory `logs[1]`, never its sibling `logs1` (which Beam's glob syntax would
    match); `?` is itself too. `*` is still a wildcard."""
    for directory, lines in (("logs[1]", impression_lines(2)), ("logs1", impression_lines(5)), ("logsX", [b"{}"])):
        (tmp_path / directory).mkdir()
        (tmp_path / directory / "day.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "a?b.jsonl").write_bytes(impression_lines(1)[0] + b"\n")
    (tmp_path / "axb.jsonl").write_bytes(b"{}\n")
    assert matched_files(str(tmp_path / "logs[1]" / "*.jsonl")) == [str(tmp_path / "logs[1]" / "day.jsonl")]
    assert matched_files(str(tmp_path / "logs[1]") + "/") == [str(tmp_path / "logs[1]" / "day.jsonl")]
    assert matched_files(str(tmp_path / "a?b.jsonl")) == [str(tmp_path / "a?b.jsonl")]
    assert len(matched_files(str(tmp_path / "logs*" / "day.jsonl"))) == 3
    with TestPipeline(argv=DIRECT) as pipeline:
        read = pipeline | ReadLogRecords(str(tmp_path / "logs[1]" / "*.jsonl"), "jsonl")
        assert_that(read[RECORDS], equal_to(impression_lines(2)))


def test_beam_fails_the_job_on_a_truncated_gzip_naming_the_file(tmp_path):
    stored = gzip.compress(b"\n".join(impression_lines(4000)) + b"\n")
    path = tmp_path / "impressions.jsonl.gz"
    path.write_bytes(stored[: len(stored) // 2])
    with pytest.raises(Exception, match="impressions.jsonl.gz: compressed data truncated or corrupt"):
        with TestPipeline(argv=DIRECT) as pipeline:
            _ = pipeline | ReadLogRecords(str(path), "jsonl")


def csv_click_log(rows: int, bad_quote_at: int | None = None, labels: dict[int, str] | None = None) -> bytes:
    lines = [b"ad_id,click_time,is_attributed\r\n"]
    for row in range(1, rows + 1):
        ad = f'"a{row}' if row == bad_quote_at else f"a{row}"  # a quote opened and never closed
        label = (labels or {}).get(row, str(row % 2))
        lines.append(f"{ad},2026-01-0{1 + row % 3} 10:00:00,{label}\r\n".encode())
    return b"".join(lines)


CLICK_PARSER = ImpressionParser(
    decoder=RecordDecoder("csv", ("ad_id", "click_time", "is_attributed")),
    timestamps=TimestampParser("%Y-%m-%d %H:%M:%S"),
    features=(FeatureField("ad_id", "categorical", "ad_id"),),
    timestamp_column="click_time",
    id_required=False,
    outcome_labels=(OutcomeLabel("label_download", "is_attributed", "truthy"),),
)


def test_an_unterminated_quote_costs_one_row_of_a_3000_row_csv(tmp_path):
    # the probe: row 1,501 used to swallow the remaining 1,499 rows into one dead letter
    path = tmp_path / "clicks.csv"
    path.write_bytes(csv_click_log(3000, bad_quote_at=1501))
    records, tally = read(path, "csv", max_record_lines=64)
    assert len(records) == 3000 and records[1500].startswith(b'"a1501,')
    assert tally.bytes == path.stat().st_size and tally.unaccounted_bytes == 0
    assert tally.framing_bytes == len(b"ad_id,click_time,is_attributed\r\n") + 2 * 3000


def test_through_beam_the_csv_probe_reads_every_row_and_dead_letters_the_bad_quote_and_bad_labels(tmp_path):
    path = tmp_path / "clicks.csv"
    path.write_bytes(csv_click_log(3000, bad_quote_at=1501, labels={7: "nan", 8: "inf", 9: "-1", 10: "NaN"}))
    with TestPipeline(argv=DIRECT) as pipeline:
        read_clicks = pipeline | ReadLogRecords(str(path), "csv", max_record_bytes=65_536, max_record_lines=64)
        valid, dead, outcomes = parse_stream(read_clicks[RECORDS], "impressions", CLICK_PARSER)
        reasons = dead | beam.Map(lambda letter: letter["reason"])
        assert_that(reasons, equal_to(["bad_csv_row:unterminated quoted field", "non_finite_label:is_attributed",
                                       "non_finite_label:is_attributed", "negative_label:is_attributed",
                                       "non_finite_label:is_attributed"]), label="reasons")
        assert_that(valid | beam.combiners.Count.Globally(), equal_to([2995]), label="valid")
        totals = (outcomes
                  | beam.Map(lambda o: (o.parsed, o.dead_letters, o.parsed_bytes, o.dead_letter_bytes))
                  | beam.CombineGlobally(lambda rows: tuple(map(sum, zip(*rows)))))
        tallies = read_clicks[FILES] | beam.Map(lambda t: [t.records, t.bytes - t.framing_bytes - t.blank_bytes])
        # records read = parsed + dead letters, and the same in bytes
        assert_that(totals | beam.Map(lambda t: [t[0] + t[1], t[2] + t[3]]), equal_to([[3000, path.stat().st_size
                                                                                        - 32 - 2 * 3000]]), label="sums")
        assert_that(tallies, equal_to([[3000, path.stat().st_size - 32 - 2 * 3000]]), label="tally")


def test_parse_outcomes_count_bytes_as_read():
    outcomes = ParseOutcomes()
    outcomes.add(b"abc", parsed=True)
    outcomes.add("é", parsed=False)
    outcomes.add({"row": 1}, parsed=True)
    assert (outcomes.parsed, outcomes.parsed_bytes, outcomes.dead_letters, outcomes.dead_letter_bytes) == (2, 3, 1, 2)
