"""Session fixtures every test file may use (registered by tests/conftest.py as a pytest plugin).

    shared_runs        `SharedRuns` of this session: whole-DAG runs made once, read by every file that needs them
    three_target_run   `adrank run` of THREE_TARGETS (3 targets x 2 runs, 2 tasks, a TPU target skipped), made once
                       per session: (runs_dir, the CLI's CompletedProcess); the run is `runs_dir/tiny`, read-only
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.cli import adrank, sets
from tests.support.shared_runs import SharedRuns
from tests.support.tiny_config import THREE_TARGETS


@pytest.fixture(scope="session")
def shared_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> SharedRuns:
    """Under the session's base temporary directory, which xdist's workers share (each worker's own is below it)."""
    base = tmp_path_factory.getbasetemp()
    return SharedRuns((base.parent if hasattr(request.config, "workerinput") else base) / "shared-runs")


@pytest.fixture(scope="session")
def three_target_run(shared_runs: SharedRuns) -> tuple[Path, subprocess.CompletedProcess]:
    def run(runs_dir: Path) -> dict:
        result = adrank("run", "--runs-dir", str(runs_dir), "--run-id", "tiny", *sets(THREE_TARGETS), cwd=runs_dir)
        return {"args": result.args, "stdout": result.stdout, "stderr": result.stderr}

    runs_dir, record = shared_runs.get("three-target-run", run)
    return runs_dir, subprocess.CompletedProcess(record["args"], 0, record["stdout"], record["stderr"])
