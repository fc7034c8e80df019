"""How long-running work tells the person running it what it is doing: progress records.

A progress line is an INFO log record marked `progress` (`log.info("…", extra=progress(examples=…))`), with the
figures it states as structured fields. A step writes its records as JSON lines (`components.step_logging`): the
local engine renders them under the running step, Vertex shows them in the step's job log. Quiet means the level
WARNING (`adrank --quiet`, `ADRANK_LOG_LEVEL=WARNING` in a step): progress records are not even written, warnings
and errors still are.
"""

from __future__ import annotations

import os
from typing import Any

from foundation.log_lines import fields

QUIET_ENV = "ADRANK_QUIET"


def progress(**values: Any) -> dict[str, Any]:
    """`extra=` for a progress record: `log.info("train split: 9,000 examples", extra=progress(examples=9000))`."""
    return fields(progress=True, **values)


def progress_quiet() -> bool:
    """Whether `ADRANK_QUIET` asks for no progress (anything but "", "0", "false", "no"); the command line maps it
    to the level WARNING (`ops.console_log`)."""
    return os.environ.get(QUIET_ENV, "").strip().lower() not in ("", "0", "false", "no")


def format_duration(seconds: float) -> str:
    """`0:41`, `12:05`, `1:02:03`: minutes and seconds, hours when there are any."""
    whole = max(0, int(round(seconds)))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
