"""A model registry in a directory: what the local backend promotes into.

    <root>/<model>/versions/<n>/model/          copy of the model directory
    <root>/<model>/versions/<n>/evaluation.json the candidate (target, run, log-loss, source URI)
    <root>/<model>/versions/<n>/promotion.json  the decision taken when it was registered
    <root>/<model>/default.json                 {"version": "<n>", "logloss": ...} (log-loss on its own day)
    <root>/<model>/.lock                        held (flock) while a version is added
    <root>/<model>/versions/.staging-*/         a version being copied in, with its `.staging-*.owner` lock file

Safe with several processes promoting at once: the model is copied into a staging directory first;
then, holding an exclusive lock on `.lock`, the champion (the current default) is scored against the candidate,
the next version number is taken by renaming the staging directory into place and `default.json` is replaced
atomically (`foundation.atomic_write`: a temporary file, then `os.replace`), so a reader never sees a
half-written JSON file and no two promotions share a version.

A promotion killed while staging leaves its staging directory behind; the next promotion of the model (a resumed
run's included) removes every staging directory whose owner is gone: the owner holds an flock on the staging's
`.owner` file for as long as it lives, so a lock that can be taken means nobody is copying into it any more.

The registry's own files are checked when read: `default.json` must name a version as a number inside the
registry (a version such as "../../elsewhere" is refused), and a file that is not valid JSON or lacks its fields
is an error naming the file and how to repair it (`RegistryFileInvalid`), never a silent fallback.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from pydantic import BaseModel, ConfigDict, ValidationError

from components.registry.promotion_rule import Candidate, Verdict
from foundation import gcs_mount
from foundation.atomic_write import write_json_atomically

LOCK_FILE = ".lock"
DEFAULT_FILE = "default.json"
STAGING_PREFIX = ".staging-"
OWNER_SUFFIX = ".owner"
ORPHAN_OWNER_SECONDS = 60.0
VERSION_NAME = re.compile(r"[1-9][0-9]*")

logger = logging.getLogger(__name__)


class RegistryFileInvalid(ValueError):
    """A file of the local registry cannot be read as what it should be; the message names it and the repair."""


class DefaultPointer(BaseModel):
    """`default.json`: which version is the default (fields a newer adrank may add are ignored)."""

    model_config = ConfigDict(extra="ignore")

    version: str
    logloss: float | None = None



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
        """`default.json` as a dict, None when there is none; `RegistryFileInvalid` when it is damaged or names a
        version that is not a version number."""
        path = self._model_dir(model) / DEFAULT_FILE
        if not path.exists():
            return None
        repair = (f"write {{\"version\": \"<n>\"}} naming one of the versions under {path.parent / 'versions'} "
                  "(its promotion.json says whether it was the default), or remove the file so that the next "
                  "promotion starts without a champion")
        data = _read_json(path, repair)
        try:
            pointer = DefaultPointer.model_validate(data)
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'top level'}: {e['msg']}"
                                 for e in error.errors())
            raise RegistryFileInvalid(f"{path}: not a registry default ({problems}); fix: {repair}") from None
        self._version_dir(model, pointer.version, source=path, repair=repair)
        return pointer.model_dump()

    def _version_dir(self, model: str, version: str, source: Path | None = None, repair: str = "") -> Path:
        """The directory of `version`, which must be a version number: a name such as "../../elsewhere" would
        resolve outside the registry."""
        versions = self._model_dir(model) / "versions"
        directory = versions / version
        inside = directory.resolve().parent == versions.resolve()
        if not VERSION_NAME.fullmatch(version) or not inside:
            where = f"{source}: " if source else ""
            fix = f"; fix: {repair}" if repair else ""
            raise RegistryFileInvalid(f"{where}version {version!r} is not a version number of this registry "
                                      f"(versions are 1, 2, … under {versions}){fix}")
        return directory

    def evaluation(self, model: str, version: str) -> dict:
        path = self._version_dir(model, version) / "evaluation.json"
        result: dict = _read_json(path, f"re-register the model of version {version}, or restore the file")
        return result

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

    def _claim_staging(self, model: str) -> tuple[Path, IO[str]]:
        """A new staging directory and its owner lock, held (flock) by this process until it is closed: the
        lock is taken before the directory exists, so a directory whose lock can be taken has no live owner."""
        versions = self._model_dir(model) / "versions"
        versions.mkdir(parents=True, exist_ok=True)
        handle, owner_path = tempfile.mkstemp(prefix=STAGING_PREFIX, suffix=OWNER_SUFFIX, dir=versions)
        os.close(handle)
        owner = open(owner_path)  # noqa: SIM115 (held open: its flock marks the staging directory as owned)
        fcntl.flock(owner.fileno(), fcntl.LOCK_EX)
        staging = Path(owner_path.removesuffix(OWNER_SUFFIX))
        staging.mkdir(mode=0o755)
        return staging, owner

    def remove_abandoned_staging(self, model: str) -> list[str]:
        """Remove the staging directories of promotions that were killed (their owner lock can be taken), and
        owner files left without a directory. Returns the names removed."""
        versions = self._model_dir(model) / "versions"
        if not versions.is_dir():
            return []
        removed = []
        for path in sorted(versions.iterdir()):
            if not path.name.startswith(STAGING_PREFIX):
                continue
            staging = path.with_name(path.name.removesuffix(OWNER_SUFFIX))
            owner = staging.with_name(staging.name + OWNER_SUFFIX)
            if path == owner:
                if staging.exists():
                    continue  # handled with its directory
                # A promotion that has finished removes its owner file outside the lock this scan holds, so the
                # file may vanish at any point from here on: gone means nothing is left to remove.
                age = _age_seconds(owner)
                if age is None or age < ORPHAN_OWNER_SECONDS:
                    continue  # gone, or a promotion between creating its owner file and locking it
            if not _owner_gone(owner):
                continue
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
                removed.append(staging.name)
                logger.warning("removed %s: the staging directory of a promotion that was interrupted", staging)
            owner.unlink(missing_ok=True)
        return removed

    def _stage(self, model: str, candidate: Candidate, staging: Path) -> Path:
        """Fill the staging directory with the candidate's model copy and its evaluation, outside the lock. A
        `gs://` model URI is read where the pipeline container sees it (foundation.gcs_mount)."""
        source = Path(gcs_mount.container_path(candidate.model_uri))
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
        return current["version"], str(self._version_dir(model, current["version"]) / "model")

    def register(self, model: str, candidate: Candidate, judge: Callable[[str | None], Verdict],
                 on_registered: Callable[[str, Verdict, str | None], dict] | None = None) -> tuple[str, Verdict, str | None]:
        """Add the candidate as the next version and make it the default if `judge(champion model dir or None)`
        says so; the champion is judged under the lock, so two promotions never judge against a stale default.
        `on_registered(version, verdict, champion version)` returns the decision record kept with the version.
        Returns (version, verdict, champion version)."""
        staging, owner = self._claim_staging(model)
        try:
            self._stage(model, candidate, staging)
            with self._locked(model):
                self.remove_abandoned_staging(model)
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
            Path(owner.name).unlink(missing_ok=True)
            owner.close()
        return version, verdict, champion_version

    def history(self, model: str) -> list[dict]:
        """Every version's decision record, oldest first (versions registered before records existed: skipped)."""
        records = []
        for version in self.versions(model):
            path = self._version_dir(model, version) / "promotion.json"
            if path.exists():
                records.append(_read_json(path, "restore the file, or remove it (the version then has no record)"))
        return records


def _read_json(path: Path, repair: str) -> Any:
    """A registry JSON file, or `RegistryFileInvalid` naming it and the repair."""
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RegistryFileInvalid(f"{path}: not valid JSON ({error}); fix: {repair}") from None


def _age_seconds(path: Path) -> float | None:
    """Seconds since the file was last modified, or None when it no longer exists."""
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return None


def _owner_gone(owner: Path) -> bool:
    """Whether nobody holds the flock on a staging directory's owner file (or the file is gone)."""
    try:
        handle = open(owner)  # noqa: SIM115 (closed by the `with` below)  never created here: a missing owner file means a staging without an owner
    except FileNotFoundError:
        return True
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return True
