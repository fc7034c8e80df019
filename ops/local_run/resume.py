"""`adrank run --resume`: whether a run may resume (`resumable_run`), the window it keeps (`resumed_window_end`), and
which earlier attempt's checkpoints an interrupted training task continues from (`restore_checkpoints`).

A resumed run reuses every step that finished (the engine's execution cache, scoped to the run: see
`ops.local_run.run`); a step that did not finish runs again under the new attempt, with new output directories. If
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

from configs import AdrankConfig, config_hash
from ops.local_run.directories import RunIdError, existing_run_dir
from ops.local_run.record import RunRecord, RunRecordError
from ops.spec_executor.runner import EXECUTOR_INPUT_FILE
from ops.spec_executor.storage import CloudStorageRoot

CHECKPOINTS = "checkpoints"
CHECKPOINT_INDEX = "checkpoint"  # the file tf.train.CheckpointManager keeps beside its checkpoints


def resumable_run(runs_dir: Path, run_id: str, config: AdrankConfig) -> Path:
    """The directory of a run that may resume: it exists, did not succeed, no live process runs it, and `config`
    is the config it ran with (`config.yaml` in it). The caller holds the run's lock (`ops.local_run.lock`)."""
    run_dir = existing_run_dir(runs_dir, run_id)
    try:
        record = RunRecord.read(run_dir)
    except RunRecordError as error:
        raise RunIdError(f"run {run_id} cannot resume: {error}") from None
    if record.status == "succeeded":
        raise RunIdError(f"run {run_id} already succeeded; its report: {(run_dir / 'report.html').resolve()}")
    if record.status == "running":
        raise RunIdError(f"run {run_id} is still running (pid {record.pid} on {record.host})")
    if config_hash(config) != record.config_hash:
        raise RunIdError(f"run {run_id} ran config {record.config_hash}, not {config_hash(config)}: a resumed run "
                         "keeps its config (it is read from the run's config.yaml)")
    return run_dir

def resumed_window_end(record: RunRecord, window_end: str) -> str:
    """The window a resumed run reads: the one its first attempt recorded ("" : every log). Asking for another is
    an error (the reused steps read that window). A record from before windows were recorded reads `window_end`."""
    recorded = record.window_end
    if recorded is None:
        return window_end
    if window_end and window_end != recorded:
        raise RunIdError(f"run {record.id} read the window ending {recorded or '(no window: every log)'}; a resume "
                         f"keeps it, not {window_end}")
    return recorded


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
