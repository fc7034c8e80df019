"""Vertex's execution cache: a task whose cache key matches an earlier succeeded execution is not run; it
takes that execution's outputs.

The key follows what Vertex documents ("Configure execution caching") and what KFP's own backend computes
(`backend/src/v2/cacheutils`: a SHA-256 over a JSON `CacheKey`):

    the step's inputs          resolved input parameter values; input artifacts by identity (Vertex: the
                               ML Metadata artifact id; here the artifact's URI, which names one artifact)
    the output definition      output parameter and artifact names (with their types)
    the component's spec       image, command, args and env of the container, in their compiled order
                               (placeholders unresolved, as compiled)
    scope                      only pipelines with the same name share the cache
    the task's code (here)     what the image stands for here: a digest of the checkout's packages and the installed
                               distributions the task's Python runs (`task_code`), so an edit to the code reruns
                               the step; on Vertex the image is pinned by digest (`ops.image_pins`) for the same end

Assumed (Vertex does not document it): input artifacts' metadata is not part of the key (KFP keys by artifact
name only); an execution that failed, was interrupted or was itself taken from the cache adds nothing;
the newest matching execution wins. The index is one JSON file per key under
`ROOT/spec-cache/<pipeline>/`, shared by every `run-spec` run with that root, written atomically; local paths
in it are relative to the root (`storage.CloudStorageRoot.portable`).

With `verify_files` (the local engine, `adrank run --resume`: a run's own cache) an entry also records every
file of its output artifacts (size and SHA-256), and a hit counts only while those files are still there,
unchanged: an output someone edited or removed makes the task run again. Vertex does not check this.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from foundation.atomic_write import write_json_atomically
from foundation.canonical_json import canonical_json
from ops.spec_executor.executor_input import TaskOutputs
from ops.spec_executor.pipeline_spec import SpecTask
from ops.spec_executor.storage import CloudStorageRoot

CACHE_DIR = "spec-cache"


@dataclass(frozen=True)
class CachedExecution:
    """An earlier succeeded execution the key matched: which job and task ran it, and what it left."""

    job_name: str
    task: str
    outputs: TaskOutputs


def cache_key(pipeline: str, task: SpecTask, executor_input: dict, task_code: str) -> str:
    """The fingerprint of `task` with these resolved inputs, run by the code `task_code` digests (see the module
    docstring)."""
    container = task.container or {}
    definitions = task.component.get("outputDefinitions", {})
    key = {
        "pipelineName": pipeline,
        "inputParameterValues": executor_input["inputs"]["parameterValues"],
        "inputArtifactNames": {name: [artifact["uri"] for artifact in spec["artifacts"]]
                               for name, spec in executor_input["inputs"]["artifacts"].items()},
        "outputArtifactsSpec": {name: definition.get("artifactType", {})
                                for name, definition in definitions.get("artifacts", {}).items()},
        "outputParametersSpec": {name: definition.get("parameterType", "")
                                 for name, definition in definitions.get("parameters", {}).items()},
        "containerSpec": {"image": container.get("image", ""),
                          "cmdArgs": list(container.get("command", [])) + list(container.get("args", [])),
                          "env": container.get("env", [])},
        "taskCode": task_code,
    }
    return hashlib.sha256(canonical_json(key).encode()).hexdigest()


@dataclass(frozen=True)
class ExecutionCache:
    """The index of succeeded executions under `ROOT/spec-cache/<pipeline>/<key>.json`."""

    root: Path
    pipeline: str

    def _path(self, key: str) -> Path:
        return self.root / CACHE_DIR / self.pipeline / f"{key}.json"

    def lookup(self, key: str, local_path: Callable[[str], Path] | None = None) -> CachedExecution | None:
        """The execution recorded for `key`; with `local_path` (URI → directory) only while the files it recorded
        are intact (see the module docstring)."""
        path = self._path(key)
        try:
            entry = CloudStorageRoot(self.root).resolved(json.loads(path.read_text()))
            outputs = TaskOutputs(entry["outputs"]["artifacts"], entry["outputs"]["parameters"])
            if local_path is not None and entry.get("files") != output_files(outputs, local_path):
                return None
            return CachedExecution(entry["job_name"], entry["task"], outputs)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a damaged entry is a miss: the task runs and writes a fresh one

    def record(self, key: str, job_name: str, task: str, outputs: TaskOutputs,
               local_path: Callable[[str], Path] | None = None) -> None:
        """Remember a succeeded execution; the newest one for a key replaces the older. With `local_path`, the
        files of its output artifacts too."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry: dict = {"job_name": job_name, "task": task,
                       "outputs": {"artifacts": outputs.artifacts, "parameters": outputs.parameters}}
        if local_path is not None:
            entry["files"] = output_files(outputs, local_path)
        write_json_atomically(path, CloudStorageRoot(self.root).portable(entry), indent=1)


def output_files(outputs: TaskOutputs, local_path: Callable[[str], Path]) -> dict[str, dict[str, list]]:
    """Every file under each output artifact's directory (or the artifact's file): URI → relative path →
    [size, SHA-256]."""
    inventory: dict[str, dict[str, list]] = {}
    for produced in outputs.artifacts.values():
        for artifact in produced:
            where = local_path(artifact["uri"])
            files = sorted(p for p in where.rglob("*") if p.is_file()) if where.is_dir() else (
                [where] if where.is_file() else [])
            inventory[artifact["uri"]] = {str(f.relative_to(where)) if f != where else ".": _digest(f)
                                          for f in files}
    return inventory


def _digest(path: Path) -> list:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return [path.stat().st_size, digest.hexdigest()]
