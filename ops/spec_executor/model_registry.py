"""The Vertex Model Registry, on this machine: the promotion step promotes into a local registry instead.

The compiled promotion task passes `backend: vertex`, so on Vertex it uploads a model version to the Model
Registry. No Vertex endpoint is reachable here, so the executor hands the task `backend: local` and points
its config slice's `promotion.local_registry` at `<root>/model-registry`; the promotion rule, the summary it
reads and the decision it writes are the task's own. The candidate's `model_uri` stays the `gs://` URI the
training task recorded (what Vertex would receive); its files are under the root where that URI maps.
"""

from __future__ import annotations

import json
from pathlib import Path

PROMOTION_FUNCTION = "promote_step"


def is_promotion(container: dict) -> bool:
    args = container.get("args", [])
    return "--function_to_execute" in args and PROMOTION_FUNCTION in args


def local_registry_parameters(parameters: dict, registry: Path) -> dict | None:
    """The promotion task's parameters pointed at the local registry, or None if it does not target Vertex."""
    if parameters.get("backend") != "vertex":
        return None
    config = json.loads(parameters["promote_config_json"])
    config.setdefault("promotion", {})["local_registry"] = str(registry)
    return {**parameters, "backend": "local", "promote_config_json": json.dumps(config)}
