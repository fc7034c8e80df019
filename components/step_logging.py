"""How a step writes its log records: as JSON lines (`foundation.log_lines`) that the process running it renders.

    step process (a KFP container, locally or on Vertex)          the local engine (`adrank run`, `run-spec`)
    logging.getLogger(__name__).info("...", extra=fields(...))    reads the step's output line by line:
      └─ handler from `configure_step_logging()`                    record_from_line(line) → LogRecord
         writes one JSON object per line on stderr:                 → logging.getLogger(record.name).handle(record)
         {"severity": "INFO", "message": ..., "logger": ...,        (the console handler renders it; -v/--quiet
          "time": ..., "adrank": {structured fields}}                 are levels); any other line: the step's log only

On Vertex, Cloud Logging reads the same JSON lines of a job's output as structured entries (`severity`,
`message`), so the records a laptop run shows are the records in the step's job log. Structured fields of a
record (`extra=fields(progress=True, examples=…)`) are kept under the `adrank` key and come back as attributes.

Code that runs inside a Beam worker logs through `worker_logger(name)`: with the DirectRunner's multi_processing
mode a worker is a separate process whose root logger forwards records to Beam's log service, and the runner logs
them again as protobuf text under Beam's own logger name, so a worker writes its adrank records as JSON lines
straight to its standard error (which is the step's) instead.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from foundation.log_lines import JsonLineFormatter, level_from_environment


def configure_step_logging(stream: TextIO | None = None) -> None:
    """Inside a step process: the root logger writes JSON lines at `ADRANK_LOG_LEVEL` (INFO) to `stream` (stderr).

    Idempotent: a second call replaces the handler it installed, never adds one. A plain console handler already
    on the root logger (kfp's executor calls `logging.basicConfig` before the step function runs) is removed, so
    each record is in the step's output once, as JSON."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_adrank_step", False) or _writes_to_console(handler):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    handler._adrank_step = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level_from_environment())


def _writes_to_console(handler: logging.Handler) -> bool:
    """A `logging.basicConfig`-style handler: exactly a StreamHandler, on this process's stdout or stderr."""
    return type(handler) is logging.StreamHandler and handler.stream in (sys.stdout, sys.stderr, sys.__stdout__,
                                                                          sys.__stderr__)


class _StandardErrorJsonHandler(logging.Handler):
    """JSON lines on whatever `sys.stderr` is when a record comes, for records at `ADRANK_LOG_LEVEL` or above."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonLineFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno < level_from_environment():
            return
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001  logging's convention: a failing handler reports, never raises
            self.handleError(record)


def worker_logger(name: str) -> logging.Logger:
    """The logger for code that runs in Beam workers (see the module docstring): its records go as JSON lines to
    the process's standard error at `ADRANK_LOG_LEVEL`, not to the root logger's handlers."""
    logger = logging.getLogger(name)
    if not any(isinstance(handler, _StandardErrorJsonHandler) for handler in logger.handlers):
        logger.addHandler(_StandardErrorJsonHandler())
    logger.setLevel(logging.DEBUG)  # the handler applies ADRANK_LOG_LEVEL, read when a record comes
    logger.propagate = False
    return logger
