"""`adrank run --resume` where users run it: relative or absolute runs dirs, from the directory the run started in
or from another one, retried any number of times; and only one process at a time runs a run (a lock, not a
read-check-write). The whole flow (kill after preprocess, resume from another directory) is
tests/e2e/test_resume.py::test_a_run_started_in_one_directory_resumes_from_another (long)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from configs import config_hash, load_config
from ops.cli import main
from ops.local_run.directories import RunIdError
from ops.local_run.lock import LOCK_FILE, RunBusy, RunLock
from ops.local_run.record import RunRecord
from ops.local_run.resume import resumed_window_end
from ops.spec_executor.execution_cache import ExecutionCache
from ops.spec_executor.executor_input import TaskOutputs
from ops.spec_executor.storage import CloudStorageRoot


def finished_step(root: Path, job: str = "job-1") -> tuple[ExecutionCache, TaskOutputs]:
    """A step the engine ran under `root` (a run directory): its output files and its entry in the run's cache."""
    examples = root / "artifacts" / "0" / job / "preprocess-step_1" / "examples"
    examples.mkdir(parents=True)
    (examples / "part-0").write_text("rows")
    outputs = TaskOutputs({"examples": [{"uri": str(examples), "metadata": {"rows": 1}}]}, {})
    cache = ExecutionCache(root, "adrank-local")
    cache.record("key", job, "preprocess-step", outputs, CloudStorageRoot(root).local_path)
    return cache, outputs


def reused_uri(root: Path) -> str | None:
    """The examples URI a resumed attempt under `root` would be handed (None: the step runs again)."""
    hit = ExecutionCache(root, "adrank-local").lookup("key", CloudStorageRoot(root).local_path)
    return hit.outputs.artifacts["examples"][0]["uri"] if hit else None


def test_a_relative_runs_dir_is_reused_under_its_absolute_path_however_often_it_is_resumed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    finished_step(Path(os.path.abspath("runs/r1")))
    for _ in range(2):
        uri = reused_uri(Path(os.path.abspath("runs/r1")))
        assert uri == str(tmp_path / "runs/r1/artifacts/0/job-1/preprocess-step_1/examples")


