"""Where the current default model (the champion) lives, for warm-starting today's training from it."""

from __future__ import annotations

from components.registry.local import LocalModelRegistry
from configs.slices import PromoteStepConfig


def champion_model_dir(config: PromoteStepConfig, backend: str) -> str:
    """The default version's model directory, "" when there is none yet (training then starts cold).

    On Vertex: the Model Registry's default version of `vertex.model_registry.model_display_name`, as a /gcs/ path.
    """
    if backend == "vertex":
        from components.registry.vertex import default_version, registered_model

        champion = default_version(registered_model(config))
        return champion[1] if champion else ""
    champion = LocalModelRegistry(config.promotion.local_registry).default_model_dir(config.name)
    return champion[1] if champion else ""
