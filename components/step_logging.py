"""How adrank's log records travel: a step writes them as JSON lines, the process running the step renders them.

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

import datetime as dt
import json
import logging
import os
import sys
from typing import Any, TextIO

LEVEL_ENV = "ADRANK_LOG_LEVEL"  # the level a step logs at: a name (INFO) or a number; the engine sets it
FIELDS_KEY = "adrank"
_SEVERITY = {logging.DEBUG: "DEBUG", logging.INFO: "INFO", logging.WARNING: "WARNING", logging.ERROR: "ERROR",
             logging.CRITICAL: "CRITICAL"}


def fields(**values: Any) -> dict[str, Any]:
    """`extra=` for a record with structured fields: `log.info("…", extra=fields(progress=True, rows=3))`."""
    return {FIELDS_KEY: values}


def record_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields a record carries (empty when it has none)."""
    values = getattr(record, FIELDS_KEY, None)
    return dict(values) if isinstance(values, dict) else {}


class JsonLineFormatter(logging.Formatter):
    """One JSON object per record, on one line; what `record_from_line` reads back."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "severity": _SEVERITY.get(record.levelno, record.levelname),
            "message": record.getMessage(),
            "logger": record.name,
            "time": dt.datetime.fromtimestamp(record.created, dt.timezone.utc).isoformat(),
        }
        if record.exc_info:
            entry["message"] += "\n" + self.formatException(record.exc_info)
        extra = record_fields(record)
        if extra:
            entry[FIELDS_KEY] = extra
        return json.dumps(entry, default=str)


def record_from_line(line: str) -> logging.LogRecord | None:
    """The record a `JsonLineFormatter` line holds, or None for any other line (kfp's, Beam's, a traceback)."""
    text = line.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        entry = json.loads(text)
    except ValueError:
        return None
    if not isinstance(entry, dict) or not {"severity", "message", "logger"} <= entry.keys():
        return None
    level = logging.getLevelName(str(entry["severity"]))
    record = logging.LogRecord(str(entry["logger"]), level if isinstance(level, int) else logging.INFO, "", 0,
                               str(entry["message"]), None, None)
    if isinstance(entry.get(FIELDS_KEY), dict):
        setattr(record, FIELDS_KEY, entry[FIELDS_KEY])
    return record


def level_from_environment(default: int = logging.INFO) -> int:
    """`ADRANK_LOG_LEVEL` as a level number (a name such as WARNING or a number), else `default`."""
    text = os.environ.get(LEVEL_ENV, "").strip()
    if not text:
        return default
    if text.isdigit():
        return int(text)
    level = logging.getLevelName(text.upper())
    return level if isinstance(level, int) else default


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
