"""One executor per job at a time: a run-spec job (`ROOT/spec-runs/<job>/`) is run only by the process holding an
exclusive `flock` on its `.job.lock`, for the job's whole life.

Two `run-spec` with the same root and job id (the same pipeline and create time: the docs' own "re-run of that day"
form) would otherwise share the job's directory, its record and its `tmp`, and the cleanup of one would remove what
the other's tasks are using. The second is refused before it writes or removes anything, naming the holder.

The lock is taken by the kernel in one step and goes with the process: an executor killed with -9 leaves no stale
lock, so the next run of that job takes it (and cleans up what the killed one left). The file stays (removing it
would let a third process lock a different inode); it holds the pid and host of the last holder, for the message.
`adrank run`'s run directories use the same lock (`ops.local_run.lock`).
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path

JOB_LOCK_FILE = ".job.lock"


class LockHeld(RuntimeError):
    """Another process holds the lock; `holder` says which (`pid N on HOST`, or "" when it did not say)."""

    def __init__(self, path: Path, holder: str):
        super().__init__(f"{path} is held by another process{f' ({holder})' if holder else ''}")
        self.path, self.holder = path, holder


class JobBusy(RuntimeError):
    """Another executor runs this job under this root."""


class ExclusiveLock:
    """An exclusive `flock` on `path`, held until `release()` or the process ends; the file says who holds it.
    Raises `LockHeld` when another process (or another open of the file) holds it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(descriptor)
            os.close(descriptor)
            raise LockHeld(self.path, holder) from None
        except BaseException:
            os.close(descriptor)
            raise
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        self._descriptor: int | None = descriptor

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)  # closing the only descriptor releases the flock
            self._descriptor = None

    def __enter__(self) -> ExclusiveLock:
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


def lock_job(job_dir: Path, root: Path) -> ExclusiveLock:
    """The held lock of the job in `job_dir` (created if need be), or `JobBusy` naming the executor that holds it."""
    job_dir.mkdir(parents=True, exist_ok=True)
    try:
        return ExclusiveLock(job_dir / JOB_LOCK_FILE)
    except LockHeld as held:
        raise JobBusy(f"job {job_dir.name} under {root} is being run by another executor"
                      f"{f' ({held.holder})' if held.holder else ''}; wait for it or stop it first, or give this "
                      "run another --create-time") from None


def job_is_held(job_dir: Path) -> bool:
    """Whether a live process holds the job's lock now (a record left `running` by a job whose lock is free was
    left by an executor that is gone)."""
    if not (job_dir / JOB_LOCK_FILE).exists():
        return False
    try:
        ExclusiveLock(job_dir / JOB_LOCK_FILE).release()
    except LockHeld:
        return True
    return False


def _read_holder(descriptor: int) -> str:
    try:
        return os.pread(descriptor, 200, 0).decode(errors="replace").strip()
    except OSError:
        return ""
