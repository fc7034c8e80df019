"""Only one process runs a run directory at a time: `adrank run` (a new run or `--resume`) holds an exclusive
`flock` on `<run dir>/.run.lock` for the run's whole life (the engine's lock, `ops.spec_executor.job_lock`).

The lock is taken by the kernel in one step (no read-check-write between two resumes started at the same moment),
and it goes with the process: a run killed with -9 leaves no stale lock behind, so the next `--resume` takes it.
The file itself stays; it holds the pid and host of the last holder, for the message a refused resume prints.
"""

from __future__ import annotations

from pathlib import Path

from ops.spec_executor.job_lock import ExclusiveLock, LockHeld

LOCK_FILE = ".run.lock"


class RunBusy(RuntimeError):
    """Another process holds the run's lock."""


class RunLock(ExclusiveLock):
    """The held lock of one run directory; `release()` (or the process ending) lets the next holder in."""

    def __init__(self, run_dir: Path):
        try:
            super().__init__(Path(run_dir) / LOCK_FILE)
        except LockHeld as held:
            raise RunBusy(f"run {Path(run_dir).name} is being run by another process"
                          f"{f' ({held.holder})' if held.holder else ''}; wait for it or stop it first") from None
