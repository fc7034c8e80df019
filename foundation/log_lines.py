"""A log record as one JSON line: what a step process writes and what the process running the step reads back.

    {"severity": "INFO", "message": ..., "logger": ..., "time": ..., "adrank": {structured fields}}

`JsonLineFormatter` writes a record so; `record_from_line` turns such a line back into a `logging.LogRecord` with
its level, logger name and structured fields (`extra=fields(progress=True, examples=…)`, kept under the `adrank`
key and given back as attributes), and any other line into None. On Vertex, Cloud Logging reads the same lines of
a job's output as structured entries (`severity`, `message`). `ADRANK_LOG_LEVEL` is the level a step logs at:
the process that starts the step sets it, the step reads it (`level_from_environment`).

How a step installs the formatter is `components.step_logging`; how the local engine routes a line it read is
`ops.spec_executor.task_events`.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from typing import Any

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
