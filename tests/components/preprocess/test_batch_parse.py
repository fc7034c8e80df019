"""The columnar parser gives exactly what parsing each record on its own gives: the same valid records (as a batch),
the same dead letters with the same reasons, the same byte accounting, on chunks of odd values of every type
(JSON lines, CSV records, Parquet-like tables)."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pytest

from components.preprocess.batch_parse import ChunkParser, _json_table
from components.preprocess.example_batches import ImpressionColumns, engagements_from_records
from components.preprocess.parse import (
    EngagementParser,
    FeatureField,
    ImpressionParser,
    InvalidRecord,
    OutcomeLabel,
    ParseOutcomes,
    RecordDecoder,
    TimestampParser,
    dead_letter,
)

FEATURES = (FeatureField("ad_id", "categorical", "ad_id"), FeatureField("interests", "categorical_list", "interests"),
            FeatureField("bid", "numeric", "bid", default=1.5))
BIG = 2**70
# value pools by type family: a chunk draws each field from one family, so Arrow reads it column-wise
IDS = {"str": ["imp-1", " imp-2 ", "", "   ", "imp-3", "\u00a0x", "é", "__missing__"], "int": [123, -7, 0, 2**62],
       "float": [12.0, 1.5, -0.0, 1e20], "bool": [True, False], "big": [BIG, 5], "odd": [[1], {"x": 1}, "a"]}
TIMES = {"str": ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123Z", "2026-01-01T00:00:00+00:00", "2026-02-30T00:00:00Z",
                 "garbage", "", "2026-01-01 00:00:00", " 2026-01-01T00:00:00Z", "9999-12-31T00:00:00Z",
                 "0001-01-01T00:00:00Z", "2026-01-01T23:59:60Z", "2026-13-01T00:00:00Z", "0000-01-01T00:00:00Z"],
         "int": [1767225600, 0], "odd": [True, [1]]}
VALUES = {"str": ["a", " a", "b ", "", "__missing__", "é", "\u2003x", "x\u00a0"], "int": [5, -7, 2**63 - 1],
          "float": [5.0, 5.5, 1e300, -0.0], "bool": [True, False], "odd": [[1], {"k": 1}, "z"], "big": [BIG]}
LISTS = {"str": ["x|y", "x| y", "", "|", "a||b", " | "], "strs": [["a", "b"], ["a", ""], [" a"], []],
         "ints": [[1, 2], [3]], "odd": [[1.5], [["a"]], [{"a": 1}], [None, "a"], [True], 3]}
NUMBERS = {"int": [1, -3, 2**62, 0], "float": [1.5, -0.0, 1e308, 2.2250738585072011e-308],
           "str": ["2.5", " 3", "abc", "", "nan", "1e999", "1_000", "+.5", "0x10", "-2", "7."], "bool": [True],
           "odd": [[1], "1"], "big": [BIG]}
LABELS = {"int": [0, 1, -1, 3], "str": ["yes", "no", "", "nan", "2.5", "TRUE", " 1 "], "float": [2.5, 0.0],
          "bool": [True, False], "odd": [[1], "x"]}
JUNK = [b'{"impression_id": "x\xff", "ts": "2026-01-01T00:00:00Z"}', b"not json", b"[1,2]",
        b'{"ad_id": "a"}{"ad_id": "b"}', b'{"ad_id": "a", "ad_id": "b"}', b'{"ad_id": "x\ty"}',
        b'\xef\xbb\xbf{"ad_id": "a"}', b'{"ad_id": 1e999}',
        b'{"bid": NaN, "impression_id": "i", "ts": "2026-01-01T00:00:00Z"}']


def impression_parser(file_format: str = "jsonl", columns: tuple[str, ...] = (), outcome: bool = False,
                      timestamp_format: str = "rfc3339", max_record_bytes: int | None = 400) -> ImpressionParser:
    return ImpressionParser(
        decoder=RecordDecoder(file_format, columns, ",", max_record_bytes), timestamps=TimestampParser(timestamp_format),
        features=FEATURES, timestamp_column="ts", id_required=not outcome,
        outcome_labels=(OutcomeLabel("label_click", "clicked", "truthy"),
                        OutcomeLabel("label_buy", "bought", "present")) if outcome else ())


def expected(parser, stream: str, records: list) -> tuple[pa.RecordBatch, list[dict], ParseOutcomes]:
    """What parsing each record on its own gives (as `parse.ParseRecords` does)."""
    valid, letters, outcomes = [], [], ParseOutcomes()
    for raw in records:
        try:
            valid.append(parser(raw))
            outcomes.add(raw, True)
        except InvalidRecord as error:
            letters.append(dead_letter(stream, error.reason, raw))
            outcomes.add(raw, False)
        except Exception as error:  # noqa: BLE001
            letters.append(dead_letter(stream, f"unparsable:{type(error).__name__}", raw))
            outcomes.add(raw, False)
    if isinstance(parser, ImpressionParser):
        columns = ImpressionColumns(parser.features, tuple(label.name for label in parser.outcome_labels))
        return columns.from_records(valid), letters, outcomes
    return engagements_from_records(valid), letters, outcomes


def assert_same(chunk, want) -> None:
    batch, letters, outcomes = want
    assert chunk.dead_letters == letters
    assert chunk.outcomes == outcomes
    assert chunk.batch.schema == batch.schema
    assert chunk.batch.to_pylist() == batch.to_pylist()


def impression_record(rng: random.Random, families: dict[str, str], outcome: bool) -> dict:
    record = {}
    for key, pool in (("impression_id", IDS), ("ts", TIMES), ("ad_id", VALUES), ("interests", LISTS),
                      ("bid", NUMBERS)) + ((("clicked", LABELS), ("bought", LABELS)) if outcome else ()):
        if rng.random() < 0.1:
            continue  # absent
        record[key] = None if rng.random() < 0.05 else rng.choice(pool[families[key]])
    if outcome and "ts" in record and rng.random() < 0.7:
        record["ts"] = TIMES["str"][rng.randrange(2)]  # mostly valid times, so the later fields are reached
    return record


def families(rng: random.Random, mixed: bool) -> dict[str, str]:
    pools = {"impression_id": IDS, "ts": TIMES, "ad_id": VALUES, "interests": LISTS, "bid": NUMBERS,
             "clicked": LABELS, "bought": LABELS}
    weights = {"odd": 0.05, "big": 0.05}
    chosen = {}
    for key, pool in pools.items():
        names = list(pool)
        chosen[key] = rng.choices(names, [weights.get(n, 1.0) for n in names])[0] if not mixed else rng.choice(names)
    return chosen


@pytest.mark.parametrize("outcome", [False, True])
def test_json_chunks_parse_as_each_record_alone(outcome):
    rng = random.Random(7 + outcome)
    parser = impression_parser(outcome=outcome)
    chunk_parser = ChunkParser("impressions", parser)
    columnar = 0
    for chunk_index in range(250):
        kinds = families(rng, mixed=chunk_index % 10 == 0)
        records = []
        for _ in range(rng.randrange(1, 25)):
            if rng.random() < 0.03:
                records.append(rng.choice(JUNK))
            else:
                # ~half the chunks: valid ids and times, so the feature columns are what decides
                record = impression_record(rng, kinds, outcome)
                if chunk_index % 2:
                    record |= {"impression_id": f"i{rng.randrange(9)}", "ts": TIMES["str"][rng.randrange(2)]}
                records.append(json.dumps(record).encode())
        if rng.random() < 0.05:
            records.append(json.dumps({"impression_id": "x" * 500, "ts": "2026-01-01T00:00:00Z"}).encode())
        chunk = chunk_parser.parse_text(records)
        assert_same(chunk, expected(parser, "impressions", records))
        columnar += chunk.batch.num_rows > 0
    assert columnar > 50


def test_engagement_json_chunks_parse_as_each_record_alone():
    rng = random.Random(3)
    parser = EngagementParser(RecordDecoder("jsonl"), TimestampParser("rfc3339"), frozenset({"swipe", "install"}))
    chunk_parser = ChunkParser("engagements", parser)
    types = {"str": ["swipe", "install", " swipe", "view", "", "   "], "int": [1], "odd": [[1]]}
    for _ in range(150):
        kind = rng.choice(["str", "str", "str", "int", "odd"])
        records = []
        for _ in range(rng.randrange(1, 20)):
            record = {"impression_id": rng.choice(IDS["str"] + [None]), "timestamp": rng.choice(TIMES["str"][:3]),
                      "event_type": rng.choice(types[kind] + [None])}
            records.append(json.dumps({k: v for k, v in record.items() if rng.random() > 0.05}).encode())
        assert_same(chunk_parser.parse_text(records), expected(parser, "engagements", records))


def test_csv_chunks_parse_as_each_record_alone():
    rng = random.Random(11)
    columns = ("impression_id", "ts", "ad_id", "interests", "bid", "clicked", "bought")
    parser = impression_parser("csv", columns, outcome=True, timestamp_format="%Y-%m-%d %H:%M:%S")
    chunk_parser = ChunkParser("impressions", parser)
    cells = {"impression_id": ["i1", " i2", "", "i3"], "ts": ["2026-01-01 10:00:00", "2026-01-01 10:00:00 ", "",
                                                            "2026-02-30 10:00:00", "2026-1-1 1:0:0", "x"],
             "ad_id": ["a", " a ", "", "5"], "interests": ["x|y", "", "x| y", "|"],
             "bid": ["1.5", "", "abc", " 2", "nan", "1e999"], "clicked": ["1", "0", "", "yes", "-1", "nan"],
             "bought": ["2026-01-01", "", " "]}
    for _ in range(200):
        records = []
        for _ in range(rng.randrange(1, 25)):
            row = [rng.choice(cells[c]) if rng.random() > 0.1 else rng.choice(['"q,uoted"', '"bad', 'a"b'])
                   for c in columns]
            if rng.random() < 0.05:
                row = row[:rng.randrange(len(row))] + (["extra"] if rng.random() < 0.5 else [])
            records.append(",".join(row).encode())
        assert_same(chunk_parser.parse_text(records), expected(parser, "impressions", records))


def test_typed_tables_parse_as_each_row_alone():
    """Parquet row groups and BigQuery rows: Arrow-typed columns, each row as `readers._json_safe` makes it."""
    import datetime as dt
    import decimal

    parser = impression_parser("parquet", outcome=True, timestamp_format="rfc3339")
    chunk_parser = ChunkParser("impressions", parser)
    stamp = dt.datetime(2026, 1, 1, 10, tzinfo=dt.timezone.utc)
    tables = [
        pa.table({"ts": ["2026-01-01T00:00:00Z", "bad", None], "ad_id": [1, 2, None], "bid": [1.5, float("nan"), None],
                  "interests": [["a", " b"], [], None], "clicked": [1, 0, None], "bought": ["x", "", None]}),
        pa.table({"ts": [stamp, stamp], "ad_id": [True, False], "bid": [decimal.Decimal("1.25"), None],
                  "interests": ["a|b", "c"], "clicked": ["1", "yes"]}),
        pa.table({"ts": ["2026-01-01T00:00:00.123Z"], "ad_id": [2.5], "bid": ["7"], "interests": [[1, 2]],
                  "clicked": [True], "impression_id": ["dup"]}),
    ]
    for table in tables:
        rows = [json.loads(json.dumps(row, default=str)) for row in table.to_pylist()]
        assert_same(chunk_parser.parse_table(table), expected(parser, "impressions", rows))


def test_a_record_over_the_size_limit_is_a_dead_letter_before_it_is_read():
    parser = impression_parser(max_record_bytes=60)
    records = [json.dumps({"impression_id": "i", "ts": "2026-01-01T00:00:00Z", "ad_id": "a" * 100}).encode(),
               json.dumps({"impression_id": "j", "ts": "2026-01-01T00:00:00Z"}).encode()]
    chunk = ChunkParser("impressions", parser).parse_text(records)
    assert [d["reason"] for d in chunk.dead_letters] == ["record_too_large"]
    assert chunk.dead_letters[0]["raw_bytes"] == len(records[0])
    assert chunk.batch.column("impression_id").to_pylist() == ["j"]


def test_clean_columns_are_converted_without_a_per_value_step(monkeypatch):
    """Logs as an ad server writes them (strings without edge spaces, plain numbers, strict times, id lists, some
    values absent, empty or null) take the column-wise path for every field, and still equal the per-record parse."""
    import components.preprocess.batch_parse as batch_parse

    def refuse(*args, **kwargs):
        raise AssertionError("a per-value conversion on clean columns")

    monkeypatch.setattr(batch_parse, "_per_value", refuse)
    rng = random.Random(5)
    records = []
    for n in range(300):
        record = {"impression_id": f"imp-{n}", "ts": f"2026-01-0{1 + n % 3}T{n % 24:02d}:0{n % 10}:00.{n % 1000:03d}Z",
                  "ad_id": rng.choice(["a1", "b2", "", None, "é", "__missing__"]),
                  "interests": rng.choice([["x", "y"], [], ["z", ""], None]), "bid": rng.choice([1, 2.5, None, 0])}
        records.append(json.dumps({k: v for k, v in record.items() if rng.random() > 0.05 or k == "impression_id"}))
    records = [r.encode() for r in records if '"ts"' in r]
    parser = impression_parser(max_record_bytes=None)
    assert_same(ChunkParser("impressions", parser).parse_text(records), expected(parser, "impressions", records))
    csv_parser = impression_parser("csv", ("impression_id", "ts", "ad_id", "interests", "bid"),
                                   timestamp_format="%Y-%m-%d %H:%M:%S")
    rows = [f"i{n},2026-01-0{1 + n % 3} {n % 24:02d}:00:0{n % 10},{rng.choice(['a', '', 'b'])},"
            f"{rng.choice(['x|y', '', 'z'])},{rng.choice(['1.5', '', '-2', '3e2'])}".encode() for n in range(300)]
    assert_same(ChunkParser("impressions", csv_parser).parse_text(rows), expected(csv_parser, "impressions", rows))


def test_the_edge_space_check_reads_a_column_s_bytes_and_looks_closer_only_where_a_space_may_be():
    from components.preprocess.batch_parse import _empty_as_null, _may_have_edge_space

    assert not _may_have_edge_space(pa.array(["v1", "v22", None, ""]))
    assert not _may_have_edge_space(pa.array(["a b", "é"]))  # inner space, non-ASCII: the expression says no
    for edged in ([" a"], ["a\t"], ["\u3000a"], ["a\x1f"], ["a\u00a0"]):
        assert _may_have_edge_space(pa.array(["x"] + edged))
    sliced = pa.array([" a", "b", "c ", "d"]).slice(1, 1)  # the bytes of the rows in the slice only
    assert not _may_have_edge_space(sliced)
    assert _may_have_edge_space(pa.array(["b", " a"], pa.large_string()).slice(1))
    assert _empty_as_null(pa.array(["", "a", None, ""]).slice(1)).to_pylist() == ["a", None, None]


def test_a_stream_s_time_columns_are_read_as_text_from_the_start_and_give_the_table_of_a_fresh_read():
    learned: dict = {}
    chunks = [
        [b'{"ts": "2026-01-01T00:00:00Z", "ad_id": "a"}', b'{"ts": "2026-01-02T00:00:00Z", "ad_id": "b"}'],
        [b'{"ts": "2026-01-03T00:00:00Z", "ad_id": "c"}'],  # read once, ts as text from the start
        [b'{"ad_id": "d"}', b'{"ad_id": "e", "ts": null}'],  # ts absent or null throughout: no column, as fresh
        [b'{"ts": 1767225600, "ad_id": "f"}'],  # ts a number here: the learned read fails, read as fresh
        [b'{"ts": "garbage", "ad_id": "g"}', b'{"ts": "2026-01-01T00:00:00Z", "ad_id": "h"}'],
    ]
    for records in chunks:
        ours, fresh = _json_table(records, learned), _json_table(records)
        assert ours is not None and fresh is not None
        # a column of Arrow's null type (null throughout) is to the parser what an absent one is (`column()`)
        fresh = fresh.drop_columns([f.name for f in fresh.schema if pa.types.is_null(f.type)])
        assert ours.schema == fresh.schema and ours.to_pylist() == fresh.to_pylist()
    assert learned == {"ts": pa.string()}
