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

Assumed (Vertex does not document it): input artifacts' metadata is not part of the key (KFP keys by artifact
name only); an execution that failed, was interrupted or was itself taken from the cache adds nothing;
the newest matching execution wins. The index is one JSON file per key under
`ROOT/spec-cache/<pipeline>/`, shared by every `run-spec` run with that root, written atomically.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from components.atomic_write import write_json_atomically
from ops.spec_executor.executor_input import TaskOutputs
from ops.spec_executor.pipeline_spec import SpecTask

CACHE_DIR = "spec-cache"


@dataclass(frozen=True)
class CachedExecution:
    """An earlier succeeded execution the key matched: which job and task ran it, and what it left."""

    job_name: str
    task: str
    outputs: TaskOutputs


def cache_key(pipeline: str, task: SpecTask, executor_input: dict) -> str:
    """The fingerprint of `task` with these resolved inputs (see the module docstring)."""
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
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class ExecutionCache:
    """The index of succeeded executions under `ROOT/spec-cache/<pipeline>/<key>.json`."""

    root: Path
    pipeline: str

    def _path(self, key: str) -> Path:
        return self.root / CACHE_DIR / self.pipeline / f"{key}.json"

    def lookup(self, key: str) -> CachedExecution | None:
        path = self._path(key)
        try:
            entry = json.loads(path.read_text())
            return CachedExecution(entry["job_name"], entry["task"],
                                   TaskOutputs(entry["outputs"]["artifacts"], entry["outputs"]["parameters"]))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a damaged entry is a miss: the task runs and writes a fresh one

    def record(self, key: str, job_name: str, task: str, outputs: TaskOutputs) -> None:
        """Remember a succeeded execution; the newest one for a key replaces the older."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"job_name": job_name, "task": task,
                 "outputs": {"artifacts": outputs.artifacts, "parameters": outputs.parameters}}
        write_json_atomically(path, entry, indent=1)
