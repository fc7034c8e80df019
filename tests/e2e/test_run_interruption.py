"""Steps die with their run: kill -9 or SIGTERM `adrank run` during preprocess or training, and no step process
of that run is left; a SIGTERM removes the steps' temp directory and marks run.json interrupted on disk (after a
kill -9 nothing can: the temp directory, inside the run's directory, goes when the run is resumed). A code edit
between a kill and `--resume` runs the finished steps again."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ops.spec_executor.job_record import RUN_RECORD
from tests.support.checkout import checkout_environment, copy_checkout
from tests.support.cli import sets
from tests.support.step_processes import alive_in_groups, step_processes_of, wait_for_step, wait_until_gone
from tests.support.tiny_config import IN_MEMORY_BEAM, tiny_logs

# whole-DAG runs killed midway (make test-long); benchmarks/resume.py measures the same kill -9 of adrank run
pytestmark = [pytest.mark.e2e, pytest.mark.long]

# 30 epochs at batch 64: training lasts long enough to be killed in
TINY = [*tiny_logs(3000, users=300, ads=60, advertisers=10), *IN_MEMORY_BEAM, "training.epochs=30",
        "training.global_batch_size=64", "promotion.enabled=false"]


def start_run(tmp_path: Path, run_id: str, environ: dict[str, str] | None = None,
              resume: bool = False) -> subprocess.Popen:
    which = ["--resume", run_id] if resume else ["--run-id", run_id, *sets(TINY)]
    return subprocess.Popen(
        [sys.executable, "-m", "ops.cli", "run", "--runs-dir", str(tmp_path / "runs"), *which], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=(os.environ if environ is None else environ) | {"TMPDIR": str(tmp_path / "tmp")},
    )


def assert_nothing_left(run_dir: Path, groups: set[int], tmp: Path) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (step_processes_of(run_dir) or alive_in_groups(groups)):
        time.sleep(0.5)
    assert step_processes_of(run_dir) == {}
    assert alive_in_groups(groups) == []
    assert not list(tmp.iterdir())  # the steps' TMPDIR is the run's own (spec-runs/<job>/tmp), never the caller's


@pytest.mark.parametrize("task", ["preprocess", "train"])
def test_kill_9_of_adrank_run_takes_its_steps_with_it(tmp_path, task):
    (tmp_path / "tmp").mkdir()
    run = start_run(tmp_path, f"killed-{task}")
    run_dir = tmp_path / "runs" / f"killed-{task}"
    groups = set(wait_for_step(run, run_dir, task).values())
    run.kill()
    run.wait()
    assert_nothing_left(run_dir, groups, tmp_path / "tmp")
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "running"  # killed -9: nothing could write; `runs list` reads it as interrupted


def test_sigterm_stops_the_run_and_marks_it_interrupted_on_disk(tmp_path):
    (tmp_path / "tmp").mkdir()
    run = start_run(tmp_path, "stopped")
    run_dir = tmp_path / "runs" / "stopped"
    groups = set(wait_for_step(run, run_dir, "train").values())
    run.send_signal(signal.SIGTERM)
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 130
    assert "run stopped interrupted (SIGTERM) during 'train" in stderr
    assert_nothing_left(run_dir, groups, tmp_path / "tmp")
    assert not list(run_dir.glob("spec-runs/*/tmp"))  # the steps' temp directory, removed when the run stopped
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted" and record["failure_reason"] == "interrupted (SIGTERM)"
    assert record["failed_step"].startswith("train")


def ended_step_of_new_attempt(run: subprocess.Popen, run_dir: Path, display_name: str, known: set[str],
                              timeout: float = 600) -> tuple[str, str]:
    """(job, state) once the step `display_name` has ended in an engine job of the run not in `known` (an attempt
    started after those), the attempt still running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert run.poll() is None, run.communicate()
        for record in (run_dir / "spec-runs").glob(f"*/{RUN_RECORD}"):
            if record.parent.name in known:
                continue
            try:
                tasks = json.loads(record.read_text())["tasks"]
            except (OSError, ValueError, KeyError):
                continue
            ended = [t["state"] for t in tasks if t["display_name"] == display_name and t["state"] != "running"]
            if ended:
                return record.parent.name, ended[0]
        time.sleep(0.2)
    raise AssertionError(f"step {display_name} did not end within {timeout} s")


def stop(run: subprocess.Popen, run_dir: Path, sig: int) -> None:
    run.send_signal(sig)
    run.communicate(timeout=60)
    wait_until_gone(run_dir)


def test_a_code_edit_between_a_kill_and_a_resume_runs_the_finished_step_again(tmp_path):
    """From a copy of the checkout: `adrank run` killed -9 once its first step (generate logs) has finished; a
    resume with the code unchanged reuses that step; after a one-line edit to a module of the copy, the next
    resume runs it again (the engine's cache key holds a digest of the checkout's code). Each resume is stopped
    once the step has ended: what follows is the resume tests' (test_resume.py)."""
    (tmp_path / "tmp").mkdir()
    checkout = copy_checkout(tmp_path / "checkout")
    environ = checkout_environment(checkout, dict(os.environ))
    run_dir = tmp_path / "runs" / "edited"
    run = start_run(tmp_path, "edited", environ)
    first, state = ended_step_of_new_attempt(run, run_dir, "generate logs", set())
    assert state == "succeeded"
    stop(run, run_dir, signal.SIGKILL)

    unchanged = start_run(tmp_path, "edited", environ, resume=True)
    second, state = ended_step_of_new_attempt(unchanged, run_dir, "generate logs", {first})
    assert state == "cached"
    stop(unchanged, run_dir, signal.SIGTERM)

    module = checkout / "components" / "logs" / "synthetic.py"
    module.write_text(module.read_text() + "# an edit between a kill and a resume\n")
    edited = start_run(tmp_path, "edited", environ, resume=True)
    _, state = ended_step_of_new_attempt(edited, run_dir, "generate logs", {first, second})
    assert state == "succeeded"
    stop(edited, run_dir, signal.SIGTERM)
