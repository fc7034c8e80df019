"""Only one process runs a run directory at a time: `adrank run` (a new run or `--resume`) holds an exclusive
`flock` on `<run dir>/.run.lock` for the run's whole life.

The lock is taken by the kernel in one step (no read-check-write between two resumes started at the same moment),
and it goes with the process: a run killed with -9 leaves no stale lock behind, so the next `--resume` takes it.
The file itself stays (removing it would let a third process lock a different inode); it holds the pid and host of
the last holder, for the message a refused resume prints.
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path

LOCK_FILE = ".run.lock"


class RunBusy(RuntimeError):
    """Another process holds the run's lock."""


class RunLock:
    """The held lock of one run directory; `release()` (or the process ending) lets the next holder in."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_FILE
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(descriptor)
            os.close(descriptor)
            raise RunBusy(f"run {Path(run_dir).name} is being run by another process"
                          f"{f' ({holder})' if holder else ''}; wait for it or stop it first") from None
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

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


def _read_holder(descriptor: int) -> str:
    try:
        return os.pread(descriptor, 200, 0).decode(errors="replace").strip()
    except OSError:
        return ""
