"""Local runs and their records (`ops.local_run.run`, `ops.local_run.past_runs`): a killed run reads as interrupted,
simultaneous runs get distinct ids, failures name a step."""

import json
import subprocess
import sys
import threading

import pytest

from configs import load_config
from foundation.log_lines import record_from_line
from ops.local_run.console import RunConsole
from ops.local_run.directories import RunIdError, create_run_dir
from ops.local_run.past_runs import format_run, format_runs_table, list_runs
from ops.local_run.record import RunRecord


def _record(run_id="r1", **fields):
    import datetime as dt

    return RunRecord(id=run_id, config_name="local", config_source="local.yaml", config_hash="abc",
                     started=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), status="running", **fields)


def test_a_killed_run_reads_as_interrupted(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    record = _record()
    record.claim_process()
    record.pid = child.pid
    from ops.local_run.record import process_start

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


class _FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _console(quiet: bool = False, clock=None):
    import io

    terminal, log = io.StringIO(), io.StringIO()
    console = RunConsole(terminal, log, quiet=quiet, still_running_seconds=60, clock=clock or _FakeClock())
    return console, terminal, log


def _task(path: str, name: str, state: str, attempts: int = 1, reason: str = ""):
    from ops.spec_executor.job_record import TaskRecord

    return TaskRecord(path, name, state, reason=reason, attempts=attempts)


def _start(console, path: str, name: str) -> None:
    """What the engine tells the console when a container step starts."""
    console.task_started(path, name)
    console.before_start(path, {"outputs": {"outputFile": f"/runs/r/artifacts/0/job/{path}_1/executor_output.json"}})


def _say(console, path: str, name: str, line: str) -> None:
    """A line of the step's output as the engine routes it (a log record to logging, then the console)."""
    from ops.spec_executor.task_events import read_task_line

    read_task_line(console, path, name, line)


def _json_record(message: str, level: str = "INFO", **fields) -> str:
    import json

    return json.dumps({"severity": level, "message": message, "logger": "components.test", "time": "t",
                       **({"adrank": fields} if fields else {})})


def test_a_step_warning_reaches_the_console_and_the_log():
    warning = _json_record("feature 'ip' is absent from 100.0% of examples", "WARNING")
    console, terminal, log = _console()
    with console.running():
        _start(console, "preprocess-step", "preprocess")
        _say(console, "preprocess-step", "preprocess", "lots of Beam chatter")
        _say(console, "preprocess-step", "preprocess", "adrank warning: a line that merely looks like a warning")
        _say(console, "preprocess-step", "preprocess", warning)
    assert terminal.getvalue() == "  ▶ preprocess\n  ! feature 'ip' is absent from 100.0% of examples\n"
    assert log.getvalue().splitlines() == ["task started: preprocess-step (preprocess)", "lots of Beam chatter",
                                           "adrank warning: a line that merely looks like a warning", warning]


def test_the_console_shows_each_step_its_progress_and_how_long_it_took():
    clock = _FakeClock()
    console, terminal, _ = _console(clock=clock)
    with console.running():
        _start(console, "preprocess-step", "preprocess")
        _say(console, "preprocess-step", "preprocess", "    " + _json_record("impressions: read 60,000 records"))
        _say(console, "preprocess-step", "preprocess", _json_record("train split: 4,000 examples", progress=True))
        _say(console, "preprocess-step", "preprocess", _json_record("3 rows dropped", "WARNING"))
        _say(console, "preprocess-step", "preprocess", _json_record("detail", "DEBUG"))
        clock.now += 42
        console.task_ended(_task("preprocess-step", "preprocess", "succeeded"))
        console.task_ended(_task("train-step", "train · cpu · run 1", "cached", attempts=0))
    _say(console, "x", "x", _json_record("after the run: not this console's"))
    assert terminal.getvalue().splitlines() == [
        "  ▶ preprocess", "      impressions: read 60,000 records", "      train split: 4,000 examples",
        "  ! 3 rows dropped", "  ✓ preprocess: success (42 s)", "  ✓ train · cpu · run 1: reused from an earlier attempt",
    ]
    assert console.reused == ["train · cpu · run 1"]


def test_a_silent_step_is_reported_as_still_running_with_its_time_so_far():
    clock = _FakeClock()
    console, terminal, _ = _console(clock=clock)
    console.still_running()  # no step yet
    _start(console, "train-step", "train · cpu · run 1")
    clock.now += 30
    console.still_running()  # the terminal spoke 30 s ago: nothing to add
    clock.now += 100
    console.still_running()
    console.render(record_from_line(_json_record("epoch 1/3  step 10/90", progress=True)))
    clock.now += 59
    console.still_running()  # the progress line was 59 s ago
    assert terminal.getvalue().splitlines() == [
        "  ▶ train · cpu · run 1", "  … still running: train · cpu · run 1 (2:10)", "      epoch 1/3  step 10/90",
    ]
    console.task_ended(_task("train-step", "train · cpu · run 1", "succeeded"))
    clock.now += 600
    console.still_running()  # nothing runs
    assert terminal.getvalue().splitlines()[-1].startswith("  ✓ train · cpu · run 1: success")


def test_quiet_keeps_warnings_and_failures_and_drops_progress():
    clock = _FakeClock()
    console, terminal, _ = _console(quiet=True, clock=clock)
    with console.running():
        _start(console, "preprocess-step", "preprocess")
        _say(console, "preprocess-step", "preprocess", _json_record("impressions: read 60,000 records"))
        _say(console, "preprocess-step", "preprocess", _json_record("read 3 files", progress=True))
        _say(console, "preprocess-step", "preprocess", _json_record("feature 'ip' is absent", "WARNING"))
        clock.now += 500
        console.still_running()
        console.task_ended(_task("preprocess-step", "preprocess", "succeeded"))
        _start(console, "train-step", "train · cpu · run 1")
        console.task_ended(_task("train-step", "train · cpu · run 1", "failed", reason="exited with 1"))
    assert terminal.getvalue().splitlines() == [
        "  ! feature 'ip' is absent", "  ✗ train · cpu · run 1: failed (0 s)",
    ]


def test_an_interrupted_run_names_the_step_that_was_running():
    console, _, _ = _console()
    _start(console, "train-step", "train · cpu · run 1")
    console.task_ended(_task("for-loop-1", "for-loop-1", "interrupted", attempts=0))  # the group around it
    assert console.interrupted_step is None
    console.task_ended(_task("train-step", "train · cpu · run 1", "interrupted"))
    assert console.interrupted_step == "train · cpu · run 1"


def test_the_failed_step_is_the_container_task_and_its_reason_the_last_error_line(tmp_path):
    from ops.local_run.run import _failed_task, _last_error_line
    from ops.spec_executor.job_record import SpecRun

    job = SpecRun("p", "p-1", "u", "t", str(tmp_path), tasks=[
        _task("generate-logs-step", "generate logs", "cached", attempts=0),
        _task("preprocess-step", "preprocess", "failed", reason="exited with 1; last lines of ..."),
        _task("train-step", "train · cpu · run 1", "not_run", attempts=0, reason="upstream 'preprocess-step' failed"),
    ])
    assert _failed_task(job).display_name == "preprocess"
    log = tmp_path / "task.log"
    log.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                   "components.preprocess.TooManyInvalidRecords: 30% invalid > max_invalid_fraction 1%\n"
                   "sh: exited\n")
    assert _last_error_line(log) == "TooManyInvalidRecords: 30% invalid > max_invalid_fraction 1%"


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
    from components.report.aggregation import summarize
    from ops.local_run.past_runs import format_comparison

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


def test_other_libraries_step_records_show_only_from_error():
    """TensorFlow's and kfp's INFO records inside a step (SavedModel assets, executor output) stay in the log."""
    console, terminal, log = _console()
    noisy = json.dumps({"severity": "INFO", "message": "Assets written to: /x/assets", "logger": "tensorflow",
                        "time": "t"})
    failed = json.dumps({"severity": "ERROR", "message": "op failed", "logger": "tensorflow", "time": "t"})
    with console.running():
        _start(console, "train-step", "train")
        _say(console, "train-step", "train", noisy)
        _say(console, "train-step", "train", _json_record("epoch 1/1", progress=True))
        _say(console, "train-step", "train", failed)
    assert terminal.getvalue().splitlines() == ["  ▶ train", "      epoch 1/1", "  ! op failed"]
    assert noisy in log.getvalue()
