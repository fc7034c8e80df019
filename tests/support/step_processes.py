"""The processes of a local run's steps, seen from outside (the process table, through psutil): for tests that kill
`adrank run` and check what is left, and that wait for a step to start."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import psutil

from foundation.process_table import process_running
from ops.local_run.console import TASK_STARTED


def running_pids(*command_parts: str, groups: set[int] | None = None) -> list[int]:
    """Pids of the running processes (not zombies) whose command line holds every one of `command_parts` and, with
    `groups`, whose process group is one of them."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        command = " ".join(process.info["cmdline"] or ())
        if not all(part in command for part in command_parts) or not process_running(process.pid):
            continue
        try:
            if groups is not None and os.getpgid(process.pid) not in groups:
                continue
        except OSError:  # exited while we looked
            continue
        found.append(process.pid)
    return found


def step_processes_of(run_dir: Path) -> dict[int, int]:
    """pid → process group of every kfp step executor whose command line names this run's directory."""
    found = {}
    for pid in running_pids("kfp.dsl.executor_main", str(run_dir)):
        try:
            found[pid] = os.getpgid(pid)
        except OSError:
            continue
    return found


def alive_in_groups(groups: set[int]) -> list[int]:
    """The running processes of these process groups."""
    return running_pids(groups=groups)


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
