"""What `adrank run --resume` saves: an uninterrupted run against one killed (kill -9) after its first training
checkpoint and resumed, on the same config (the flow of tests/e2e/test_resume.py).

    .venv/bin/python benchmarks/resume.py [--set dotted.key=value ...]

Prints each run's wall time, final training step and log-loss, the time spent before the kill, the resume's own
time, and the resume's time as a ratio to a run from scratch (what re-running would cost instead).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DETERMINISTIC = [
    "logs.synthetic.days=3", "logs.synthetic.impressions_per_day=2000", "logs.synthetic.users=200",
    "logs.synthetic.ads=40", "logs.synthetic.advertisers=8", "preprocess.direct_running_mode=in_memory",
    "preprocess.direct_num_workers=1", "training.epochs=6", "training.global_batch_size=64",
    "training.deterministic=true", "training.checkpoints_per_epoch=2", "promotion.enabled=false",
    "runs_per_target=1", "targets=[{name: cpu, kind: cpu, price_per_hour: 0.38}]",
]


def adrank(runs_dir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "ops.cli", *args, "--runs-dir", str(runs_dir)]


def with_sets(overrides: list[str]) -> list[str]:
    return [arg for override in overrides for arg in ("--set", override)]


def final(run_dir: Path) -> tuple[int, float]:
    summary = json.loads((run_dir / "summary.json").read_text())
    run = summary["runs"][0]
    return run["steps"], run["logloss"][summary["primary_task"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    overrides = [*DETERMINISTIC, *args.overrides]
    runs_dir = Path(tempfile.mkdtemp(prefix="adrank-resume-bench-"))

    started = time.perf_counter()
    subprocess.run(adrank(runs_dir, "run", "--run-id", "whole", *with_sets(overrides)), cwd=ROOT, check=True,
                   capture_output=True)
    whole = time.perf_counter() - started

    started = time.perf_counter()
    killed = subprocess.Popen(adrank(runs_dir, "run", "--run-id", "killed", *with_sets(overrides)), cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not list((runs_dir / "killed").glob("artifacts/*/*/train-*/model/checkpoints/checkpoint")):
        if killed.poll() is not None:
            print("the run ended before its first checkpoint; nothing to resume")
            return 1
        time.sleep(0.2)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    before_kill = time.perf_counter() - started
    time.sleep(2)  # the killed run's steps die with it (its watcher)
    started = time.perf_counter()
    resumed = subprocess.run(adrank(runs_dir, "run", "--resume", "killed"), cwd=ROOT, check=True, capture_output=True,
                             text=True)
    resume_time = time.perf_counter() - started
    reused = next((line for line in resumed.stdout.splitlines() if line.startswith("resumed:")), "")

    (whole_steps, whole_loss), (resumed_steps, resumed_loss) = final(runs_dir / "whole"), final(runs_dir / "killed")
    print(f"runs in {runs_dir}")
    print(f"uninterrupted run:          {whole:7.1f} s   final step {whole_steps}   log-loss {whole_loss:.6f}")
    print(f"killed after 1st checkpoint: {before_kill:6.1f} s")
    print(f"resumed:                    {resume_time:7.1f} s   final step {resumed_steps}   log-loss {resumed_loss:.6f}"
          f"   ({reused})")
    print(f"resume / run from scratch:  {resume_time / whole:7.2f}x   (kill + resume / uninterrupted: "
          f"{(before_kill + resume_time) / whole:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
