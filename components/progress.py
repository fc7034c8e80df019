"""How long-running work tells the person running it what it is doing.

A step prints a progress line as `adrank progress: <what>` on its standard output. Locally the line lands in the
step's log and `adrank run` shows it under the running step (`ops.local_dag`); on Vertex it is in the step's job
log. `ADRANK_QUIET=1` in the environment (`adrank run --quiet`) turns progress lines off; warnings and errors are
never progress lines.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

PROGRESS_PREFIX = "adrank progress: "
QUIET_ENV = "ADRANK_QUIET"


def progress_quiet() -> bool:
    """Whether progress lines are off: `ADRANK_QUIET` set to anything but "", "0" or "false"."""
    return os.environ.get(QUIET_ENV, "").strip().lower() not in ("", "0", "false", "no")


def report_progress(message: str, stream: TextIO | None = None) -> None:
    """One progress line (flushed at once, so it shows while the work goes on); nothing when quiet."""
    if progress_quiet():
        return
    out = stream if stream is not None else sys.stdout
    out.write(f"{PROGRESS_PREFIX}{message}\n")
    out.flush()


def format_duration(seconds: float) -> str:
    """`0:41`, `12:05`, `1:02:03`: minutes and seconds, hours when there are any."""
    whole = max(0, int(round(seconds)))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


CONSOLE_WARNING = "adrank warning: "


def warn_console(message: str, stream: TextIO | None = None) -> None:
    """A warning addressed to the person running adrank: `adrank run` shows the line on its console (also when
    quiet); on Vertex it is in the step's job log. Log it as well (stdlib logging) where it matters later."""
    out = stream if stream is not None else sys.stdout
    out.write(f"{CONSOLE_WARNING}{message}\n")
    out.flush()
