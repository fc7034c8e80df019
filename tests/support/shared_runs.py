"""Whole-DAG runs made once per test session and read by every test file that needs them, whichever `make test`
worker asks first (pytest-xdist runs each worker in its own process, where a session fixture would run once per
worker).

    runs = SharedRuns(root)                      root: a directory every worker of the session shares
    directory, record = runs.get("name", make)   make(directory) -> a JSON-able record (what the run printed)

The first worker to ask for `name` holds an exclusive lock on `root/name.lock` while `make` fills `root/name/`, then
writes the record beside it; another worker asking meanwhile waits on the lock and reads what was made. A `make` that
raised is not tried again: every later `get` raises `SharedRunFailed` with its error. The directory is read-only for
the tests that share it (a test that changes a run makes its own).
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path
from typing import Any, Callable


class SharedRunFailed(AssertionError):
    """The shared run failed when another test (perhaps in another worker) made it."""


class SharedRuns:
    def __init__(self, root: Path):
        self.root = root

    def get(self, name: str, make: Callable[[Path], dict[str, Any]]) -> tuple[Path, dict[str, Any]]:
        self.root.mkdir(parents=True, exist_ok=True)
        directory, done, failed = self.root / name, self.root / f"{name}.json", self.root / f"{name}.failed"
        with open(self.root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the worker dies
            if done.exists():
                return directory, json.loads(done.read_text())
            if failed.exists():
                raise SharedRunFailed(f"the shared run '{name}' failed earlier in this session: {failed.read_text()}")
            directory.mkdir()
            try:
                record = make(directory)
            except BaseException as error:
                failed.write_text(f"{type(error).__name__}: {error}")
                raise
            done.write_text(json.dumps(record))
            return directory, record
