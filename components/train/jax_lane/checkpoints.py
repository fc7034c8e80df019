"""The JAX lane's checkpoints: the whole train state (weights, optimizer and table slots, the step) as one `.npz` per
chunk, written atomically (a temporary file renamed into place), the latest two kept. A killed run resumes from the
latest; its step must be on a chunk boundary. Where they live is the rule both lanes share
(`components.train.run_paths.checkpoint_dir`; a gs:// directory is read through the container's Cloud Storage mount).
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from pathlib import Path

import jax
import numpy as np

from foundation.gcs_mount import container_path

log = logging.getLogger(__name__)

KEEP = 2
CHECKPOINT = re.compile(r"^state-(\d+)\.npz$")


class CheckpointMismatch(RuntimeError):
    """A checkpoint does not hold the state this run builds (another model or configuration wrote it)."""


class StateCheckpoints:
    """Save and restore a pytree of arrays (the train state) under `directory`."""

    def __init__(self, directory: str):
        self.directory = Path(container_path(directory))

    def _steps(self) -> list[int]:
        if not self.directory.is_dir():
            return []
        return sorted(int(m.group(1)) for name in os.listdir(self.directory) if (m := CHECKPOINT.match(name)))

    def latest_step(self) -> int | None:
        steps = self._steps()
        return steps[-1] if steps else None

    def path(self, step: int) -> Path:
        return self.directory / f"state-{step:012d}.npz"

    def save(self, state, step: int) -> Path:
        leaves = jax.tree_util.tree_leaves(state)
        self.directory.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".state-", suffix=".npz")
        try:
            with os.fdopen(handle, "wb") as stream:
                np.savez(stream, allow_pickle=False, **{f"leaf{i:05d}": np.asarray(leaf) for i, leaf in enumerate(leaves)})
            os.replace(temporary, self.path(step))
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        for old in self._steps()[:-KEEP]:
            self.path(old).unlink(missing_ok=True)
        return self.path(step)

    def restore(self, template, step: int):
        """The state saved at `step`, shaped as `template` (every leaf's shape and dtype checked)."""
        leaves, treedef = jax.tree_util.tree_flatten(template)
        with np.load(self.path(step)) as saved:
            if len(saved.files) != len(leaves):
                raise CheckpointMismatch(f"{self.path(step)} holds {len(saved.files)} arrays, this run's state "
                                         f"{len(leaves)}: it was written by another model or configuration")
            restored = []
            for i, leaf in enumerate(leaves):
                value = saved[f"leaf{i:05d}"]
                if value.shape != np.shape(leaf) or value.dtype != np.asarray(leaf).dtype:
                    raise CheckpointMismatch(f"{self.path(step)} array {i} is {value.dtype}{list(value.shape)}, this "
                                             f"run's {np.asarray(leaf).dtype}{list(np.shape(leaf))}")
                restored.append(value)
        log.info("resumed from %s", self.path(step))
        return jax.tree_util.tree_unflatten(treedef, restored)
