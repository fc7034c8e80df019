"""What a new local run's directory under the runs dir is called, and how it is made so that no two runs (or
replays) ever share one: `adrank run` and `adrank retrain` both create theirs here.

A default id is `<UTC second>-<name>` (ids sort by start time); runs that start in the same second get a `-2`,
`-3`, ... suffix, and `mkdir` decides which process gets which, so it is race-free. A chosen id must be free.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

MAX_RUNS_PER_SECOND = 999


class RunDirectoryTaken(FileExistsError):
    """The id the user chose is already a directory under the runs dir."""


class TooManyRunsThisSecond(FileExistsError):
    """Every suffix of this second's default id is taken."""

    def __init__(self, base: str):
        super().__init__(f"{MAX_RUNS_PER_SECOND} runs named '{base}*' this second")
        self.base = base


def stamped_run_id(name: str, now: dt.datetime | None = None) -> str:
    """`<UTC second>-<name>`, e.g. `20260105-093000-adrank-local`."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{now.astimezone(dt.timezone.utc):%Y%m%d-%H%M%S}-{name}"


def create_run_directory(runs_dir: Path, chosen_id: str | None, name: str) -> Path:
    """A new, empty directory under `runs_dir`: `chosen_id` when given (`RunDirectoryTaken` when it exists), else
    `stamped_run_id(name)` with the first free same-second suffix (`TooManyRunsThisSecond` when none is)."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    if chosen_id is not None:
        try:
            (runs_dir / chosen_id).mkdir()
        except FileExistsError:
            raise RunDirectoryTaken(str(runs_dir / chosen_id)) from None
        return runs_dir / chosen_id
    base = stamped_run_id(name)
    for attempt in range(1, MAX_RUNS_PER_SECOND + 1):
        candidate = runs_dir / (base if attempt == 1 else f"{base}-{attempt}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise TooManyRunsThisSecond(base)
