"""Promotion into the Vertex Model Registry: a new model version with its evaluation attached.

The model (`vertex.model_registry.model_display_name`) gets one version per pipeline run. The current default
version (the champion) is read from the registry and scored on today's eval examples beside the challenger; the
new version is uploaded as the default only if the promotion rule allows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from components.registry import gcs_mount
from components.registry.promotion_rule import Candidate, Verdict
from configs.slices import PromoteStepConfig

if TYPE_CHECKING:  # imported where used: the local backend never loads the Vertex SDK
    from google.cloud import aiplatform

# The Vertex schema for classification evaluations; `logLoss` and `auRoc` are its metric fields.
CLASSIFICATION_METRICS_SCHEMA = "gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml"


class ChallengerJudge(Protocol):
    """Judges a champion model directory (None: no champion) against the challenger it already scored."""

    @property
    def challenger_logloss(self) -> float:
        """The challenger's log-loss on the eval examples both models are scored on."""

    def __call__(self, champion_model_dir: str | None) -> Verdict: ...


def model_display_name(config: PromoteStepConfig) -> str:
    assert config.vertex is not None
    return config.vertex.model_registry.model_display_name or config.name


def registered_model(config: PromoteStepConfig) -> aiplatform.Model | None:
    """The registry's model named `model_display_name(config)` (an `aiplatform.Model`), None before day 1.

    `aiplatform.init` sets only what it is given, so an endpoint, transport and credentials set beforehand
    (`ops.vertex.session`, e.g. pointing at a test double) are kept; in a pipeline container they are the defaults.
    """
    from google.cloud import aiplatform

    vertex = config.vertex
    assert vertex is not None
    aiplatform.init(project=vertex.project, location=vertex.region)
    existing = aiplatform.Model.list(filter=f'display_name="{model_display_name(config)}"')
    return existing[0] if existing else None


def default_version(parent: aiplatform.Model | None) -> tuple[str, str] | None:
    """(version id, model directory as the pipeline container reads it) of the parent model's default version."""
    from google.cloud import aiplatform

    if parent is None:
        return None
    default = aiplatform.Model(parent.resource_name)  # a model name without @version resolves to its default
    return default.version_id, gcs_mount.container_path(default.uri or "")


def register_version(config: PromoteStepConfig, candidate: Candidate, labels: dict[str, str],
                     judge: ChallengerJudge) -> tuple[str, Verdict, str | None]:
    """Upload the candidate as a new version of the model; it is the default if `judge(champion dir)` says so.
    Its evaluation carries `judge.challenger_logloss`, the figure of the decision record, whether or not a
    champion was scored. Returns (version id, verdict, champion version id)."""
    from google.cloud import aiplatform

    vertex = config.vertex
    assert vertex is not None
    name = model_display_name(config)
    parent = registered_model(config)
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
    metrics = {"logLoss": judge.challenger_logloss}
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
