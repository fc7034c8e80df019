"""`adrank run --resume`: which earlier attempt's checkpoints an interrupted training task continues from.

A resumed run reuses every step that finished (the engine's execution cache, scoped to the run: see
`ops.local_dag`); a step that did not finish runs again under the new attempt, with new output directories. If
an earlier attempt of the same task was started with the same inputs (the same parameter values and the same
upstream artifacts: the executor input the engine keeps beside each task's log) and left `checkpoints/` in one
of its outputs, those checkpoints are copied into the same output of this attempt before the task starts, so
training restores them and continues to the same final step. Newest attempt first; a task whose upstream ran
again (different artifacts) starts cold.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ops.spec_executor.runner import EXECUTOR_INPUT_FILE
from ops.spec_executor.storage import CloudStorageRoot

CHECKPOINTS = "checkpoints"
CHECKPOINT_INDEX = "checkpoint"  # the file tf.train.CheckpointManager keeps beside its checkpoints


def restore_checkpoints(jobs_dir: Path, current_job: str, path: str, executor_input: dict) -> Path | None:
    """Copy the newest matching earlier `checkpoints/` of task `path` into this attempt's outputs; returns the
    directory copied, or None. `jobs_dir`: the engine's `spec-runs/` of this run (its parent is the engine's root)."""
    root = CloudStorageRoot(jobs_dir.parent)
    earlier_inputs = sorted((p for p in jobs_dir.glob(f"*/tasks/{path}/{EXECUTOR_INPUT_FILE}")
                             if p.parents[len(Path(path).parts) + 1].name != current_job),
                            key=lambda p: p.stat().st_mtime, reverse=True)
    for earlier_file in earlier_inputs:
        try:
            earlier = root.resolved(json.loads(earlier_file.read_text()))
        except (OSError, ValueError):
            continue
        if earlier.get("inputs") != executor_input["inputs"]:
            continue
        for name, spec in executor_input["outputs"]["artifacts"].items():
            try:
                earlier_uri = earlier["outputs"]["artifacts"][name]["artifacts"][0]["uri"]
            except (KeyError, IndexError, TypeError):
                continue
            source = Path(earlier_uri) / CHECKPOINTS
            if (source / CHECKPOINT_INDEX).exists():
                target = Path(spec["artifacts"][0]["uri"]) / CHECKPOINTS
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(source, target, dirs_exist_ok=True)
                return source
    return None
