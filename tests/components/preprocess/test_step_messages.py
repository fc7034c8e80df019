"""The preprocess step says what it is doing: the files it reads, the records read and dead-lettered, the
examples per split, the analysis and the writes; workers add running counts on long stages; quiet says nothing.
What it says are progress records, written as JSON lines on standard error (components.step_logging)."""

from __future__ import annotations

import logging

import pytest

from components.preprocess.run import preprocess
from components.preprocess.step_messages import ParseTally, plural
from foundation.log_lines import LEVEL_ENV, record_fields, record_from_line

IMPRESSIONS = [
    {"impression_id": f"imp-{i}", "timestamp": f"2026-01-0{1 + i % 2}T1{i}:00:00.000Z", "ad_id": f"a{i % 3}"}
    for i in range(6)
] + ["not json"]
EVENTS = [{"event_id": "ev-1", "impression_id": "imp-1", "event_type": "swipe", "timestamp": "2026-01-02T11:00:01.000Z"}]


def test_a_worker_prints_its_running_counts_at_most_every_interval(caplog):
    now = [0.0]
    tally = ParseTally("impressions", interval_seconds=30, clock=lambda: now[0], logger=logging.getLogger("tally"))
    caplog.set_level(logging.INFO, logger="tally")
    for _ in range(3000):
        tally.count(parsed=True)
    now[0] = 31.0
    for index in range(2000):
        tally.count(parsed=index % 10 != 0)  # the 3,072nd record is the first checked after 30 s
    for _ in range(5000):
        tally.count(parsed=True)  # under 30 s since that line: silent
    (record,) = caplog.records
    assert record.getMessage().startswith("impressions: 3,064 records parsed, 8 dead letters so far (")
    assert record_fields(record) | {"worker": "w"} == {"progress": True, "stream": "impressions", "records": 3064,
                                                       "dead_letters": 8, "worker": "w"}
    assert tally.parsed + tally.dead_letters == 10_000 and tally.dead_letters == 200
    tally.flush_metrics()  # outside a pipeline the metrics counters are no-ops


@pytest.fixture()
def tiny_logs(tmp_path, config_for, log_writer):
    config = config_for(
        logs={"source": "files", "impressions": log_writer(tmp_path / "i.jsonl", IMPRESSIONS),
              "engagements": log_writer(tmp_path / "e.jsonl", EVENTS)},
        tasks=[{"name": "engagement", "event_type": "swipe"}],
        features=[{"name": "ad_id", "kind": "categorical"}],
    )
    return config, tmp_path


def _records(text: str) -> list[logging.LogRecord]:
    return [record for record in map(record_from_line, text.splitlines()) if record is not None]


def test_preprocess_prints_its_stages_with_counts(tiny_logs, capsys, monkeypatch):
    config, root = tiny_logs
    monkeypatch.delenv(LEVEL_ENV, raising=False)
    preprocess(config, None, str(root / "out"))
    records = [record for record in _records(capsys.readouterr().err) if record_fields(record).get("progress")]
    lines = [record.getMessage() for record in records]
    assert lines[0].startswith("impressions: 1 file, ") and lines[0].endswith(f"({root / 'i.jsonl'})")
    assert lines[1].startswith("engagements: 1 file, ")
    for expected in ("impressions: read 7 records", "engagements: read 1 record", "dead letters: impressions 1",
                     "train split: 3 examples", "eval split: 3 examples",
                     "train split analysed: vocabularies and statistics ready",
                     "train examples written (1 file)", "eval examples written (1 file)"):
        assert expected in lines
    assert lines[-1] == "examples: train 3, eval 3; dead letters 1 (12.50% of records read)"
    assert record_fields(records[-1]) == {"progress": True, "train_examples": 3, "eval_examples": 3,
                                          "dead_letters": 1, "invalid_fraction": 0.125}
    read = next(record for record in records if record.getMessage() == "impressions: read 7 records")
    assert record_fields(read)["count"] == 7 and records[0].levelno == logging.INFO


def test_preprocess_is_silent_when_quiet(tiny_logs, capsys, monkeypatch):
    config, root = tiny_logs
    monkeypatch.setenv(LEVEL_ENV, "WARNING")
    preprocess(config, None, str(root / "out"))
    assert not [record for record in _records(capsys.readouterr().err) if record_fields(record).get("progress")]


def test_plural():
    assert [plural(1, "file"), plural(2, "file"), plural(12_000, "record")] == ["1 file", "2 files", "12,000 records"]
