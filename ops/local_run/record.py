"""`run.json`: the record of one local DAG run, read by `adrank runs list|show|compare`.

A running record names the process that runs it (pid, host, and the process's start time, so a reused pid
is not mistaken for it): a run whose process is gone was killed, and reads as `interrupted`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from components.contracts.base import Contract
from components.contracts.benchmark_summary import BenchmarkSummary
from foundation.atomic_write import write_text_atomically
from foundation.process_table import process_running, process_start_time

RUN_FILE = "run.json"


class RunRecordError(ValueError):
    """A `run.json` that is not a run record this adrank can read; the message names the file and what is wrong."""

    def __init__(self, message: str, unknown_fields: tuple[str, ...] = ()):
        super().__init__(message)
        self.unknown_fields = unknown_fields  # only unknown fields are wrong: a newer adrank wrote it


class RunRecord(Contract):
    id: str
    config_name: str
    config_source: str
    config_hash: str
    started: dt.datetime
    finished: dt.datetime | None = None
    status: Literal["running", "succeeded", "failed", "interrupted"]
    failed_step: str | None = None
    failure_reason: str | None = None
    best_logloss: float | None = None
    best_target: str | None = None
    pid: int | None = None
    host: str | None = None
    process_start: str | None = None
    attempts: int = 1  # 1 + the times `adrank run --resume` ran it again
    # RFC 3339: the run read only the lookback before it (`adrank retrain` days); "": every log; None: a record
    # from before the window was recorded
    window_end: str | None = None
    # which pipeline of the DAG it ran: `adrank run` the benchmark, `adrank retrain` days the retraining pipeline
    # (a resume runs the same one)
    pipeline: Literal["benchmark", "retraining"] = "benchmark"

    def write(self, run_dir: Path) -> Path:
        """Replace `run.json` atomically, so a reader never sees half a record."""
        path = run_dir / RUN_FILE
        write_text_atomically(path, self.model_dump_json(indent=2))
        return path

    @classmethod
    def read(cls, run_dir: Path) -> RunRecord:
        """The record as written, except that a `running` run whose process is gone reads as `interrupted`; a file
        that is not one (truncated, damaged, or with fields of a newer adrank) is a `RunRecordError`."""
        path = run_dir / RUN_FILE
        try:
            text = path.read_bytes()
        except OSError as error:
            raise RunRecordError(f"{path}: cannot be read ({error.strerror or error})") from None
        try:
            record = cls.model_validate_json(text)
        except ValidationError as error:
            raise _record_error(path, error) from None
        return record._with_live_status()

    @classmethod
    def read_known_fields(cls, run_dir: Path) -> RunRecord:
        """The record of a `run.json` that a newer adrank wrote, its unknown fields left out (for showing it only:
        never rewrite it); any other problem is the `RunRecordError` of `read`."""
        try:
            return cls.read(run_dir)
        except RunRecordError as error:
            if not error.unknown_fields:
                raise
        content = json.loads((run_dir / RUN_FILE).read_bytes())
        return cls.model_validate({k: v for k, v in content.items() if k in cls.model_fields})._with_live_status()

    def _with_live_status(self) -> RunRecord:
        record = self
        if record.status == "running" and not record.process_alive():
            record.status = "interrupted"
            record.failure_reason = f"process {record.pid} on {record.host} ended without finishing the run"
        return record

    def claim_process(self) -> None:
        """Record this process as the one running the run."""
        self.pid, self.host, self.process_start = os.getpid(), socket.gethostname(), process_start(os.getpid())

    def process_alive(self) -> bool:
        """False only when certain: same host, and no process `pid` (or a different one that reused it).
        Records from another host, or without a pid, are taken as alive."""
        if self.pid is None or self.host != socket.gethostname():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # exists, owned by another user
        if not process_running(self.pid):
            return False  # gone, or killed and not yet reaped by its parent
        return self.process_start is None or process_start(self.pid) in (None, self.process_start)

    def attach_summary(self, summary_path: Path) -> None:
        best = BenchmarkSummary.read(summary_path).best_run
        self.best_logloss = best.logloss
        self.best_target = best.target


def _record_error(path: Path, error: ValidationError) -> RunRecordError:
    """One line: a truncated or damaged file, the fields a newer adrank wrote, or the first wrong field."""
    problems = error.errors(include_url=False)
    if any(problem["type"] == "json_invalid" for problem in problems):
        detail = next(problem["msg"] for problem in problems if problem["type"] == "json_invalid")
        return RunRecordError(f"{path}: not a complete JSON record (truncated or damaged: {detail})")
    unknown = tuple(str(problem["loc"][0]) for problem in problems if problem["type"] == "extra_forbidden")
    if unknown and len(unknown) == len(problems):
        names = ", ".join(repr(name) for name in unknown[:5])
        return RunRecordError(f"{path}: unknown field{'s' if len(unknown) > 1 else ''} {names}, written by a newer "
                              "adrank? (upgrade adrank to work with this run)", unknown)
    first = problems[0]
    where = ".".join(str(part) for part in first["loc"]) or "the record"
    return RunRecordError(f"{path}: field '{where}': {first['msg']}"
                          + (f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""))


def process_start(pid: int) -> str | None:
    """The process's start time as a run record stores it (`process_table.process_start_time`, as text)."""
    started = process_start_time(pid)
    return None if started is None else repr(started)
