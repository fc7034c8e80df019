"""`adrank run --resume`: a run killed during preprocess or during training, resumed, ends like an uninterrupted
run: the same final step, and with training.deterministic the same log-loss; finished steps are reused only when
their files are intact."""

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import adrank, sets
from tests.support.step_processes import step_processes_of, wait_for_step
from tests.support.tiny_config import IN_MEMORY_BEAM, ONE_CPU_RUN, tiny_logs

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.long]  # benchmarks/resume.py runs it too

# 6 epochs at batch 64 with 2 checkpoints each (a run killed after one resumes from it), deterministic training
DETERMINISTIC = [*tiny_logs(), *IN_MEMORY_BEAM, "training.epochs=6", "training.global_batch_size=64",
                 "training.deterministic=true", "training.checkpoints_per_epoch=2", "promotion.enabled=false",
                 *ONE_CPU_RUN]


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="module")
def uninterrupted(runs_dir):
    adrank("run", "--runs-dir", str(runs_dir), "--run-id", "whole", *sets(DETERMINISTIC), cwd=runs_dir)
    return json.loads((runs_dir / "whole" / "summary.json").read_text())


def start(runs_dir: Path, run_id: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ops.cli", "run", "--runs-dir", str(runs_dir), "--run-id", run_id,
                             *sets(DETERMINISTIC)], cwd=runs_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def first_checkpoint(run_dir: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if list(run_dir.glob("artifacts/*/*/train-*/model/checkpoints/checkpoint")):
            return
        time.sleep(0.2)
    raise AssertionError("no checkpoint written")


def resume(runs_dir: Path, run_id: str) -> str:
    deadline = time.monotonic() + 20  # the killed run's steps are gone before it is resumed
    while step_processes_of(runs_dir / run_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    return adrank("run", "--resume", run_id, "--runs-dir", str(runs_dir), cwd=runs_dir).stdout


def final(summary: dict) -> tuple[int, float]:
    run = summary["runs"][0]
    return run["steps"], run["logloss"]


def retrained_from_scratch(runs_dir: Path, run_id: str) -> dict:
    """The same run's training and report done again, uninterrupted, on the same preprocessed examples: a copy of
    the run without any training or report output (no seal, no checkpoint), resumed."""
    copy = runs_dir / f"{run_id}-retrained"
    shutil.copytree(runs_dir / run_id, copy)
    for task_dir in [*copy.glob("artifacts/*/*/train-*"), *copy.glob("artifacts/*/*/report-step_*")]:
        shutil.rmtree(task_dir)
    record = json.loads((copy / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps(record | {"id": copy.name, "status": "failed"}))
    stdout = resume(runs_dir, copy.name)
    assert "resumed: reused generate logs, preprocess\n" in stdout
    return json.loads((copy / "summary.json").read_text())


def test_killed_during_training_resumes_from_its_checkpoint(runs_dir, uninterrupted):
    run = start(runs_dir, "killed-in-training")
    wait_for_step(run, runs_dir / "killed-in-training", "train")
    first_checkpoint(runs_dir / "killed-in-training")
    run.send_signal(signal.SIGKILL)
    run.wait()
    stdout = resume(runs_dir, "killed-in-training")
    assert "reused generate logs, preprocess; continued from checkpoints: train" in stdout
    summary = json.loads((runs_dir / "killed-in-training" / "summary.json").read_text())
    steps, logloss = final(summary)
    assert steps == final(uninterrupted)[0]
    assert logloss == pytest.approx(final(retrained_from_scratch(runs_dir, "killed-in-training"))[1], abs=1e-9)
    record = json.loads((runs_dir / "killed-in-training" / "run.json").read_text())
    assert record["status"] == "succeeded" and record["attempts"] == 2


def test_killed_during_preprocess_resumes_and_matches(runs_dir, uninterrupted):
    run = start(runs_dir, "killed-in-preprocess")
    wait_for_step(run, runs_dir / "killed-in-preprocess", "preprocess")
    run.send_signal(signal.SIGKILL)
    run.wait()
    stdout = resume(runs_dir, "killed-in-preprocess")
    assert "reused generate logs" in stdout
    summary = json.loads((runs_dir / "killed-in-preprocess" / "summary.json").read_text())
    steps, logloss = final(summary)
    assert steps == final(uninterrupted)[0]
    # preprocess ran again in its own Beam job: the same examples, written in an order that may differ
    assert logloss == pytest.approx(final(uninterrupted)[1], rel=0.02)


def test_a_step_whose_outputs_changed_runs_again_and_a_finished_run_is_not_resumed(runs_dir, uninterrupted):
    run_dir = runs_dir / "killed-in-preprocess"
    result = adrank("run", "--resume", "killed-in-preprocess", "--runs-dir", str(runs_dir), cwd=runs_dir, check=False)
    assert result.returncode == 2 and "already succeeded" in result.stderr
    record = json.loads((run_dir / "run.json").read_text())
    record["status"] = "failed"
    (run_dir / "run.json").write_text(json.dumps(record))
    manifests = sorted(run_dir.glob("artifacts/*/*/preprocess-step_*/examples/manifest.json"))
    manifests[-1].write_text(manifests[-1].read_text().replace('"examples"', '"examples" ', 1))  # tampered
    stdout = resume(runs_dir, "killed-in-preprocess")
    assert "resumed: reused generate logs\n" in stdout  # preprocess ran again, and so did training and the report


def kill_in_step(run: subprocess.Popen, run_dir: Path, step: str) -> None:
    """kill -9 `adrank run` once `step` is running, and wait until none of its step processes is left."""
    wait_for_step(run, run_dir, step)
    run.send_signal(signal.SIGKILL)
    run.wait()
    while step_processes_of(run_dir):
        time.sleep(0.5)


def test_a_run_started_in_one_directory_resumes_from_another_with_relative_runs_dirs(tmp_path):
    """The default (relative) runs dir: killed in preprocess, resumed from another directory (`../a/runs`) and
    killed again in training, then resumed where it started (`runs`): every attempt finds the earlier results."""
    here, elsewhere = tmp_path / "a", tmp_path / "b"
    here.mkdir()
    elsewhere.mkdir()
    run_dir = here / "runs" / "moving"
    run = subprocess.Popen([sys.executable, "-m", "ops.cli", "run", "--run-id", "moving", *sets(DETERMINISTIC)],
                           cwd=here, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_in_step(run, run_dir, "preprocess")
    again = subprocess.Popen([sys.executable, "-m", "ops.cli", "run", "--resume", "moving", "--runs-dir", "../a/runs"],
                             cwd=elsewhere, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_in_step(again, run_dir, "train")
    stdout = adrank("run", "--resume", "moving", cwd=here).stdout
    assert "resumed: reused generate logs, preprocess" in stdout
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "succeeded" and record["attempts"] == 3
    assert (run_dir / "summary.json").exists()
