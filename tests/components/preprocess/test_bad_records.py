"""One bad record never aborts or silently skews preprocessing: it becomes a dead letter with a reason, or the
step fails with one clear message (empty logs, a split below its minimum, too many dead letters in a stream)."""

from __future__ import annotations

import gzip
import json

import pytest

from components.logs.text_files import BOM
from components.preprocess.run import NotEnoughExamples, TooManyInvalidRecords, preprocess

DAYS = ("2026-01-01", "2026-01-02", "2026-01-03")
FEATURES = [{"name": "ad_id", "kind": "categorical", "oov_buckets": 1}]
TASKS = [{"name": "engagement", "event_type": "swipe"}]


def impressions(per_day: int = 2) -> list[dict]:
    return [
        {"impression_id": f"{day}-{i}", "timestamp": f"{day}T1{i}:00:00Z", "ad_id": f"a{i}"}
        for day in DAYS for i in range(per_day)
    ]


def files_config(config_for, imps: str, evs: str, **sections):
    return config_for(logs={"source": "files", "impressions": imps, "engagements": evs}, tasks=TASKS,
                      features=FEATURES, **sections)


def dead_letters(out) -> list[dict]:
    return [json.loads(line) for path in out.glob("dead_letter/*.jsonl") for line in path.read_text().splitlines()]


def test_bad_bytes_and_clock_skewed_timestamps_are_dead_letters(tmp_path, config_for, log_writer):
    lines = [json.dumps(r) for r in impressions()] + [
        json.dumps({"impression_id": "far", "timestamp": "2099-06-01T00:00:00Z", "ad_id": "a0"}),
        json.dumps({"impression_id": "farthest", "timestamp": "9999-01-01T00:00:00Z", "ad_id": "a0"}),
    ]
    imps = tmp_path / "impressions.jsonl"
    # a BOM before the first record and blank lines: neither is a dead letter
    imps.write_bytes(BOM + ("\n".join(lines) + "\n\n \r\n").encode() + b'{"impression_id": "x\xff", "ad_id": "a1"}\n')
    events = [{"impression_id": f"{DAYS[0]}-0", "event_type": "swipe", "timestamp": f"{DAYS[0]}T10:30:00Z"},
              {"impression_id": "far", "event_type": "swipe", "timestamp": "2099-06-01T00:10:00Z"}]
    event_text = "".join(json.dumps(e) + "\n" for e in events).encode()
    evs = tmp_path / "engagements.jsonl.gz"
    evs.write_bytes(gzip.compress(event_text))
    out = tmp_path / "out"
    manifest = preprocess(files_config(config_for, str(imps), str(evs)), None, str(out))

    assert manifest.dead_letter == {
        "impressions:bad_encoding": 1, "impressions:timestamp_out_of_range": 2,
        "engagements:timestamp_out_of_range": 1,
    }
    # the split comes from the plausible records: the last real day is eval, not the year-2099 record alone
    assert manifest.splits["train"].examples == 4 and manifest.splits["eval"].examples == 2
    assert manifest.splits["train"].positives == {"engagement": 1}
    letters = dead_letters(out)
    undecodable = [d for d in letters if d["reason"] == "bad_encoding"]
    assert undecodable == [{"stream": "impressions", "reason": "bad_encoding",
                            "raw": '{"impression_id": "x\\xff", "ad_id": "a1"}'}]
    skewed = sorted(json.loads(d["raw"])["impression_id"] for d in letters if d["reason"] == "timestamp_out_of_range")
    assert skewed == ["far", "far", "farthest"]
    assert manifest.invalid_fraction_by_stream == pytest.approx({"impressions": 3 / 9, "engagements": 1 / 2})
    # every byte of both files is accounted for: the plain JSONL as stored, the gzip'd one decompressed
    bad_line = len(b'{"impression_id": "x\xff", "ad_id": "a1"}')
    assert manifest.input["impressions"].model_dump() == {
        "files": 1, "bytes": imps.stat().st_size, "framing_bytes": len(BOM) + 9, "blank_lines": 2, "blank_bytes": 4,
        "records": 9, "record_bytes": sum(map(len, lines)) + bad_line,
        "parsed": 8, "parsed_bytes": sum(map(len, lines)), "dead_letters": 1, "dead_letter_bytes": bad_line,
    }
    assert manifest.input["engagements"].model_dump() == {
        "files": 1, "bytes": len(event_text), "framing_bytes": 2, "blank_lines": 0, "blank_bytes": 0,
        "records": 2, "record_bytes": len(event_text) - 2, "parsed": 2, "parsed_bytes": len(event_text) - 2,
        "dead_letters": 0, "dead_letter_bytes": 0,
    }


def test_invalid_utf8_in_a_csv_line_is_a_dead_letter(tmp_path, config_for):
    log = tmp_path / "clicks.csv"
    rows = [f"{i},{DAYS[i % 3]} 1{i % 10}:00:00,{i % 2}".encode() for i in range(9)]
    log.write_bytes(b"\n".join([b"ad_id,click_time,is_attributed", *rows, b"7\xe9,2026-01-02 10:00:00,0"]) + b"\n")
    config = config_for(
        logs={"source": "files", "label_mode": "outcome", "format": "csv", "impressions": str(log),
              "impression_fields": {"timestamp": "click_time"}, "timestamp_format": "%Y-%m-%d %H:%M:%S"},
        tasks=[{"name": "download", "label_column": "is_attributed"}],
        features=FEATURES,
    )
    manifest = preprocess(config, None, str(tmp_path / "out"))

    assert manifest.dead_letter == {"impressions:bad_encoding": 1}
    assert manifest.splits["train"].examples + manifest.splits["eval"].examples == 9
    account = manifest.input["impressions"]
    assert (account.bytes, account.records, account.parsed, account.dead_letters) == (log.stat().st_size, 10, 9, 1)
    assert account.framing_bytes == len(b"ad_id,click_time,is_attributed\n") + 10 and account.problems() == []
    assert [d["raw"] for d in dead_letters(tmp_path / "out")] == ["7\\xe9,2026-01-02 10:00:00,0"]


