"""A model registry in a directory: what the local backend promotes into.

    <root>/<model>/versions/<n>/model/          copy of the model directory
    <root>/<model>/versions/<n>/evaluation.json the candidate (target, run, log-loss, source URI)
    <root>/<model>/versions/<n>/promotion.json  the decision taken when it was registered
    <root>/<model>/default.json                 {"version": "<n>", "logloss": ...} (log-loss on its own day)
    <root>/<model>/.lock                        held (flock) while a version is added

Safe with several processes promoting at once: the model is copied into a staging directory first;
then, holding an exclusive lock on `.lock`, the champion (the current default) is scored against the candidate,
the next version number is taken by renaming the staging directory into place and `default.json` is replaced
atomically (written to a temporary file, then
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
from typing import Callable, Iterator

from components.registry.promotion import Candidate, Verdict

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

    def default_model_dir(self, model: str) -> tuple[str, str] | None:
        """(version, model directory) of the current default, or None when there is none."""
        current = self.default(model)
        if current is None:
            return None
        return current["version"], str(self._model_dir(model) / "versions" / current["version"] / "model")

    def register(self, model: str, candidate: Candidate, judge: Callable[[str | None], Verdict],
                 on_registered: Callable[[str, Verdict, str | None], dict] | None = None) -> tuple[str, Verdict, str | None]:
        """Add the candidate as the next version and make it the default if `judge(champion model dir or None)`
        says so; the champion is judged under the lock, so two promotions never judge against a stale default.
        `on_registered(version, verdict, champion version)` returns the decision record kept with the version.
        Returns (version, verdict, champion version)."""
        staging = self._stage(model, candidate)
        try:
            with self._locked(model):
                champion = self.default_model_dir(model)
                verdict = judge(champion[1] if champion else None)
                champion_version = champion[0] if champion else None
                existing = self.versions(model)
                version = str(int(existing[-1]) + 1 if existing else 1)
                if on_registered is not None:
                    write_json_atomically(staging / "promotion.json", on_registered(version, verdict, champion_version))
                staging.rename(self._model_dir(model) / "versions" / version)
                if verdict.promoted:
                    logloss = verdict.comparison.challenger_logloss if verdict.comparison else candidate.logloss
                    write_json_atomically(
                        self._model_dir(model) / "default.json", {"version": version, "logloss": logloss}
                    )
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        return version, verdict, champion_version

    def history(self, model: str) -> list[dict]:
        """Every version's decision record, oldest first (versions registered before records existed: skipped)."""
        records = []
        for version in self.versions(model):
            path = self._model_dir(model) / "versions" / version / "promotion.json"
            if path.exists():
                records.append(json.loads(path.read_text()))
        return records
