"""Local run records: a killed run reads as interrupted, simultaneous runs get distinct ids, failures name a step."""

import json
import subprocess
import sys
import threading

import pytest

from configs import load_config
from ops.local_dag import RunIdError, _StepProgress, create_run_dir, failed_step
from ops.run_history import format_run, format_runs_table, list_runs
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

    from components.progress import CONSOLE_WARNING
    from ops.local_dag import _ProgressStream, _RunConsole

    log, terminal = io.StringIO(), io.StringIO()
    stream = _ProgressStream(log, _RunConsole(terminal, {"preprocess": "preprocess"}, _StepProgress()))
    stream.write("\x1b[32mExecuting task 'preprocess'\x1b[0m\nlots of Beam chatter\n")
    stream.write(f"{CONSOLE_WARNING}feature 'ip' is absent from 100.0% of examples\n")
    assert terminal.getvalue() == "  ▶ preprocess\n  ! feature 'ip' is absent from 100.0% of examples\n"
    assert "lots of Beam chatter" in log.getvalue() and CONSOLE_WARNING in log.getvalue()


class _FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _console(quiet: bool, clock: _FakeClock):
    import io

    from ops.local_dag import _ProgressStream, _RunConsole

    names = {"preprocess-step": "preprocess", "train-step": "train · cpu · run 1"}
    terminal = io.StringIO()
    console = _RunConsole(terminal, names, _StepProgress(), quiet=quiet, still_running_seconds=60, clock=clock)
    return _ProgressStream(io.StringIO(), console), console, terminal


def test_the_console_shows_each_step_its_progress_lines_and_how_long_it_took():
    from components.progress import PROGRESS_PREFIX

    clock = _FakeClock()
    stream, _, terminal = _console(quiet=False, clock=clock)
    stream.write("Executing task 'preprocess-step'\n")
    stream.write(f"    {PROGRESS_PREFIX}impressions: read 60,000 records\n    Beam chatter\n")
    clock.now += 42
    stream.write("Task 'preprocess-step' finished with status SUCCESS\n")
    assert terminal.getvalue().splitlines() == [
        "  ▶ preprocess", "      impressions: read 60,000 records", "  ✓ preprocess: success (42 s)",
    ]


def test_a_silent_step_is_reported_as_still_running_with_its_time_so_far():
    from components.progress import PROGRESS_PREFIX

    clock = _FakeClock()
    stream, console, terminal = _console(quiet=False, clock=clock)
    console.still_running()  # no step yet
    stream.write("Executing task 'train-step'\n")
    clock.now += 30
    console.still_running()  # the terminal spoke 30 s ago: nothing to add
    clock.now += 100
    console.still_running()
    stream.write(f"{PROGRESS_PREFIX}epoch 1/3  step 10/90\n")
    clock.now += 59
    console.still_running()  # the progress line was 59 s ago
    assert terminal.getvalue().splitlines() == [
        "  ▶ train · cpu · run 1", "  … still running: train · cpu · run 1 (2:10)", "      epoch 1/3  step 10/90",
    ]
    stream.write("Task 'train-step' finished with status SUCCESS\n")
    clock.now += 600
    console.still_running()  # nothing runs
    assert terminal.getvalue().splitlines()[-1].startswith("  ✓ train · cpu · run 1: success")


def test_quiet_keeps_warnings_and_failures_and_drops_progress():
    from components.progress import CONSOLE_WARNING, PROGRESS_PREFIX

    clock = _FakeClock()
    stream, console, terminal = _console(quiet=True, clock=clock)
    stream.write("Executing task 'preprocess-step'\n")
    stream.write(f"{PROGRESS_PREFIX}impressions: read 60,000 records\n{CONSOLE_WARNING}feature 'ip' is absent\n")
    clock.now += 500
    console.still_running()
    stream.write("Task 'preprocess-step' finished with status SUCCESS\nExecuting task 'train-step'\n")
    stream.write("Task 'train-step' finished with status FAILURE\n")
    assert terminal.getvalue().splitlines() == [
        "  ! feature 'ip' is absent", "  ✗ train · cpu · run 1: failure (0 s)",
    ]


def test_progress_lines_follow_adrank_quiet(monkeypatch):
    from components.progress import QUIET_ENV, format_duration, progress_quiet

    monkeypatch.delenv(QUIET_ENV, raising=False)
    assert not progress_quiet()
    for value in ("1", "true", "yes"):
        monkeypatch.setenv(QUIET_ENV, value)
        assert progress_quiet()
    monkeypatch.setenv(QUIET_ENV, "0")
    assert not progress_quiet()
    assert [format_duration(s) for s in (0, 41.4, 130, 3723)] == ["0:00", "0:41", "2:10", "1:02:03"]


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
    from components.report.summary import summarize
    from ops.run_history import format_comparison

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
