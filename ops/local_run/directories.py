"""A local run's directory: what it holds (`SPEC_FILE`, `LOG_FILE`, ... ; the layout is in `ops.local_run`), what a
run id may be, and how a new one is made so that no two runs (or replays) ever share one: `adrank run` and
`adrank retrain` both create theirs here.

A default id is `<UTC second>-<name>` (ids sort by start time); runs that start in the same second get a `-2`,
`-3`, ... suffix, and `mkdir` decides which process gets which, so it is race-free. A chosen id must be free.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from configs import AdrankConfig
from ops.local_run.record import RUN_FILE

MAX_RUNS_PER_SECOND = 999
SPEC_FILE, LOG_FILE, ARTIFACTS_DIR, JOBS_DIR = "pipeline.yaml", "pipeline.log", "artifacts", "spec-runs"
REPORT_FILES = {"report_html": "report.html", "report_markdown": "report.md", "summary_json": "summary.json"}
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def is_run_id(name: str) -> bool:
    """One plain directory name a run may have: ASCII letters, digits, '.', '_' and '-', no '..'. The same rule
    decides which ids `adrank run --run-id` creates and which ids `runs show` / `report` accept."""
    return bool(_RUN_ID.fullmatch(name)) and ".." not in name


class RunIdError(ValueError):
    """A --run-id that is taken or is not one plain directory name; a --resume of a run that cannot resume."""


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


def create_run_dir(runs_dir: Path, run_id: str | None, config: AdrankConfig) -> Path:
    """A new, empty run directory (`create_run_directory`): a given id must be free; the default id is the UTC
    second and the config name."""
    if run_id is not None and not is_run_id(run_id):
        raise RunIdError(f"--run-id {run_id!r}: use letters, digits, '_', '-' and '.' (one directory under {runs_dir})")
    try:
        return create_run_directory(runs_dir, run_id, config.name)
    except RunDirectoryTaken:
        raise RunIdError(f"run id '{run_id}' is already taken under {runs_dir}; choose another --run-id") from None
    except TooManyRunsThisSecond as error:
        raise RunIdError(f"{MAX_RUNS_PER_SECOND} runs named '{error.base}*' under {runs_dir} this second; "
                         "pass --run-id") from None

def existing_run_dir(runs_dir: Path, run_id: str) -> Path:
    """`runs_dir/run_id` when it holds a run record, else a `RunIdError` naming the runs dir."""
    if not is_run_id(run_id) or not (runs_dir / run_id / RUN_FILE).exists():
        raise RunIdError(f"--resume {run_id!r}: no run '{run_id}' under {runs_dir} (see `adrank runs list`)")
    return runs_dir / run_id
