"""`adrank retrain --resume REPLAY`: an interrupted replay continues from its first unfinished day, each day with
the window its plan gave it; the finished days are kept, not run again. The DAG itself is replaced here (its resume
is tests/ops/test_resume_anywhere.py and tests/e2e/test_resume.py); what runs is the real replay loop, run records
and `run_locally`'s resume checks."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import ops.local_run.replay
import ops.local_run.run
from ops.cli import main
from ops.local_run.record import RunRecord
from ops.local_run.replay import PLAN_FILE
from ops.local_run.run import LocalRunInterrupted

REPLAY = ["--set", "logs.lookback_days=2", "--set", "promotion.enabled=true"]


@pytest.fixture
def dag(monkeypatch):
    """The DAG of each day's run replaced: it records (run id, window end, attempt) and is interrupted once in the
    run `interrupt` names."""
    calls: list[tuple[str, str, int]] = []
    state = SimpleNamespace(interrupt="rp-day2", calls=calls)

    def run_dag(config, run_dir, record, resume, window_end, quiet):
        calls.append((record.id, window_end, record.attempts))
        if record.id == state.interrupt:
            state.interrupt = None
            record.status, record.failure_reason = "interrupted", "interrupted (SIGTERM)"
            record.write(run_dir)
            raise LocalRunInterrupted(record)
        record.status, record.finished = "succeeded", dt.datetime.now(dt.timezone.utc)
        record.best_logloss, record.best_target = 0.25, "cpu"
        record.write(run_dir)
        return record

    def day_result(index, window_end, run_dir, record):
        return SimpleNamespace(day=index, window_end=window_end, run_id=record.id,
                               decision=SimpleNamespace(promoted=True, reason="the test's decision"))

    monkeypatch.setattr(ops.local_run.run, "_run_dag", run_dag)
    monkeypatch.setattr(ops.local_run.replay, "_day_result", day_result)
    monkeypatch.setattr(ops.local_run.replay, "write_reports", lambda series, directory: {})
    return state


def test_an_interrupted_replay_continues_from_its_first_unfinished_day(tmp_path, dag, capsys):
    runs = str(tmp_path / "runs")
    assert main(["retrain", "--days", "3", "--runs-dir", runs, "--replay-id", "rp", *REPLAY]) == 130
    assert "Continue it: adrank retrain --resume rp" in capsys.readouterr().err
    windows = ["2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z"]
    assert dag.calls == [("rp-day1", windows[0], 1), ("rp-day2", windows[1], 1)]
    assert json.loads((tmp_path / "runs" / "rp" / PLAN_FILE).read_text())["window_ends"] == windows
    assert RunRecord.read(tmp_path / "runs" / "rp-day2").window_end == windows[1]

    assert main(["retrain", "--resume", "rp", "--runs-dir", runs]) == 0
    out = capsys.readouterr().out
    assert "day 1/3: finished in an earlier attempt (run rp-day1)" in out
    assert "day 2/3: window end 2026-01-04T00:00:00Z (resuming its run)" in out
    assert "replay rp done: 3 days, 3 promoted" in out
    assert dag.calls[2:] == [("rp-day2", windows[1], 2), ("rp-day3", windows[2], 1)]  # day 1 not run again


def test_adrank_run_resume_of_a_replay_day_keeps_its_window(tmp_path, dag, capsys):
    runs = str(tmp_path / "runs")
    assert main(["retrain", "--days", "2", "--runs-dir", runs, "--replay-id", "rp", *REPLAY]) == 130
    assert main(["run", "--resume", "rp-day2", "--runs-dir", runs]) == 0
    assert dag.calls[-1] == ("rp-day2", "2026-01-04T00:00:00Z", 2)


@pytest.mark.parametrize("argv, message", [
    (["--resume", "rp", "--days", "3"], "drop --days"),
    (["--resume", "rp", "--set", "training.epochs=2"], "drop --set"),
    (["--resume", "nothing-here"], "--resume nothing-here: replay nothing-here is not under"),
    (["--resume", "../x"], "a replay id is a directory name"),
    ([], "--days: how many days to replay"),
])
def test_resume_options_that_cannot_work_are_one_line(tmp_path, capsys, argv, message):
    (tmp_path / "runs").mkdir()
    assert main(["retrain", "--runs-dir", str(tmp_path / "runs"), *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_a_replay_without_a_plan_says_why_it_cannot_resume(tmp_path, capsys):
    (tmp_path / "runs" / "old-replay").mkdir(parents=True)
    assert main(["retrain", "--resume", "old-replay", "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "recorded no plan" in capsys.readouterr().err


def test_a_days_figures_are_read_from_the_steps_the_engine_recorded(tmp_path, monkeypatch):
    """`_day_result` finds the manifest and the training summaries through the latest attempt's engine record
    (`spec-runs/<job>/spec_run.json`), whether a step ran in that attempt or was reused from an earlier one."""
    import importlib.util

    from components.contracts.promotion_decision import DECISION_FILE
    from ops.spec_executor.job_record import SpecRun, TaskRecord

    spec = importlib.util.spec_from_file_location(
        "report_fixtures", Path(__file__).resolve().parents[1] / "components" / "report" / "test_report.py")
    fixtures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixtures)
    run_dir = tmp_path / "rp-day1"
    examples, summary = run_dir / "artifacts/0/job-1/preprocess-step_1/examples", run_dir / "artifacts/0/job-2/train_1/summary"
    examples.mkdir(parents=True)
    fixtures.manifest().write(examples)
    fixtures.run("cpu", 0, 0.4, 1000.0).write(summary)
    earlier = SpecRun("adrank-local", "job-1", "u", "t", str(run_dir), tasks=[
        TaskRecord("preprocess-step", "preprocess", "succeeded", outputs={"examples": [{"uri": str(examples)}]})])
    latest = SpecRun("adrank-local", "job-2", "u", "t", str(run_dir), tasks=[
        TaskRecord("preprocess-step", "preprocess", "cached", outputs={"examples": [{"uri": str(examples)}]}),
        TaskRecord("train-step", "train · cpu · run 1", "succeeded", outputs={"summary": [{"uri": str(summary)}]})])
    earlier.write(run_dir / "spec-runs/job-1/spec_run.json")
    latest.write(run_dir / "spec-runs/job-2/spec_run.json")
    (run_dir / DECISION_FILE).write_text("{}")  # read by the stand-in below (the decision is not what this tests)
    monkeypatch.setattr(ops.local_run.replay.PromotionDecision, "read",
                        lambda path: ops.local_run.replay.PromotionDecision.model_construct(promoted=True,
                                                                                   primary_task="engagement"))
    record = RunRecord(id="rp-day1", config_name="c", config_source="s", config_hash="h",
                       started=dt.datetime.now(dt.timezone.utc), status="succeeded")
    day = ops.local_run.replay._day_result(1, "2026-01-03T00:00:00Z", run_dir, record)
    assert day.eval_examples == 300 and day.decision.promoted and day.warm_start is False
