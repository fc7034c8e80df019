"""The processes of a local run's steps, seen from outside (/proc): for tests that kill `adrank run` and check what
is left, and that wait for a step to start."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from ops.local_run.console import TASK_STARTED


def step_processes_of(run_dir: Path) -> dict[int, int]:
    """pid → process group of every kfp step executor whose command line names this run's directory."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if "kfp.dsl.executor_main" in command and str(run_dir) in command:
                found[int(proc.name)] = os.getpgid(int(proc.name))
        except OSError:
            continue
    return found


def alive_in_groups(groups: set[int]) -> list[int]:
    alive = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text()
                fields = stat[stat.rindex(")") + 2:].split()
                if int(fields[2]) in groups and fields[0] != "Z":
                    alive.append(int(proc.name))
            except (OSError, ValueError):
                continue
    return alive


def wait_for_step(run: subprocess.Popen, run_dir: Path, task: str, timeout: float = 600) -> dict[int, int]:
    """Wait until `task` is executing (pipeline.log says so, `ops.local_run.console.TASK_STARTED`, and its executor process
    exists). `task`: how its path's last part starts (`train` for `for-loop-1/iteration-0/…/train-step`, a
    training run's task inside the training-runs loop and its target's branch)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert run.poll() is None, run.communicate()
        log = run_dir / "pipeline.log"
        if log.exists() and re.search(rf"^{re.escape(TASK_STARTED)}(\S*/)?{re.escape(task)}",
                                      log.read_text(errors="replace"), re.MULTILINE):
            executors = step_processes_of(run_dir)
            if executors:
                time.sleep(3)  # let the step get going (Beam / TensorFlow started)
                return step_processes_of(run_dir) or executors
        time.sleep(0.5)
    raise AssertionError(f"task {task} did not start within {timeout} s")


def wait_until_gone(run_dir: Path, seconds: float = 20) -> None:
    """Until no step process of the run is left (a killed run's steps die with it, within moments)."""
    deadline = time.monotonic() + seconds
    while step_processes_of(run_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
