"""`adrank` as a user runs it: a subprocess of the installed CLI (`python -m ops.cli`)."""

from __future__ import annotations

import subprocess
import sys


def adrank(*args: str, cwd, check: bool = True, timeout: float = 900, env: dict[str, str] | None = None,
           ) -> subprocess.CompletedProcess:
    """Run `adrank ARGS` in `cwd`; with `check`, a non-zero exit fails the test showing the tail of its output."""
    result = subprocess.run([sys.executable, "-m", "ops.cli", *args], cwd=cwd, capture_output=True, text=True,
                            timeout=timeout, env=env)
    if check and result.returncode != 0:
        raise AssertionError(
            f"adrank {' '.join(args)} failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    return result


def sets(overrides: list[str]) -> list[str]:
    """["a=1", "b=2"] → ["--set", "a=1", "--set", "b=2"]."""
    return [arg for override in overrides for arg in ("--set", override)]
