"""Promotion into the Vertex Model Registry: a new model version with its evaluation attached.

The model (`vertex.model_registry.model_display_name`) gets one version per pipeline run. The new
version is uploaded as the default only if the promotion rule allows; the current default's log-loss
is read from its imported model evaluation.
"""

from __future__ import annotations

from components.registry.promotion import Candidate, PromotionDecision, decide
from configs import AdrankConfig

# The Vertex schema for classification evaluations; `logLoss` and `auRoc` are its metric fields.
CLASSIFICATION_METRICS_SCHEMA = "gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml"


def model_display_name(config: AdrankConfig) -> str:
    assert config.vertex is not None
    return config.vertex.model_registry.model_display_name or config.name


def default_version_logloss(model) -> float | None:
    """The log-loss recorded in the default version's most recent evaluation (None if it has none)."""
    evaluations = model.list_model_evaluations()
    for evaluation in evaluations:
        metrics = dict(evaluation.metrics or {})
        if "logLoss" in metrics:
            return float(metrics["logLoss"])
    return None


def register_version(config: AdrankConfig, candidate: Candidate, labels: dict[str, str]) -> PromotionDecision:
    from google.cloud import aiplatform

    vertex = config.vertex
    assert vertex is not None
    aiplatform.init(project=vertex.project, location=vertex.region)
    name = model_display_name(config)
    existing = aiplatform.Model.list(filter=f'display_name="{name}"')
    parent = existing[0] if existing else None
    current_logloss = default_version_logloss(aiplatform.Model(parent.resource_name)) if parent else None
    is_default, reason = decide(candidate.logloss, current_logloss, config.promotion.logloss_tolerance)
    model = aiplatform.Model.upload(
        display_name=name,
        artifact_uri=candidate.model_uri,
        serving_container_image_uri=vertex.model_registry.serving_image,
        parent_model=parent.resource_name if parent else None,
        is_default_version=is_default,
        version_description=f"{candidate.target} run {candidate.run_index + 1}; {reason}",
        labels=labels,
        encryption_spec_key_name=vertex.encryption_spec_key_name,
    )
    metrics = {"logLoss": candidate.logloss}
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
    return PromotionDecision(name, model.version_id, is_default, candidate.logloss, current_logloss,
                             config.promotion.logloss_tolerance, reason)
