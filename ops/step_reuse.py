"""`adrank run --resume`: which steps of a run's earlier attempts stand in for this attempt's, and how an interrupted
training step picks up its checkpoints.

kfp.local writes each attempt under `artifacts/<pipeline>-<time>/<task>/`. When a step succeeds, `seal_step` writes
`.adrank-step.json` next to its outputs: every file's size and SHA-256. On resume, a task whose earlier directory
has that seal and whose files still match it is not run again: its files are hard-linked into this attempt's task
directory and the step reports success. The seal also records the absolute task directory the step wrote (as
kfp.local named it): the paths inside the earlier `executor_output.json` that start with it are rebased onto this
attempt's task directory, whatever the working directory of either attempt and wherever the runs dir now is. A task without a valid
seal runs; if an earlier attempt of it left `checkpoints/` in an output, they are copied into the same output of
this attempt first, so training restores them and continues to the same final step. A step that reads an output
of a step that ran again in this attempt runs again too, without earlier checkpoints.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

SEAL_FILE = ".adrank-step.json"
EXECUTOR_OUTPUT = "executor_output.json"
CHECKPOINTS = "checkpoints"


@dataclass(frozen=True)
class StepOutputs:
    """Where kfp.local wants one task's outputs, read from its `--executor_input`."""

    task: str
    task_dir: Path
    artifact_dirs: dict[str, Path]  # output name → URI (a directory the step writes)
    upstream_tasks: frozenset[str] = frozenset()  # the tasks whose outputs it reads

    @classmethod
    def from_command(cls, full_command: list[str]) -> StepOutputs | None:
        if "--executor_input" not in full_command:
            return None
        executor_input = json.loads(full_command[full_command.index("--executor_input") + 1])
        outputs = executor_input.get("outputs", {})
        output_file = outputs.get("outputFile")
        if not output_file:
            return None
        task_dir = Path(output_file).parent
        artifacts = {
            name: Path(entry["artifacts"][0]["uri"])
            for name, entry in outputs.get("artifacts", {}).items() if entry.get("artifacts")
        }
        upstream = frozenset(
            Path(artifact["uri"]).parent.name
            for entry in executor_input.get("inputs", {}).get("artifacts", {}).values()
            for artifact in entry.get("artifacts", [])
        )
        return cls(task_dir.name, task_dir, artifacts, upstream)


def _inventory(task_dir: Path) -> dict[str, list]:
    files = {}
    for path in sorted(p for p in task_dir.rglob("*") if p.is_file() and p.name != SEAL_FILE):
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        files[str(path.relative_to(task_dir))] = [path.stat().st_size, digest.hexdigest()]
    return files


def seal_step(task_dir: Path) -> None:
    """Record the files a successful step left (sizes and SHA-256), to be checked before reuse, and the absolute
    directory they were written to (the prefix of the paths in `executor_output.json`)."""
    if (task_dir / EXECUTOR_OUTPUT).exists():
        (task_dir / SEAL_FILE).write_text(json.dumps({"task_dir": os.path.abspath(task_dir),
                                                      "files": _inventory(task_dir)}))


def sealed_task_dir(task_dir: Path) -> str:
    """The absolute directory a sealed step wrote to; a seal from before it was recorded: where it is now."""
    try:
        recorded = json.loads((task_dir / SEAL_FILE).read_text()).get("task_dir")
    except (OSError, ValueError, AttributeError):
        recorded = None
    return recorded if isinstance(recorded, str) and recorded else os.path.abspath(task_dir)


def rebased(value, old: str, new: str):
    """`value` (decoded JSON) with every string that is `old` or a path under it moved under `new`."""
    if isinstance(value, str):
        if value == old or value.startswith(old + "/"):
            return new + value[len(old):]
        return value
    if isinstance(value, list):
        return [rebased(item, old, new) for item in value]
    if isinstance(value, dict):
        return {key: rebased(item, old, new) for key, item in value.items()}
    return value


def sealed_and_intact(task_dir: Path) -> bool:
    """The step finished (sealed) and every file it left is still there, unchanged; nothing is missing."""
    try:
        sealed = json.loads((task_dir / SEAL_FILE).read_text())["files"]
    except (OSError, ValueError, KeyError):
        return False
    return EXECUTOR_OUTPUT in sealed and _inventory(task_dir) == sealed


class StepReuse:
    """The earlier attempts of one run (newest first), consulted before each step of the resumed attempt."""

    def __init__(self, artifacts_dir: Path, current_attempts: set[str]):
        artifacts_dir = Path(os.path.abspath(artifacts_dir))  # kfp.local's paths are absolute (os.path.abspath)
        self.attempts = sorted((d for d in artifacts_dir.iterdir() if d.is_dir() and d.name not in current_attempts),
                               key=lambda d: d.stat().st_mtime, reverse=True) if artifacts_dir.exists() else []
        self.reused: list[str] = []
        self.resumed_from_checkpoint: list[str] = []
        self.ran: set[str] = set()  # tasks this attempt ran: what reads their outputs runs again too

    def _inputs_unchanged(self, outputs: StepOutputs) -> bool:
        return not (outputs.upstream_tasks & self.ran)

    def finished(self, task: str) -> Path | None:
        for attempt in self.attempts:
            if sealed_and_intact(attempt / task):
                return attempt / task
        return None

    def reuse(self, outputs: StepOutputs) -> bool:
        """Link a verified earlier result of this task into place; False when the task must run."""
        earlier = self.finished(outputs.task) if self._inputs_unchanged(outputs) else None
        if earlier is None:
            self.ran.add(outputs.task)
            return False
        written_to = sealed_task_dir(earlier)
        outputs.task_dir.mkdir(parents=True, exist_ok=True)
        shutil.copytree(earlier, outputs.task_dir, copy_function=_link_or_copy, dirs_exist_ok=True)
        (outputs.task_dir / SEAL_FILE).unlink(missing_ok=True)
        executor_output = outputs.task_dir / EXECUTOR_OUTPUT
        content = rebased(json.loads(executor_output.read_text()), written_to, os.path.abspath(outputs.task_dir))
        executor_output.unlink()  # a hard link to the earlier file: write a new one
        executor_output.write_text(json.dumps(content))
        seal_step(outputs.task_dir)
        self.reused.append(outputs.task)
        return True

    def restore_checkpoints(self, outputs: StepOutputs) -> Path | None:
        """Copy the newest earlier `checkpoints/` of this task's outputs into place (the step continues from them),
        unless a step it reads from ran again in this attempt."""
        if not self._inputs_unchanged(outputs):
            return None
        for attempt in self.attempts:
            for name, uri in outputs.artifact_dirs.items():
                earlier = attempt / outputs.task / name / CHECKPOINTS
                if (earlier / "checkpoint").exists():
                    uri.mkdir(parents=True, exist_ok=True)
                    shutil.copytree(earlier, uri / CHECKPOINTS, dirs_exist_ok=True)
                    self.resumed_from_checkpoint.append(outputs.task)
                    return earlier
        return None


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)