def test_empty_logs_fail_at_preprocess(tmp_path, config_for, log_writer):
    imps = log_writer(tmp_path / "impressions.jsonl", [])
    evs = log_writer(tmp_path / "engagements.jsonl", [])
    with pytest.raises(NotEnoughExamples, match=r"no examples from 0 impression records read"):
        preprocess(files_config(config_for, imps, evs), None, str(tmp_path / "out"))


def test_a_split_below_its_minimum_fails_naming_the_setting(tmp_path, config_for, log_writer):
    imps = log_writer(tmp_path / "impressions.jsonl", impressions())
    evs = log_writer(tmp_path / "engagements.jsonl", [])
    config = files_config(config_for, imps, evs, split={"eval_days": 1, "min_eval_examples": 3})
    with pytest.raises(NotEnoughExamples, match=r"eval split has 2 examples, fewer than split\.min_eval_examples 3"):
        preprocess(config, None, str(tmp_path / "out"))


def test_invalid_share_is_checked_per_stream(tmp_path, config_for, log_writer):
    imps = log_writer(tmp_path / "impressions.jsonl", impressions(per_day=4))  # 12 valid impressions
    evs = log_writer(tmp_path / "engagements.jsonl", [
        {"impression_id": f"{DAYS[0]}-0", "event_type": "swipe", "timestamp": f"{DAYS[0]}T10:30:00Z"},
        "not json", "not json either",
    ])
    # 2 of 15 records overall (13%) but 2 of 3 engagements (67%)
    config = files_config(config_for, imps, evs, preprocess={
        "direct_running_mode": "in_memory", "direct_num_workers": 1, "output_shards": 1, "max_invalid_fraction": 0.2,
    })
    with pytest.raises(TooManyInvalidRecords, match=(
        r"^engagements: 2 of 3 records read \(66\.67%\) are invalid, above preprocess\.max_invalid_fraction "
        r"20\.00%; top reasons: engagements:bad_json \(2\); dead letters in .*/dead_letter/dead_letter-\*\.jsonl$"
    )):
        preprocess(config, None, str(tmp_path / "out"))


def test_a_truncated_gzip_log_fails_preprocess_naming_the_file(tmp_path, config_for, log_writer):
    # the probe: a .jsonl.gz of 4,000 records cut in half used to give 1,988 examples and a promoted model
    records = [{"impression_id": f"i{n}", "timestamp": f"{DAYS[n % 3]}T10:00:00Z", "ad_id": f"a{n % 5}"}
               for n in range(4000)]
    stored = gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode())
    imps = tmp_path / "impressions.jsonl.gz"
    imps.write_bytes(stored[: len(stored) // 2])
    evs = log_writer(tmp_path / "engagements.jsonl", [])
    with pytest.raises(Exception, match=r"impressions\.jsonl\.gz: compressed data truncated or corrupt after [\d,]+ "
                                        r"bytes of text \([\d,]+ lines\), at stored byte [\d,]+ of [\d,]+"):
        preprocess(files_config(config_for, str(imps), evs), None, str(tmp_path / "out"))
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_parquet_rows_are_accounted_against_the_files_footers(tmp_path, config_for):
    import pyarrow as pa
    import pyarrow.parquet as pq

    imps_dir, evs_dir = tmp_path / "impressions", tmp_path / "engagements"
    imps_dir.mkdir()
    evs_dir.mkdir()
    rows = impressions() + [{"impression_id": "bad", "timestamp": "yesterday", "ad_id": "a0"}]
    pq.write_table(pa.Table.from_pylist(rows[:4]), imps_dir / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist(rows[4:]), imps_dir / "part-1.parquet")
    pq.write_table(pa.Table.from_pylist([
        {"impression_id": f"{DAYS[0]}-0", "event_type": "swipe", "timestamp": f"{DAYS[0]}T10:30:00Z"}]),
        evs_dir / "part-0.parquet")
    config = config_for(logs={"source": "files", "format": "parquet", "impressions": str(imps_dir / "*.parquet"),
                              "engagements": str(evs_dir / "*.parquet")}, tasks=TASKS, features=FEATURES)
    manifest = preprocess(config, None, str(tmp_path / "out"))

    assert manifest.dead_letter == {"impressions:bad_timestamp": 1}
    sizes = sum(path.stat().st_size for path in imps_dir.iterdir())
    assert manifest.input["impressions"].model_dump() == {
        "files": 2, "bytes": sizes, "framing_bytes": sizes, "blank_lines": 0, "blank_bytes": 0,
        "records": 7, "record_bytes": 0, "parsed": 6, "parsed_bytes": 0, "dead_letters": 1, "dead_letter_bytes": 0,
    }
    assert (manifest.input["engagements"].records, manifest.input["engagements"].parsed) == (1, 1)
