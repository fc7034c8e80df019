"""What the terminal shows of a local run (`RunConsole`), from the engine's task events, and what goes to the
run's `pipeline.log`: every line a step prints, after a `task started: <task>` line.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Callable, TextIO

from components.progress import format_duration
from foundation.log_lines import record_fields
from ops.console_log import ConsoleFilter, from_step
from ops.local_run.resume import restore_checkpoints
from ops.spec_executor.job_record import TaskRecord
from ops.spec_executor.task_events import TaskEvents

TASK_STARTED = "task started: "  # pipeline.log: the line before a task's own lines
STILL_RUNNING_SECONDS = 60.0

class RunConsole(TaskEvents):
    """What the terminal shows of a run, from the engine's task events: one line when a step starts and one when
    it ends (with its duration), what the running step logs at INFO (its progress) and WARNING, a "still running"
    line when the terminal has been silent for `still_running_seconds`. `quiet`: only warnings and failed steps
    reach the terminal. Every line a step prints goes to `log` (pipeline.log) after a `task started:` line.

    A step's log records reach the terminal through `logging` (`task_events.read_task_line`), rendered by the
    handler `running()` installs; the console never reads a step's text."""

    def __init__(self, terminal: TextIO, log: TextIO, quiet: bool = False,
                 still_running_seconds: float = STILL_RUNNING_SECONDS, clock: Callable[[], float] = time.monotonic):
        self._terminal, self._log, self._quiet = terminal, log, quiet
        self._still_running_seconds, self._clock = still_running_seconds, clock
        self._started: dict[str, float] = {}
        self._running: list[tuple[str, str]] = []  # (path, display name) of container steps now running
        self._last_terminal_line = clock()
        self._lock = threading.RLock()
        self.resumed_jobs: Path | None = None  # a resumed run's spec-runs/: where earlier checkpoints are
        self.reused: list[str] = []
        self.resumed_from_checkpoint: list[str] = []
        self.interrupted_step: str | None = None
        self._job_name = ""

    def say(self, line: str, progress: bool = True) -> None:
        with self._lock:
            if progress and self._quiet:
                return
            self._terminal.write(line + "\n")
            self._terminal.flush()
            self._last_terminal_line = self._clock()

    def engine_line(self, line: str) -> None:
        """The engine's own one line per finished task (`run-spec`'s output): the log only."""
        with self._lock:
            self._log.write(line + "\n")
            self._log.flush()

    # -- task events -----------------------------------------------------------------------------------------

    def task_started(self, path: str, display_name: str) -> None:
        with self._lock:
            self._log.write(f"{TASK_STARTED}{path} ({display_name})\n")
            self._log.flush()
            self._started[path] = self._clock()
            self._running.append((path, display_name))

    def before_start(self, path: str, executor_input: dict) -> None:
        self.say(f"  ▶ {self._name(path)}")
        if self.resumed_jobs is None:
            return
        job = Path(executor_input["outputs"]["outputFile"]).parent.parent.name
        restored = restore_checkpoints(self.resumed_jobs, job, path, executor_input)
        if restored is not None:
            self.resumed_from_checkpoint.append(self._name(path))
            self.say(f"      continues from the checkpoints of an earlier attempt ({restored})")

    def task_line(self, path: str, display_name: str, line: str, record: logging.LogRecord | None) -> None:
        with self._lock:
            self._log.write(line + "\n")
            self._log.flush()
        # A log record is rendered by the handler `running()` installs; any other line stays in the log.

    def task_ended(self, record: TaskRecord) -> None:
        with self._lock:
            self._running = [(p, n) for p, n in self._running if p != record.task]
            seconds = self._clock() - self._started.pop(record.task, self._clock())
            if record.state == "interrupted" and record.attempts:  # a container step, not the DAG around it
                self.interrupted_step = record.display_name
        if record.state == "cached":
            self.reused.append(record.display_name)
            self.say(f"  ✓ {record.display_name}: reused from an earlier attempt")
        elif record.state == "succeeded" and record.attempts:  # a container step (a DAG group has no attempts)
            self.say(f"  ✓ {record.display_name}: success ({seconds:.0f} s)")
        elif record.state in ("failed", "interrupted") and not record.reason.startswith("inner task"):
            self.say(f"  ✗ {record.display_name}: {record.state} ({seconds:.0f} s)", progress=False)

    def _name(self, path: str) -> str:
        return next((name for p, name in self._running if p == path), path)

    # -- records and the still-running line ------------------------------------------------------------------

    def render(self, record: logging.LogRecord) -> None:
        """A step's log record: WARNING and above as `  ! …` (also when quiet), INFO as a progress line."""
        if record.levelno >= logging.WARNING:
            self.say(f"  ! {record.getMessage()}", progress=False)
        elif record.levelno >= logging.INFO or record_fields(record).get("progress"):
            self.say(f"      {record.getMessage()}")

    def still_running(self) -> None:
        """`still running: <step> (m:ss)` when a step runs and the terminal has said nothing for a while."""
        with self._lock:
            now = self._clock()
            running = [(p, n) for p, n in self._running if p in self._started]
            if not running or now - self._last_terminal_line < self._still_running_seconds:
                return
            path, name = running[-1]
        self.say(f"  … still running: {name} ({format_duration(now - self._started[path])})")

    def running(self) -> _Running:
        """For the length of a run: the record handler on the root logger and the still-running timer."""
        return _Running(self)

class _StepRecords(logging.Handler):
    """Renders the log records the engine read from a step's output (they carry the step's name): adrank's from
    INFO (DEBUG with -v), other libraries' (TensorFlow, kfp, Beam) only from ERROR (WARNING with -v), as the
    command line's console does (`ops.console_log.ConsoleFilter`)."""

    def __init__(self, console: RunConsole):
        super().__init__(logging.DEBUG)
        self._console = console
        self.addFilter(from_step)
        self.addFilter(ConsoleFilter(min(logging.INFO, logging.getLogger().getEffectiveLevel())))

    def emit(self, record: logging.LogRecord) -> None:
        self._console.render(record)

class _Running:
    def __init__(self, console: RunConsole):
        self._console = console
        self._handler = _StepRecords(console)
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="adrank-still-running", daemon=True)

    def _tick(self) -> None:
        while not self._stop.wait(STILL_RUNNING_SECONDS / 6):
            self._console.still_running()

    def __enter__(self) -> RunConsole:
        logging.getLogger().addHandler(self._handler)
        self._ticker.start()
        return self._console

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._ticker.join()
        logging.getLogger().removeHandler(self._handler)