def test_a_run_is_reused_from_another_directory_and_after_the_runs_dir_moved_or_was_copied(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    finished_step(Path(os.path.abspath("runs/r1")))
    monkeypatch.chdir(tmp_path / "b")
    assert reused_uri(Path(os.path.abspath("../a/runs/r1"))) == str(
        tmp_path / "a/runs/r1/artifacts/0/job-1/preprocess-step_1/examples")
    shutil.copytree(tmp_path / "a/runs/r1", tmp_path / "copy")
    (tmp_path / "a" / "runs").rename(tmp_path / "moved")  # the cache names its files relative to the run dir
    uri = reused_uri(tmp_path / "moved/r1")
    assert uri == str(tmp_path / "moved/r1/artifacts/0/job-1/preprocess-step_1/examples") and Path(uri, "part-0").exists()
    assert reused_uri(tmp_path / "copy").startswith(str(tmp_path / "copy"))


def test_a_step_whose_output_files_changed_or_went_missing_is_not_reused(tmp_path):
    finished_step(tmp_path)
    part = tmp_path / "artifacts/0/job-1/preprocess-step_1/examples/part-0"
    part.write_text("rows!")
    assert reused_uri(tmp_path) is None
    part.write_text("rows")
    assert reused_uri(tmp_path) is not None
    part.unlink()
    assert reused_uri(tmp_path) is None


def test_an_interrupted_training_step_gets_the_checkpoints_of_its_earlier_attempt_with_the_same_inputs(tmp_path):
    from ops.local_run.resume import restore_checkpoints
    from ops.spec_executor.runner import EXECUTOR_INPUT_FILE

    root = CloudStorageRoot(tmp_path)

    def executor_input(job: str, examples: str) -> dict:
        return {"inputs": {"parameterValues": {"target": "cpu"}, "artifacts": {"examples": {"artifacts": [
                    {"uri": str(tmp_path / examples), "metadata": {}}]}}},
                "outputs": {"artifacts": {"model": {"artifacts": [
                    {"uri": str(tmp_path / "artifacts/0" / job / "train-step_1/model")}]}},
                    "outputFile": str(tmp_path / "artifacts/0" / job / "train-step_1/executor_output.json")}}

    earlier = executor_input("job-1", "examples-1")
    (tmp_path / "spec-runs/job-1/tasks/train-step").mkdir(parents=True)
    (tmp_path / "spec-runs/job-1/tasks/train-step" / EXECUTOR_INPUT_FILE).write_text(json.dumps(root.portable(earlier)))
    checkpoints = tmp_path / "artifacts/0/job-1/train-step_1/model/checkpoints"
    checkpoints.mkdir(parents=True)
    (checkpoints / "checkpoint").write_text("model_checkpoint_path: ckpt-3")
    (checkpoints / "ckpt-3.index").write_text("weights")

    other_inputs = executor_input("job-2", "examples-2")  # preprocess ran again: a cold start
    assert restore_checkpoints(tmp_path / "spec-runs", "job-2", "train-step", other_inputs) is None
    same_inputs = executor_input("job-2", "examples-1")
    assert restore_checkpoints(tmp_path / "spec-runs", "job-2", "train-step", same_inputs) == checkpoints
    assert (tmp_path / "artifacts/0/job-2/train-step_1/model/checkpoints/ckpt-3.index").read_text() == "weights"


def a_failed_run(runs_dir: Path, run_id: str = "r1", window_end: str | None = "") -> Path:
    """A run directory as a killed `adrank run` leaves it: its config and a failed record (no DAG needed)."""
    config = load_config()
    run_dir = runs_dir / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
    RunRecord(id=run_id, config_name=config.name, config_source="local.yaml", config_hash=config_hash(config),
              started=dt.datetime.now(dt.timezone.utc), status="failed", window_end=window_end).write(run_dir)
    return run_dir


@pytest.fixture
def dag_runs(monkeypatch):
    """`ops.local_run.run._run_dag` replaced: the run directories and windows the entry point hands to the DAG."""
    import ops.local_run.run

    seen: list[tuple[Path, str]] = []

    def run_dag(config, run_dir, record, resume, window_end, quiet):
        seen.append((run_dir, window_end))
        record.status, record.failed_step, record.failure_reason = "failed", "preprocess", "stopped by the test"
        record.write(run_dir)
        raise ops.local_run.run.LocalRunFailed(record)

    monkeypatch.setattr(ops.local_run.run, "_run_dag", run_dag)
    return seen


@pytest.mark.parametrize("where", ["relative", "absolute", "from another directory"])
def test_adrank_run_resume_hands_the_dag_one_absolute_run_dir(tmp_path, monkeypatch, dag_runs, where):
    run_dir = a_failed_run(tmp_path / "here" / "runs")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / ("elsewhere" if where == "from another directory" else "here"))
    runs_dir = {"relative": "runs", "absolute": str(tmp_path / "here" / "runs"),
                "from another directory": "../here/runs"}[where]
    assert main(["run", "--resume", "r1", "--runs-dir", runs_dir]) == 2
    assert dag_runs == [(run_dir, "")]
    assert RunRecord.read(run_dir).attempts == 2


def test_a_resumed_replay_day_keeps_its_window(tmp_path, dag_runs):
    from ops.local_run.run import LocalRunFailed, run_locally

    a_failed_run(tmp_path, "replay-day2", window_end="2026-01-05T00:00:00Z")
    with pytest.raises(LocalRunFailed):
        run_locally(load_config(), tmp_path, "local.yaml", "replay-day2", resume=True)
    assert dag_runs[-1][1] == "2026-01-05T00:00:00Z"
    with pytest.raises(RunIdError, match="read the window ending 2026-01-05T00:00:00Z; a resume keeps it"):
        run_locally(load_config(), tmp_path, "local.yaml", "replay-day2", resume=True,
                    window_end="2026-01-06T00:00:00Z")


