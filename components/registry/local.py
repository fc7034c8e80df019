"""A model registry in a directory: what the local backend promotes into.

    <root>/<model>/versions/<n>/model/          copy of the model directory
    <root>/<model>/versions/<n>/evaluation.json the candidate (target, run, log-loss, source URI)
    <root>/<model>/default.json                 {"version": "<n>", "logloss": ...}
    <root>/<model>/.lock                        held (flock) while a version is added

Safe with several processes promoting at once: the model is copied into a staging directory first;
then, holding an exclusive lock on `.lock`, the next version number is taken by renaming the staging
directory into place and `default.json` is replaced atomically (written to a temporary file, then
`os.replace`), so a reader never sees a half-written JSON file and no two promotions share a version.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Iterator

from components.registry.promotion import Candidate, PromotionDecision, decide

LOCK_FILE = ".lock"
STAGING_PREFIX = ".staging-"


def write_json_atomically(path: Path, data: dict) -> None:
    """Write `data` to a temporary file beside `path`, flush it to disk, then rename it over `path`."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            json.dump(data, stream, indent=2)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class LocalModelRegistry:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    def _model_dir(self, model: str) -> Path:
        return self.root / model

    def versions(self, model: str) -> list[str]:
        directory = self._model_dir(model) / "versions"
        if not directory.is_dir():
            return []
        return sorted((p.name for p in directory.iterdir() if p.name.isdigit()), key=int)

    def default(self, model: str) -> dict | None:
        path = self._model_dir(model) / "default.json"
        return json.loads(path.read_text()) if path.exists() else None

    def evaluation(self, model: str, version: str) -> dict:
        return json.loads((self._model_dir(model) / "versions" / version / "evaluation.json").read_text())

    @contextmanager
    def _locked(self, model: str) -> Iterator[None]:
        """Exclusive access to one model's versions and default (an flock, released if the process dies)."""
        directory = self._model_dir(model)
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / LOCK_FILE, "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def _stage(self, model: str, candidate: Candidate) -> Path:
        """A staging directory holding the candidate's model copy and its evaluation, outside the lock."""
        versions = self._model_dir(model) / "versions"
        versions.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=versions))
        staging.chmod(0o755)  # mkdtemp makes it private; a version directory is as readable as any other
        source = Path(candidate.model_uri)
        if source.is_dir():
            shutil.copytree(source, staging / "model")
        elif source.is_file():
            (staging / "model").mkdir()
            shutil.copy2(source, staging / "model" / source.name)
        write_json_atomically(staging / "evaluation.json", asdict(candidate))
        return staging

    def register(self, model: str, candidate: Candidate, tolerance: float) -> PromotionDecision:
        """Add the candidate as the next version; make it the default if the promotion rule allows."""
        staging = self._stage(model, candidate)
        try:
            with self._locked(model):
                existing = self.versions(model)
                version = str(int(existing[-1]) + 1 if existing else 1)
                staging.rename(self._model_dir(model) / "versions" / version)
                current = self.default(model)
                current_logloss = current["logloss"] if current else None
                is_default, reason = decide(candidate.logloss, current_logloss, tolerance)
                if is_default:
                    write_json_atomically(
                        self._model_dir(model) / "default.json", {"version": version, "logloss": candidate.logloss}
                    )
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        return PromotionDecision(model, version, is_default, candidate.logloss, current_logloss, tolerance, reason)
