"""Where a training run reads its tf.Transform output, and where it writes what outlives its process: checkpoints (locally beside the model; on Vertex under the
preemption-safe `AIP_CHECKPOINT_DIR`) and TensorBoard scalars (`AIP_TENSORBOARD_LOG_DIR`). The same rules for both
lanes."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from components.contracts.manifest import Manifest

CHECKPOINT_DIR = "checkpoints"
TENSORBOARD_ENV = "AIP_TENSORBOARD_LOG_DIR"


def checkpoint_dir(model_dir: str) -> str:
    """Locally checkpoints live in the model dir. On Vertex they go under the preemption-safe
    `AIP_CHECKPOINT_DIR`, nested by this run's model dir (its own output artifact, the same when the job
    restarts): a task resumes its own checkpoints, never those of another run sharing the variable."""
    shared = os.environ.get("AIP_CHECKPOINT_DIR")
    if not shared:
        return str(Path(model_dir) / CHECKPOINT_DIR)
    run_key = hashlib.sha256(str(model_dir).rstrip("/").encode()).hexdigest()[:16]
    return f"{shared.rstrip('/')}/run-{run_key}"


def tft_output_dir(examples_dir: str | Path, manifest: Manifest) -> str | None:
    """The tf.Transform output directory (holding `transform_fn/` and `transformed_metadata/`), if written."""
    path = Path(examples_dir) / manifest.transform_fn_dir
    if (path / "transform_fn").is_dir():
        return str(path)
    if (path / "saved_model.pb").is_file() and (path.parent / "transformed_metadata").is_dir():
        return str(path.parent)
    return None