def test_the_window_a_resume_reads():
    def record(window_end):
        return RunRecord(id="r", config_name="c", config_source="s", config_hash="h",
                         started=dt.datetime.now(dt.timezone.utc), status="failed", window_end=window_end)

    assert resumed_window_end(record("2026-01-05T00:00:00Z"), "") == "2026-01-05T00:00:00Z"
    assert resumed_window_end(record(""), "") == ""
    assert resumed_window_end(record(None), "2026-01-05T00:00:00Z") == "2026-01-05T00:00:00Z"  # an older record
    with pytest.raises(RunIdError, match=r"\(no window: every log\)"):
        resumed_window_end(record(""), "2026-01-05T00:00:00Z")


def test_a_run_is_locked_once_and_released_with_its_holder(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(RunBusy, match=f"being run by another process \\(pid {os.getpid()} on "):
            RunLock(tmp_path)
    RunLock(tmp_path).release()  # released: free again
    holder = subprocess.Popen([sys.executable, "-c", f"from ops.local_run.lock import RunLock; l = RunLock({str(tmp_path)!r});"
                               "print('held', flush=True); import time; time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True, env=os.environ | {"PYTHONPATH": os.getcwd()})
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(RunBusy, match=f"pid {holder.pid}"):
            RunLock(tmp_path)
    finally:
        holder.kill()  # kill -9 leaves no stale lock
        holder.wait()
    RunLock(tmp_path).release()
    assert (tmp_path / LOCK_FILE).exists()


def test_two_resumes_started_at_once_one_runs_the_other_is_refused(tmp_path, monkeypatch):
    import ops.local_run.run
    from ops.local_run.run import LocalRunFailed, run_locally

    a_failed_run(tmp_path)
    inside, release = threading.Event(), threading.Event()

    def run_dag(config, run_dir, record, resume, window_end, quiet):
        inside.set()
        release.wait(10)
        record.status = "failed"
        record.write(run_dir)
        raise LocalRunFailed(record)

    monkeypatch.setattr(ops.local_run.run, "_run_dag", run_dag)
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def resume() -> None:
        start.wait()
        try:
            run_locally(load_config(), tmp_path, "local.yaml", "r1", resume=True)
        except RunIdError as error:
            outcomes.append(f"refused: {error}")
            inside.wait(10)
            release.set()
        except LocalRunFailed:
            outcomes.append("ran")

    threads = [threading.Thread(target=resume) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert sorted(outcome.split(":")[0] for outcome in outcomes) == ["ran", "refused"], outcomes
    assert "being run by another process" in next(o for o in outcomes if o.startswith("refused"))
    assert RunRecord.read(tmp_path / "r1").attempts == 2  # one attempt, not two


def test_a_tasks_cache_key_is_the_same_under_a_moved_root(tmp_path):
    """The key reads a local input artifact by its path relative to the root, so a run directory that was moved or
    copied still finds the steps it finished (their consumers' keys do not change)."""
    from ops.spec_executor.execution_cache import cache_key
    from ops.spec_executor.pipeline_spec import SpecTask

    def key(root: Path) -> str:
        executor_input = {"inputs": {"parameterValues": {"target": "cpu"}, "artifacts": {"examples": {"artifacts": [
            {"uri": str(root / "artifacts/0/job-1/preprocess-step_1/examples")}]}}}}
        task = SpecTask("train-step", "train", "comp-train", {}, {"image": "i", "command": ["python3"], "args": []},
                        {}, ())
        return cache_key("adrank-local", task, CloudStorageRoot(root).portable(executor_input), "code")

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert key(tmp_path / "a") == key(tmp_path / "b")
