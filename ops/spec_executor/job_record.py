"""What `spec_run.json` says about one run-spec job: each task's state, and whether the run is still going.

Task states: `running`, `succeeded`, `cached` (outputs taken from an earlier execution, named in
`cached_from`), `failed`, `skipped` (machines this computer lacks), `not_triggered` (its `dsl.If` condition is
false: a branch not taken, as KFP's driver marks it; not a failure and not incomplete), `not_run`, `checked` (`--check`) and
`interrupted` (the executor was stopped while the task ran). The record is rewritten after every task and
while a task runs, so a record always exists; it carries the executor's pid and that process's start time.

Run status: `running` while the executor lives; `interrupted` when it was stopped by SIGTERM/SIGINT/SIGHUP
(it says so itself) or was killed outright (SIGKILL: the record still says `running` but its pid is gone or is
another process now — `recorded_status` reads that as `interrupted`, and every run-spec start rewrites such
records under its root); then `failed`, `incomplete`, `checked` or `succeeded` from the task states.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from foundation.atomic_write import write_json_atomically
from foundation.process_table import process_start_time

RUN_RECORD = "spec_run.json"
TaskState = Literal["running", "succeeded", "cached", "failed", "skipped", "not_triggered", "not_run", "checked",
                    "interrupted"]
DONE = ("succeeded", "cached")  # states whose outputs consumers get


@dataclass
class TaskRecord:
    task: str  # the task's path in the job: `name`, or `dag-task/name` inside a nested DAG
    display_name: str
    state: TaskState
    reason: str = ""
    seconds: float = 0.0
    attempts: int = 0  # how many times it was started (retries included)
    cached_from: dict = field(default_factory=dict)  # {"job": ..., "task": ...} when taken from the cache
    stand_ins: list[str] = field(default_factory=list)
    outputs: dict = field(default_factory=dict)  # artifact name → [{uri, metadata}]; parameters under "parameters"


@dataclass
class SpecRun:
    pipeline: str
    job_name: str
    job_uuid: str
    create_time: str
    root: str
    tasks: list[TaskRecord] = field(default_factory=list)
    task_uuids: dict[str, str] = field(default_factory=dict)  # what {{$.pipeline_task_uuid}} was per task
    notifications: list[dict] = field(default_factory=list)  # what exit handlers' e-mail tasks would send
    executor_pid: int = field(default_factory=os.getpid)
    executor_start_time: float | None = field(default_factory=lambda: process_start_time(os.getpid()))
    finished: bool = False
    interrupted: bool = False

    @property
    def status(self) -> str:
        if self.interrupted:
            return "interrupted"
        if not self.finished:
            return "running"
        states = {t.state for t in self.tasks}
        if "failed" in states:
            return "failed"
        if states & {"skipped", "not_run"}:
            return "incomplete"
        return "checked" if states - {"not_triggered"} == {"checked"} else "succeeded"

    def task(self, name: str) -> TaskRecord:
        return next(t for t in self.tasks if t.task == name)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomically(path, {**asdict(self), "status": self.status})


def recorded_status(record: dict) -> str:
    """The status a record read back stands for: a `running` record whose executor is gone is `interrupted`."""
    status = record.get("status", "")
    if status != "running":
        return status
    started = process_start_time(int(record.get("executor_pid", 0) or 0))
    if started is None or (record.get("executor_start_time") is not None and started != record["executor_start_time"]):
        return "interrupted"
    return "running"


def left_running(root: Path) -> list[Path]:
    """Every record under `root/spec-runs` that says `running` although its executor no longer exists."""
    stale = []
    for path in sorted((root / "spec-runs").glob(f"*/{RUN_RECORD}")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("status") == "running" and recorded_status(record) != "running":
            stale.append(path)
    return stale


def mark_interrupted(path: Path) -> None:
    """Rewrite the record at `path` (left `running` by an executor that is gone) as `interrupted`, its running
    tasks too."""
    record = json.loads(path.read_text())
    record["status"], record["interrupted"] = "interrupted", True
    for task in record.get("tasks", []):
        if task.get("state") == "running":
            task["state"], task["reason"] = "interrupted", "the executor was killed while the task ran"
    write_json_atomically(path, record)


def mark_interrupted_runs(root: Path) -> list[Path]:
    """Rewrite every record under `root/spec-runs` left `running` by an executor that no longer exists as
    `interrupted` (its running tasks too); returns the records rewritten."""
    rewritten = left_running(root)
    for path in rewritten:
        mark_interrupted(path)
    return rewritten
