"""Promotion into the Vertex Model Registry: a new model version with its evaluation attached.

The model (`vertex.model_registry.model_display_name`) gets one version per pipeline run. The current default
version (the champion) is read from the registry and scored on today's eval examples beside the challenger; the
new version is uploaded as the default only if the promotion rule allows.
"""

from __future__ import annotations

from typing import Callable

from components.registry.promotion import Candidate, Verdict
from configs import AdrankConfig

# The Vertex schema for classification evaluations; `logLoss` and `auRoc` are its metric fields.
CLASSIFICATION_METRICS_SCHEMA = "gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml"


def model_display_name(config: AdrankConfig) -> str:
    assert config.vertex is not None
    return config.vertex.model_registry.model_display_name or config.name


def default_version(parent) -> tuple[str, str] | None:
    """(version id, model directory as the pipeline container reads it) of the parent model's default version."""
    from google.cloud import aiplatform

    if parent is None:
        return None
    default = aiplatform.Model(parent.resource_name)  # a model name without @version resolves to its default
    uri = default.uri or ""
    return default.version_id, ("/gcs/" + uri.removeprefix("gs://") if uri.startswith("gs://") else uri)


def register_version(config: AdrankConfig, candidate: Candidate, labels: dict[str, str],
                     judge: Callable[[str | None], Verdict]) -> tuple[str, Verdict, str | None]:
    """Upload the candidate as a new version of the model; it is the default if `judge(champion dir)` says so.
    Returns (version id, verdict, champion version id)."""
    from google.cloud import aiplatform

    vertex = config.vertex
    assert vertex is not None
    aiplatform.init(project=vertex.project, location=vertex.region)
    name = model_display_name(config)
    existing = aiplatform.Model.list(filter=f'display_name="{name}"')
    parent = existing[0] if existing else None
    champion = default_version(parent)
    verdict = judge(champion[1] if champion else None)
    model = aiplatform.Model.upload(
        display_name=name,
        artifact_uri=candidate.model_uri,
        serving_container_image_uri=vertex.model_registry.serving_image,
        parent_model=parent.resource_name if parent else None,
        is_default_version=verdict.promoted,
        version_description=f"{candidate.target} run {candidate.run_index + 1}; {verdict.reason}"[:2048],
        labels=labels,
        encryption_spec_key_name=vertex.encryption_spec_key_name,
    )
    logloss = verdict.comparison.challenger_logloss if verdict.comparison else candidate.logloss
    metrics = {"logLoss": logloss}
    if candidate.auc is not None:
        metrics["auRoc"] = candidate.auc
    model.api_client.import_model_evaluation(
        parent=model.versioned_resource_name,
        model_evaluation={
            "display_name": f"{candidate.pipeline}-{candidate.target}-run{candidate.run_index + 1}",
            "metrics_schema_uri": CLASSIFICATION_METRICS_SCHEMA,
            "metrics": metrics,
        },
    )
    return model.version_id, verdict, champion[0] if champion else None
