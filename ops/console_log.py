"""What the person running `adrank` sees of log records: one handler on the root logger, writing to stderr.

    level    what shows                                   set by
    DEBUG    adrank's debug records, other libraries'     adrank -v
             INFO records
    INFO     adrank's progress and info records           (default)
    WARNING  warnings and errors only                     adrank --quiet, `adrank run --quiet`, ADRANK_QUIET=1

Other libraries (TensorFlow, Beam, kfp, google-cloud) show their WARNING records and above at the default level,
and within a step (whose libraries warn about performance at every run: tf.Transform, Beam's workers) their ERROR
records and above; -v lowers both one level. The step's log file keeps every record.
A record is rendered by its level and its structured fields (`foundation.log_lines`), never by its text:

    adrank: resumed from checkpoint step 40           INFO, in this process
    adrank warning: feature 'ip' is absent from …     WARNING
    adrank run: error: config.yaml: no such file      ERROR with a `command` field (the CLI's own errors)
          impressions: read 12,000 records            INFO of a step    (a record the engine read from a step's
      ! feature 'ip' is absent from 100.0% of …       WARNING of a step  JSON line, under "▶ step": its `step`
                                                                         attribute names the step; rendered by
                                                                         `ops.local_run.console.RunConsole`)

The level also goes to the steps through `ADRANK_LOG_LEVEL` in the environment they inherit, so a quiet run's
steps do not even write their progress records.

Native libraries' start-up lines (TensorFlow's C++ logging: `All log messages before absl::InitializeLog()`,
`Could not find cuda drivers`, `E0000 … failed call to cuInit`) are not records and never reach the console: an
adrank command's own process imports no TensorFlow (a GPU is looked for with `nvidia-smi`,
`ops.spec_executor.machines.local_device_kinds`), and what a step prints that is not a record stays in its log
(tests/ops/test_console_log.py, tests/e2e/test_local_dag.py). A step that fails still names its error on the console.
"""

from __future__ import annotations

import logging
import os
import sys
from contextlib import contextmanager
from typing import Iterator, TextIO

from components.progress import progress_quiet
from foundation.log_lines import LEVEL_ENV, level_from_environment, record_fields

ADRANK_PACKAGES = ("foundation", "configs", "components", "pipelines", "ops")


def console_level(verbose: bool = False, quiet: bool = False) -> int:
    """-v: DEBUG; --quiet: WARNING; else `ADRANK_LOG_LEVEL` when set, WARNING when `ADRANK_QUIET` is, INFO."""
    if verbose:
        return logging.DEBUG
    if quiet:
        return logging.WARNING
    if os.environ.get(LEVEL_ENV, "").strip():
        return level_from_environment()
    return logging.WARNING if progress_quiet() else logging.INFO


def from_adrank(record: logging.LogRecord) -> bool:
    """Whether the record comes from adrank's own code (one of its top-level packages)."""
    return record.name.split(".", 1)[0] in ADRANK_PACKAGES


class ConsoleFilter(logging.Filter):
    """adrank's records at `level` and above; other libraries' at WARNING and above (INFO with -v), and within a
    step at ERROR and above (WARNING with -v)."""

    def __init__(self, level: int):
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        if from_adrank(record):
            return record.levelno >= self.level
        verbose = self.level <= logging.DEBUG
        if from_step(record):
            return record.levelno >= (logging.WARNING if verbose else logging.ERROR)
        return record.levelno >= (logging.INFO if verbose else logging.WARNING)


def from_step(record: logging.LogRecord) -> bool:
    """Whether the record was read from a step's output: the engine sets its `step` attribute to the step's name
    (`ops.spec_executor.task_events.read_task_line`). A record's structured fields may carry a `step` too (a
    training step number, in progress records): that is a figure, not where the record came from."""
    return getattr(record, "step", None) is not None


def not_read_from_a_step(record: logging.LogRecord) -> bool:
    """The root handler's part: a record the engine read from a step is `adrank run`'s console's to render, under
    the running step (`ops.local_run.console.RunConsole`), with the same `ConsoleFilter`."""
    return not from_step(record)


class ConsoleFormatter(logging.Formatter):
    """A record as a line for a person (see the module docstring); a traceback, when there is one, below it."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"{_prefix(record, record_fields(record))}{record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def _prefix(record: logging.LogRecord, values: dict) -> str:
    """`adrank: `, `adrank warning: `, `adrank error: ` (`adrank run: error: ` with a `command` field)."""
    command = f"adrank {values['command']}:" if values.get("command") else "adrank"
    if record.levelno >= logging.ERROR:
        return f"{command} error: "
    if record.levelno >= logging.WARNING:
        return f"{command} warning: "
    if record.levelno >= logging.INFO:
        return f"{command}: "
    return f"{command} debug: {record.name}: "


def console_handler(level: int, stream: TextIO | None = None) -> logging.Handler:
    """The handler: `stream` (this process's stderr when the handler is made), the filter and the formatter."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.addFilter(not_read_from_a_step)
    handler.addFilter(ConsoleFilter(level))
    handler.setFormatter(ConsoleFormatter())
    return handler


@contextmanager
def console_logging(level: int, stream: TextIO | None = None) -> Iterator[logging.Handler]:
    """For the length of the block: the console handler on the root logger at `level`, and `ADRANK_LOG_LEVEL`
    set for the steps it starts; the root logger and the environment as they were afterwards."""
    root = logging.getLogger()
    handler = console_handler(level, stream)
    saved_level, saved_environment = root.level, os.environ.get(LEVEL_ENV)
    root.addHandler(handler)
    root.setLevel(level)
    os.environ[LEVEL_ENV] = logging.getLevelName(level)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(saved_level)
        if saved_environment is None:
            os.environ.pop(LEVEL_ENV, None)
        else:
            os.environ[LEVEL_ENV] = saved_environment
