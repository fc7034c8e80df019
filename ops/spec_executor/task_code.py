"""What code a task runs here besides its container spec, as one digest for the execution cache's key.

A compiled component names its image and carries its wrapper's source, but the code that wrapper imports is not in
the spec: on Vertex it is in the image (pinned by digest, `ops.image_pins`), here it is this checkout. The executor
starts every task with this Python and the checkout on `PYTHONPATH` (`runner._task_environment`), so a task runs

    the checkout's packages    every file of each package directory at the top of the checkout (a directory with
                               an `__init__.py`): source and package data (configs, YAML), by path relative to the
                               checkout and content; `__pycache__`, `*.pyc` and dot-files (editor swap files) left out
    the installed environment  every distribution this Python sees, by name and version (its `.dist-info`)

and the digest is a SHA-256 over both, computed once per executor run (a few milliseconds for adrank's ~200 files).
An edit anywhere in the packages, or a library installed at another version, changes every task's key, so a
resumed `adrank run` or a `run-spec` under the same root runs each task again rather than reuse what older code
made. Coarse on purpose: which modules a step imports is decided at run time (lazy imports, `python -m` of a
module named in a string), so a per-step subset could miss one; a stale result is worse than a re-run.
"""

from __future__ import annotations

import hashlib
import os
import sysconfig
from pathlib import Path

SKIPPED_DIRECTORIES = {"__pycache__"}


def task_code_digest(checkout: Path) -> str:
    """The SHA-256 (hex) of the checkout's packages and the installed distributions (see the module docstring)."""
    digest = hashlib.sha256()
    for relative, content_digest in package_files(checkout):
        digest.update(f"file {relative} {content_digest}\n".encode())
    for distribution in installed_distributions():
        digest.update(f"distribution {distribution}\n".encode())
    return digest.hexdigest()


def package_files(checkout: Path) -> list[tuple[str, str]]:
    """(path relative to `checkout`, SHA-256 of the content) of every file of its top-level packages, sorted."""
    files = []
    for package in sorted(p for p in checkout.iterdir() if p.is_dir() and (p / "__init__.py").is_file()):
        for path in _files_under(package):
            files.append((path.relative_to(checkout).as_posix(), hashlib.sha256(path.read_bytes()).hexdigest()))
    return sorted(files)


def _files_under(directory: Path) -> list[Path]:
    found = []
    for path in directory.iterdir():
        if path.name.startswith(".") or path.name in SKIPPED_DIRECTORIES:
            continue
        if path.is_dir():
            found.extend(_files_under(path))
        elif path.is_file() and path.suffix != ".pyc":
            found.append(path)
    return found


def installed_distributions() -> list[str]:
    """The distributions installed into this interpreter's environment, as the names of their metadata directories
    in its site-packages (`<name>-<version>.dist-info`, the packaging standard's "Recording installed projects";
    `.egg-info` of older installs), sorted: a listing, not a read of every METADATA file. Only the install
    locations (`sysconfig`'s purelib and platlib), never the working directory `sys.path` may start with, so the
    digest does not depend on where a command was started."""
    found: set[str] = set()
    for directory in {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        found.update(name for name in names if name.endswith((".dist-info", ".egg-info")))
    return sorted(found)
