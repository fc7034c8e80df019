"""Local run records: a killed run reads as interrupted, simultaneous runs get distinct ids, failures name a step."""

import json
import subprocess
import sys
import threading

import pytest

from configs import load_config
from ops.local_run import RunIdError, _StepProgress, create_run_dir, failed_step
from ops.local_runs import format_run, format_runs_table, list_runs
from ops.run_record import RunRecord


def _record(run_id="r1", **fields):
    import datetime as dt

    return RunRecord(id=run_id, config_name="local", config_source="local.yaml", config_hash="abc",
                     started=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), status="running", **fields)


def test_a_killed_run_reads_as_interrupted(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    record = _record()
    record.claim_process()
    record.pid = child.pid
    from ops.run_record import process_start

    record.process_start = process_start(child.pid)
    (tmp_path / "r1").mkdir()
    record.write(tmp_path / "r1")
    assert RunRecord.read(tmp_path / "r1").status == "running"

    child.kill()
    child.wait()
    assert RunRecord.read(tmp_path / "r1").status == "interrupted"
    assert "interrupted" in format_runs_table(tmp_path)
    assert f"process {child.pid}" in format_run(tmp_path / "r1")
    assert json.loads((tmp_path / "r1" / "run.json").read_text())["status"] == "running"  # the file is not rewritten


def test_a_reused_pid_is_not_the_run(tmp_path):
    record = _record()
    record.claim_process()  # this (live) process, but started at another time
    record.process_start = "1"
    (tmp_path / "r1").mkdir()
    record.write(tmp_path / "r1")
    assert list_runs(tmp_path)[0].status == "interrupted"


def test_a_run_of_another_host_or_without_pid_stays_running(tmp_path):
    for run_id, record in {"a": _record("a", pid=1, host="elsewhere"), "b": _record("b")}.items():
        (tmp_path / run_id).mkdir()
        record.write(tmp_path / run_id)
    assert {r.status for r in list_runs(tmp_path)} == {"running"}


def test_runs_started_in_the_same_second_get_distinct_ids(tmp_path):
    config = load_config()
    made, errors = [], []

    def start():
        try:
            made.append(create_run_dir(tmp_path, None, config).name)
        except Exception as error:  # noqa: BLE001 - the test reports any collision
            errors.append(error)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(set(made)) == 8
    assert len({name.rsplit("-local", 1)[0] for name in made}) <= 2  # same second (or two), suffixed


def test_an_explicit_run_id_must_be_free_and_plain(tmp_path):
    config = load_config()
    create_run_dir(tmp_path, "mine", config)
    with pytest.raises(RunIdError, match="already taken"):
        create_run_dir(tmp_path, "mine", config)
    for bad in ("../escape", "a/b", ".hidden", ""):
        with pytest.raises(RunIdError, match="--run-id"):
            create_run_dir(tmp_path, bad, config)


def test_a_failure_outside_any_task_still_names_a_step():
    names = {"preprocess": "preprocess", "train": "train · cpu · run 1", "report": "report"}
    progress = _StepProgress()
    assert failed_step("'logs'", names, progress) == "pipeline set-up, before 'preprocess'"
    progress.started.append("preprocess")
    assert failed_step("'logs'", names, progress) == "preprocess"
    progress.finished["preprocess"] = "SUCCESS"
    progress.started.append("train")
    progress.finished["train"] = "FAILURE"
    assert failed_step("something else", names, progress) == "train · cpu · run 1"
    assert failed_step("Inner task failed: 'report'", names, progress) == "report"


def test_a_step_warning_reaches_the_console_and_the_log():
    import io

    from components.preprocess.run import CONSOLE_WARNING
    from ops.local_run import _ProgressStream

    log, terminal = io.StringIO(), io.StringIO()
    stream = _ProgressStream(log, terminal, {"preprocess": "preprocess"}, _StepProgress())
    stream.write("\x1b[32mExecuting task 'preprocess'\x1b[0m\nlots of Beam chatter\n")
    stream.write(f"{CONSOLE_WARNING}feature 'ip' is absent from 100.0% of examples\n")
    assert terminal.getvalue() == "  ▶ preprocess\n  ! feature 'ip' is absent from 100.0% of examples\n"
    assert "lots of Beam chatter" in log.getvalue() and CONSOLE_WARNING in log.getvalue()


def _report_fixtures():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "report_fixtures", Path(__file__).resolve().parents[1] / "components" / "report" / "test_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_show_and_compare_read_the_report_summary(tmp_path):
    """`runs show` and `runs compare` read summary.json as the report's BenchmarkSummary."""
    from components.report.benchmark import summarize
    from ops.local_runs import format_comparison

    fixtures = _report_fixtures()
    for run_id, logloss, speed in (("a", 0.40, 1000.0), ("b", 0.38, 2000.0)):
        (tmp_path / run_id).mkdir()
        record = _record(run_id)
        record.status = "succeeded"
        summary = summarize(fixtures.config(), fixtures.manifest(), [fixtures.run("cpu", 0, logloss, speed)])
        (tmp_path / run_id / "summary.json").write_text(summary.model_dump_json())
        record.attach_summary(tmp_path / run_id / "summary.json")
        assert (record.best_target, record.best_logloss) == ("cpu", logloss)
        record.write(tmp_path / run_id)

    shown = format_run(tmp_path / "b")
    assert "0.38000" in shown and "2,000" in shown and "constant-CTR log-loss" in shown
    compared = format_comparison(tmp_path / "a", tmp_path / "b")
    assert "-0.02000" in compared and "2.00×" in compared
    (tmp_path / "c").mkdir()
    _record("c").write(tmp_path / "c")
    with pytest.raises(LookupError, match="run c has no summary.json"):
        format_comparison(tmp_path / "a", tmp_path / "c")
