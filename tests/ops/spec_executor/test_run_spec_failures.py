"""What `run-spec` does with bad input and when it is stopped: a spec that is not readable YAML is one line
naming the file (no traceback, exit status 2); a run stopped by SIGTERM, or killed outright, reads as
`interrupted` in its spec_run.json; one executor per job: a second run-spec of the same root and job id is refused
naming the first's pid, and what one job cleans up is its own."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ops.cli import main
from ops.spec_executor.job_record import mark_interrupted_runs, recorded_status

REPO = Path(__file__).parents[3]
PIPELINE_ROOT = "gs://engine-tests/root"


@pytest.mark.parametrize("content, problem", [
    (b"root:\n  dag: [unclosed\n", "not valid YAML at line 3, column 1: expected ',' or ']', but got '<stream end>'"),
    (b"root:\n\tdag: {}\n", "not valid YAML at line 2, column 1: found character '\\t' that cannot start any token"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "not a YAML text file (byte 0 is not UTF-8; binary input?)"),
    (b"PK\x03\x04\x00\x00", "not a YAML text file (it contains NUL bytes; binary input?)"),
    (b"- just\n- a list\n", "not a compiled KFP PipelineSpec (no 'root')"),
])
def test_an_unreadable_spec_is_one_line_naming_the_file(tmp_path, capsys, content, problem):
    spec = tmp_path / "pipeline.yaml"
    spec.write_bytes(content)
    assert main(["run-spec", str(spec), "--root", str(tmp_path / "gcs"), "--project", "p",
                 "--pipeline-root", PIPELINE_ROOT]) == 2
    err = capsys.readouterr().err
    assert err == f"adrank run-spec: error: {spec}: {problem}\n"


def _start(compiled_spec: Path, root: Path, create_time: str = "2026-03-04T04:00:00Z",
           **environment: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "ops.cli", "run-spec", str(compiled_spec), "--root", str(root), "--project", "p",
         "--pipeline-root", PIPELINE_ROOT, "--create-time", create_time],
        env={**os.environ, "PYTHONPATH": str(REPO), **environment}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)


def _wait_for_running_task(record: Path, executor: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert executor.poll() is None, executor.stderr.read() if executor.stderr else ""
        try:
            tasks = json.loads(record.read_text())["tasks"]
        except (OSError, ValueError, KeyError):
            tasks = []
        if any(task["state"] == "running" for task in tasks):
            time.sleep(1.0)  # the task's process is started just after the record says so
            return
        time.sleep(0.2)
    raise AssertionError("the task never started")


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_a_stopped_run_reads_as_interrupted(compiled, tmp_path, signal_name):
    record = tmp_path / "spec-runs" / "sleeper-20260304040000" / "spec_run.json"
    executor = _start(compiled("sleeper"), tmp_path)
    try:
        _wait_for_running_task(record, executor)
        executor.send_signal(getattr(signal, signal_name))
        code = executor.wait(timeout=60)
    finally:
        if executor.poll() is None:
            executor.kill()
    written = json.loads(record.read_text())
    if signal_name == "SIGTERM":
        assert code == 128 + signal.SIGTERM
        assert written["status"] == "interrupted"
        out = executor.stdout.read() if executor.stdout else ""
        assert "interrupted sleep-for (sleep-for): the executor was stopped while the task ran" in out
        assert f"sleeper-20260304040000: interrupted; record: {record}" in out
    else:  # nothing ran in the executor after the kill: the record still says running, its pid is gone
        assert written["status"] == "running" and recorded_status(written) == "interrupted"
        assert mark_interrupted_runs(tmp_path) == [record]
        written = json.loads(record.read_text())
        assert written["status"] == "interrupted"
    (task,) = written["tasks"]
    assert task["state"] == "interrupted" and task["task"] == "sleep-for"
    assert not (record.parent / "tmp").exists() or signal_name == "SIGKILL"  # SIGKILL leaves no time to clean


def test_a_record_of_a_live_executor_stays_running():
    assert recorded_status({"status": "running", "executor_pid": os.getpid()}) == "running"
    assert recorded_status({"status": "succeeded", "executor_pid": 0}) == "succeeded"


def _wait_for(condition, executor: subprocess.Popen, what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert executor.poll() is None, executor.stderr.read() if executor.stderr else ""
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_one_executor_per_job_and_each_cleans_up_only_its_own(compiled, tmp_path):
    """The first job's task holds a file in its TMPDIR until released. A second run-spec of the same root and job
    id (same create time) is refused naming the first's pid, and leaves it alone; a job with another id on the
    same root, stopped by SIGTERM while its task runs, removes its own `tmp` and not the first's; the first then
    ends well, its temp file intact to the end (its task checks)."""
    spec, release = compiled("temp-holder"), tmp_path / "release"
    jobs = tmp_path / "root" / "spec-runs"
    held = jobs / "temp-holder-20260304040000" / "tmp" / "held"
    first = _start(spec, tmp_path / "root", ENGINE_TEST_RELEASE=str(release))
    try:
        _wait_for(held.exists, first, "the first job's task never wrote its temp file")
        second = _start(spec, tmp_path / "root", ENGINE_TEST_RELEASE=str(release))
        _, err = second.communicate(timeout=120)
        assert second.returncode == 2
        assert err.startswith(f"adrank run-spec: error: job temp-holder-20260304040000 under {tmp_path / 'root'} is "
                              f"being run by another executor (pid {first.pid} on "), err
        assert held.exists() and first.poll() is None

        other = _start(spec, tmp_path / "root", "2026-03-04T05:00:00Z", ENGINE_TEST_RELEASE=str(release))
        others_file = jobs / "temp-holder-20260304050000" / "tmp" / "held"
        _wait_for(others_file.exists, other, "the other job's task never wrote its temp file")
        other.send_signal(signal.SIGTERM)
        assert other.wait(timeout=60) == 128 + signal.SIGTERM
        assert not others_file.parent.exists()  # its own tmp: removed
        assert held.exists()  # the first job's: untouched

        release.touch()
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0, out + err
    finally:
        for executor in (first,):
            if executor.poll() is None:
                executor.kill()
    record = json.loads((jobs / "temp-holder-20260304040000" / "spec_run.json").read_text())
    assert record["status"] == "succeeded" and record["executor_pid"] == first.pid
    assert not held.parent.exists()  # removed by its own job at the end
