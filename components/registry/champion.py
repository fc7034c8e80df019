"""Where the current default model (the champion) lives, for warm-starting today's training from it, checked
before training reads it.

The champion's warm-start state (`<model>/warm_start/`: `.npz` archives and `.json` files, written beside the
exported SavedModel by `components.train.warm_start`) is read whole by the trainer. A damaged file there used to stop
the day inside training with `BadZipFile: File is not a zip file`, naming neither the file nor the registry; it is
checked here instead (every archive opened and its members' CRCs verified, every JSON file parsed), and a damaged
one stops the `find champion` step with one line naming both. A champion without that directory (exported by an
older adrank) is not an error: training starts cold and says so.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from components.registry.local import LocalModelRegistry
from configs.slices import PromoteStepConfig

WARM_START_DIR = "warm_start"  # components.train.warm_start.STATE_DIR (that module imports TensorFlow)


class ChampionDamaged(RuntimeError):
    """The champion's warm-start state cannot be read; the message names the file and the registry entry."""


def champion_model_dir(config: PromoteStepConfig, backend: str) -> str:
    """The default version's model directory, "" when there is none yet (training then starts cold); its
    warm-start state checked (`ChampionDamaged`).

    On Vertex: the Model Registry's default version of the model adrank registers into, as a /gcs/ path."""
    if backend == "vertex":
        from components.registry.vertex import default_version, model_resource_name, registered_model

        found = default_version(registered_model(config))
        where = f"the Vertex Model Registry's model {model_resource_name(config)}"
    else:
        registry = config.promotion.local_registry
        found = LocalModelRegistry(registry).default_model_dir(config.name)
        where = f"the local registry {registry}, model '{config.name}'"
    if not found:
        return ""
    version, model_dir = found
    check_warm_start_state(model_dir, f"{where}, default version {version}")
    return model_dir


def check_warm_start_state(model_dir: str, champion: str) -> None:
    """Raise `ChampionDamaged` naming the file and `champion` when a file of the warm-start state cannot be read."""
    directory = Path(model_dir) / WARM_START_DIR
    if not directory.is_dir():
        return
    for path in sorted(directory.iterdir()):
        problem = _archive_problem(path) if path.suffix == ".npz" else _json_problem(path) if path.suffix == ".json" \
            else None
        if problem:
            raise ChampionDamaged(f"the champion ({champion}) is damaged: {path}: {problem}; training would "
                                  "warm-start from it: repair or replace that version, or make another one the "
                                  "default")


def _archive_problem(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        return f"not a readable .npz archive ({type(error).__name__}: {error})"
    return f"member {bad} fails its CRC check" if bad is not None else None


def _json_problem(path: Path) -> str | None:
    try:
        json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as error:
        return f"not valid JSON ({type(error).__name__}: {error})"
    return None
