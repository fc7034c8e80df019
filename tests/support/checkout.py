"""A copy of this checkout's packages that a test may edit: what a user's working tree is between a kill and a
`--resume`, without touching the tree the other tests import."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.paths import REPO


def copy_checkout(destination: Path) -> Path:
    """`destination` holding a copy of every top-level package of the checkout (`components`, `configs`, `ops`,
    `pipelines`: the directories with an `__init__.py`), without byte-code. Run adrank from it with
    `PYTHONPATH=<destination>` (`checkout_environment`): its engine then starts the steps with this copy."""
    destination.mkdir(parents=True, exist_ok=True)
    for package in sorted(p for p in REPO.iterdir() if p.is_dir() and (p / "__init__.py").is_file()):
        shutil.copytree(package, destination / package.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return destination


def checkout_environment(checkout: Path, environ: dict[str, str]) -> dict[str, str]:
    """`environ` with `checkout` first on PYTHONPATH, so `python -m ops.cli` imports adrank from the copy."""
    return {**environ, "PYTHONPATH": str(checkout)}
