"""What the engine tells whoever runs a job while it runs: a task starts, a task prints a line, a task ends.

`run_spec` calls a `TaskEvents` at each of these moments; the base class does nothing, so `adrank run-spec` prints
only its one line per finished task, and `adrank run` (`ops.local_run`) shows a console from the same events.
Every line a task prints goes through `task_line` after the engine has read it: an adrank log record (a JSON line,
`foundation.log_lines`) is handed to `logging` under its own logger name, with the task's display name as the
record's `step` attribute, so the handlers the caller configured render it; any other line stays in the task's
log only. `before_start` sees a task's executor input before its process starts (a resumed local run puts an
interrupted training task's checkpoints in place there).
"""

from __future__ import annotations

import logging

from foundation.log_lines import record_from_line
from ops.spec_executor.job_record import TaskRecord


class TaskEvents:
    """The no-op observer; subclasses override what they need."""

    def task_started(self, path: str, display_name: str) -> None:
        """`path` (the task's path in the job) is about to run: its container starts next, or its inner DAG."""

    def before_start(self, path: str, executor_input: dict) -> None:
        """A container task's process is about to start with `executor_input` (not called on a cache hit)."""

    def task_line(self, path: str, display_name: str, line: str, record: logging.LogRecord | None) -> None:
        """One line of the task's output (without its newline); `record`: the log record it holds, if any."""

    def task_ended(self, record: TaskRecord) -> None:
        """The task's final record (succeeded, cached, failed, skipped, not run, interrupted)."""


def read_task_line(events: TaskEvents, path: str, display_name: str, line: str) -> None:
    """Route one line of a task's output: a log record to `logging`, then the line to `events`."""
    record = record_from_line(line)
    if record is not None:
        record.step = display_name  # which task said it, for the console
        logging.getLogger(record.name).handle(record)
    events.task_line(path, display_name, line, record)
