"""The shared whole-DAG runs (tests/support/shared_runs.py): made once whoever asks, in whatever process; a run that
failed is not made again."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.support.paths import REPO
from tests.support.shared_runs import SharedRunFailed, SharedRuns


def test_a_run_is_made_once_for_every_process_that_asks(tmp_path):
    """Three processes ask at once; one makes the run (slowly), the others wait and read its record."""
    script = textwrap.dedent(f"""
        import json, os, sys, time
        from pathlib import Path
        from tests.support.shared_runs import SharedRuns

        def make(directory):
            (directory / f"made-by-{{os.getpid()}}").touch()
            time.sleep(0.5)
            return {{"maker": os.getpid()}}

        directory, record = SharedRuns(Path({str(tmp_path)!r})).get("run", make)
        print(json.dumps({{"maker": record["maker"], "files": sorted(p.name for p in directory.iterdir())}}))
    """)
    askers = [subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True)
              for _ in range(3)]
    answers = [json.loads(asker.communicate(timeout=60)[0]) for asker in askers]
    (maker,) = {answer["maker"] for answer in answers}
    assert all(answer["files"] == [f"made-by-{maker}"] for answer in answers)


def test_a_failed_run_is_not_made_again(tmp_path):
    runs, attempts = SharedRuns(tmp_path), []

    def make(directory):
        attempts.append(directory)
        raise RuntimeError("preprocess failed")

    with pytest.raises(RuntimeError, match="preprocess failed"):
        runs.get("run", make)
    with pytest.raises(SharedRunFailed, match="the shared run 'run' failed earlier in this session: RuntimeError: "
                                              "preprocess failed"):
        runs.get("run", make)
    assert len(attempts) == 1
