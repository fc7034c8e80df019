"""`adrank runs list` never hides runs: a truncated run.json, or one with a field a newer adrank wrote, is a row
with its problem, beside every other run; `runs show` of it says what is wrong; `--resume` of it refuses in one line."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from ops.cli import main
from ops.local_run.past_runs import format_run, list_runs
from ops.local_run.record import RunRecord, RunRecordError


def write_run(runs_dir, run_id: str, hour: int) -> None:
    (runs_dir / run_id).mkdir(parents=True)
    RunRecord(id=run_id, config_name="local", config_source="local.yaml", config_hash="abc", status="succeeded",
              started=dt.datetime(2026, 1, 1, hour, tzinfo=dt.timezone.utc), best_logloss=0.25,
              best_target="cpu").write(runs_dir / run_id)


@pytest.fixture
def runs_dir(tmp_path):
    for hour, run_id in enumerate(["good-1", "truncated", "newer", "good-2", "not-a-record"]):
        write_run(tmp_path, run_id, hour)
    text = (tmp_path / "truncated" / "run.json").read_text()
    (tmp_path / "truncated" / "run.json").write_text(text[:len(text) // 2])
    newer = json.loads((tmp_path / "newer" / "run.json").read_text())
    (tmp_path / "newer" / "run.json").write_text(json.dumps(newer | {"lineage": {"parent": "x"}}))
    (tmp_path / "not-a-record" / "run.json").write_text(json.dumps({"id": "not-a-record", "status": "flying"}))
    return tmp_path


def test_every_run_is_listed_and_a_damaged_one_says_what_is_wrong(runs_dir, capsys):
    listed = {run.id: run for run in list_runs(runs_dir)}
    assert set(listed) == {"good-1", "truncated", "newer", "good-2", "not-a-record"}
    assert listed["truncated"].record is None and "not a complete JSON record" in listed["truncated"].problem
    assert listed["newer"].record is not None and listed["newer"].record.best_target == "cpu"
    assert "unknown field 'lineage', written by a newer adrank" in listed["newer"].problem
    assert "field 'config_name'" in listed["not-a-record"].problem

    assert main(["runs", "list", "--runs-dir", str(runs_dir)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "succeeded" in rows["good-1"] and "0.25000" in rows["good-2"]
    assert "unreadable (run.json: see below)" in rows["truncated"]
    assert "succeeded (run.json: see below)" in rows["newer"] and "0.25000" in rows["newer"]
    assert f"truncated: {runs_dir / 'truncated' / 'run.json'}: not a complete JSON record" in out


def test_runs_show_of_a_damaged_run_names_the_problem(runs_dir, capsys):
    assert main(["runs", "show", "--runs-dir", str(runs_dir), "truncated"]) == 0
    out = capsys.readouterr().out
    assert "status:   unreadable" in out and "not a complete JSON record (truncated or damaged" in out
    shown = format_run(runs_dir / "newer")
    assert "status:   succeeded" in shown and "unknown field 'lineage'" in shown


def test_the_record_reader_names_the_file(runs_dir):
    with pytest.raises(RunRecordError, match="truncated/run.json: not a complete JSON record"):
        RunRecord.read(runs_dir / "truncated")
    with pytest.raises(RunRecordError, match="newer/run.json: unknown field 'lineage'") as raised:
        RunRecord.read(runs_dir / "newer")
    assert raised.value.unknown_fields == ("lineage",)


def test_resuming_a_damaged_run_is_one_line(runs_dir, capsys):
    (runs_dir / "truncated" / "config.yaml").write_text("name: local\n")
    assert main(["run", "--resume", "truncated", "--runs-dir", str(runs_dir)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cannot resume" in err and "not a complete JSON record" in err
