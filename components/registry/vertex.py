"""Promotion into the Vertex Model Registry: one new model version per day read, with its evaluation attached.

The model is found by the resource name adrank gives it, `projects/P/locations/L/models/<model_id>`
(`vertex.model_registry.model_id`, default the display name in the id alphabet), never by display name: display
names are not unique. The first upload creates it under that id.

One decision per day. Every version adrank uploads is labelled with the day its run read (`adrank-day:
20260303`, `components.lineage.run_day`), the version it was judged against (`adrank-champion`) and the outcome
(`adrank-decision: promoted|kept`), and its imported evaluation carries the whole decision record (its
`metadata`). Before anything is scored, the day's version is looked up:

- none: the champion (the default version) is scored beside the challenger on the same eval examples, and the
  challenger is uploaded, as the default only if the rule allows;
- found with its evaluation: the day was decided by an earlier run (a re-run, the schedule's retry, a catch-up
  of a day already done): that decision is this run's too, and nothing is uploaded;
- found without its evaluation: an earlier attempt of this step uploaded and then failed (the step's retry
  policy runs it again): the version is judged again against the champion its label names, which gives the
  same figures (same examples, same models, a seeded interval), and the evaluation is imported. The outcome the
  registry already holds (the version's label and default state) is kept.

So a day run twice, a retried promotion and a catch-up of several days each leave exactly one version per day.
(Two runs of one day at the same moment could still both upload: `adrank submit` refuses a second submit of a
day that is running or succeeded, and a schedule runs one run at a time by default.)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from components.contracts.promotion_decision import PromotionDecision
from components.registry.promotion_rule import Candidate, Verdict
from configs.slices import PromoteStepConfig
from foundation import gcs_mount

if TYPE_CHECKING:  # imported where used: the local backend never loads the Vertex SDK
    from google.cloud import aiplatform

log = logging.getLogger(__name__)

# The Vertex schema for classification evaluations; `logLoss` and `auRoc` are its metric fields.
CLASSIFICATION_METRICS_SCHEMA = "gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml"
DAY_LABEL = "adrank-day"
CHAMPION_LABEL = "adrank-champion"
DECISION_LABEL = "adrank-decision"
JOB_LABEL = "adrank-job"
NO_CHAMPION = "none"
DECISION_METADATA = "adrank_decision"  # the evaluation metadata key holding the decision record


class ChallengerJudge(Protocol):
    """Judges a champion model directory (None: no champion) against the challenger it already scored."""

    @property
    def challenger_logloss(self) -> float:
        """The challenger's log-loss on the eval examples both models are scored on."""

    def __call__(self, champion_model_dir: str | None) -> Verdict: ...


class RegistryModelNotFound(LookupError):
    """The registry has no model under adrank's resource name but one or more under its display name."""


# (version id, verdict, champion version id) → the decision record of a version just registered or re-judged
DecisionFor = Callable[[str, Verdict, str | None], PromotionDecision]


@dataclass(frozen=True)
class DayVersion:
    """The version registered for one day: its id, labels, whether it is the default, and its decision record
    when its evaluation holds one."""

    version: str
    labels: dict[str, str]
    is_default: bool
    decision: PromotionDecision | None


def model_display_name(config: PromoteStepConfig) -> str:
    assert config.vertex is not None
    return config.vertex.model_registry.display_name(config.name)


def model_resource_name(config: PromoteStepConfig) -> str:
    """`projects/P/locations/L/models/<model_id>`: where adrank keeps this config's model."""
    vertex = config.vertex
    assert vertex is not None
    model_id = vertex.model_registry.resolved_model_id(config.name)
    return f"projects/{vertex.project}/locations/{vertex.region}/models/{model_id}"


def registered_model(config: PromoteStepConfig) -> aiplatform.Model | None:
    """The registry model at `model_resource_name(config)` (its default version), None before day 1.

    `aiplatform.init` sets only what it is given, so an endpoint, transport and credentials set beforehand
    (`ops.vertex.session`, e.g. pointing at a test double) are kept; in a pipeline container they are the defaults.
    A model of the same display name under another id is an error naming it: adrank would otherwise start a
    second model beside it and lose its champion."""
    from google.api_core import exceptions
    from google.cloud import aiplatform

    vertex = config.vertex
    assert vertex is not None
    aiplatform.init(project=vertex.project, location=vertex.region)
    name = model_resource_name(config)
    try:
        return aiplatform.Model(name)
    except exceptions.NotFound:
        pass
    display_name = model_display_name(config)
    namesakes = aiplatform.Model.list(filter=f'display_name="{display_name}"')
    if namesakes:
        found = ", ".join(model.resource_name for model in namesakes)
        raise RegistryModelNotFound(
            f"the Model Registry has no model {name}, but has a model named '{display_name}' ({found}): adrank "
            "finds its model by resource name, never by display name; to keep promoting into that model set "
            f"vertex.model_registry.model_id to its id ({namesakes[0].name}), or set another model_display_name")
    return None


def default_version(parent: aiplatform.Model | None) -> tuple[str, str] | None:
    """(version id, model directory as the pipeline container reads it) of the parent model's default version."""
    from google.cloud import aiplatform

    if parent is None:
        return None
    default = aiplatform.Model(parent.resource_name)  # a model name without @version resolves to its default
    return default.version_id, gcs_mount.container_path(default.uri or "")


def version_model_dir(parent: aiplatform.Model, version: str) -> str:
    from google.cloud import aiplatform

    return gcs_mount.container_path(aiplatform.Model(f"{parent.resource_name}@{version}").uri or "")


def day_version(parent: aiplatform.Model, day_label: str) -> DayVersion | None:
    """The version labelled with `day_label` (`adrank-day`), None when the day has none. Every version is listed
    and the labels compared here (a model holds one version a day). Should two versions carry the day (two runs
    of it at the same moment), the first registered is the day's, and a warning says so."""
    client = parent.api_client
    versions = [version for version in client.list_model_versions(name=parent.resource_name)
                if dict(version.labels).get(DAY_LABEL) == day_label]
    if not versions:
        return None
    versions.sort(key=lambda version: int(version.version_id) if version.version_id.isdigit() else 0)
    if len(versions) > 1:
        log.warning(f"day {day_label}: versions {', '.join(v.version_id for v in versions)} of {parent.resource_name} "
                    f"all carry it; version {versions[0].version_id}, the first, is the day's")
    chosen = versions[0]
    versioned = f"{parent.resource_name}@{chosen.version_id}"
    return DayVersion(chosen.version_id, dict(chosen.labels), "default" in list(chosen.version_aliases),
                      recorded_decision(client, versioned))


def recorded_decision(client: Any, versioned_name: str) -> PromotionDecision | None:
    """The decision record an evaluation of the version carries, None when it has none."""
    from google.protobuf import json_format

    for evaluation in client.list_model_evaluations(parent=versioned_name):
        metadata = json_format.MessageToDict(type(evaluation).pb(evaluation).metadata)
        record = metadata.get(DECISION_METADATA) if isinstance(metadata, dict) else None
        if record:
            return PromotionDecision.model_validate(record)
    return None


def register_for_day(config: PromoteStepConfig, candidate: Candidate, labels: dict[str, str], judge: ChallengerJudge,
                     day_label: str | None, decide: DecisionFor) -> PromotionDecision:
    """The day's decision: the one recorded for `day_label` when there is one, else the challenger judged,
    uploaded and its evaluation (with the decision record) imported (see the module docstring). `labels` go on a
    new version; `decide` builds the record."""
    parent = registered_model(config)
    if parent is not None and day_label:
        earlier = day_version(parent, day_label)
        if earlier is not None:
            return _finish_day(config, candidate, judge, parent, earlier, decide)
    champion = default_version(parent)
    verdict = judge(champion[1] if champion else None)
    champion_version = champion[0] if champion else None
    day_labels = {CHAMPION_LABEL: champion_version or NO_CHAMPION, DECISION_LABEL: _outcome(verdict.promoted)}
    if day_label:
        day_labels[DAY_LABEL] = day_label
    model = _upload(config, candidate, parent, verdict, {**labels, **day_labels})
    decision = decide(model.version_id, verdict, champion_version)
    _import_evaluation(model.api_client, model.versioned_resource_name, candidate, judge.challenger_logloss, decision)
    return decision


def _finish_day(config: PromoteStepConfig, candidate: Candidate, judge: ChallengerJudge, parent: aiplatform.Model,
                earlier: DayVersion, decide: DecisionFor) -> PromotionDecision:
    """The decision of a day that already has its version: recorded, or judged again and recorded now."""
    if earlier.decision is not None:
        log.info(f"day {earlier.labels.get(DAY_LABEL)}: decided earlier (version {earlier.version}"
                 + (f", by {earlier.decision.decided_by}" if earlier.decision.decided_by else "")
                 + "); nothing new is registered")
        return earlier.decision.model_copy(update={"reused": True})
    judged_against = earlier.labels.get(CHAMPION_LABEL, NO_CHAMPION)
    champion_version = None if judged_against == NO_CHAMPION else judged_against
    log.warning(f"day {earlier.labels.get(DAY_LABEL)}: version {earlier.version} was registered by an attempt "
                f"that stopped before its evaluation; judged again against "
                f"{'version ' + judged_against if champion_version else 'no champion'} and recorded")
    verdict = judge(version_model_dir(parent, champion_version) if champion_version else None)
    registered = earlier.labels.get(DECISION_LABEL)
    if registered is not None and (registered == _outcome(True)) != verdict.promoted:
        verdict = Verdict(registered == _outcome(True),
                          f"{verdict.reason}; the registry holds the earlier attempt's outcome ({registered}), "
                          "which stands", verdict.champion_status, verdict.comparison, verdict.tolerance)
    decision = decide(earlier.version, verdict, champion_version)
    versioned = f"{parent.resource_name}@{earlier.version}"
    _import_evaluation(parent.api_client, versioned, candidate, judge.challenger_logloss, decision)
    return decision


def _outcome(promoted: bool) -> str:
    return "promoted" if promoted else "kept"


def _upload(config: PromoteStepConfig, candidate: Candidate, parent: aiplatform.Model | None, verdict: Verdict,
            labels: dict[str, str]) -> aiplatform.Model:
    from google.cloud import aiplatform

    vertex = config.vertex
    assert vertex is not None
    return aiplatform.Model.upload(
        display_name=model_display_name(config),
        model_id=None if parent else vertex.model_registry.resolved_model_id(config.name),
        artifact_uri=candidate.model_uri,
        serving_container_image_uri=vertex.model_registry.serving_image,
        parent_model=parent.resource_name if parent else None,
        is_default_version=verdict.promoted,
        version_description=f"{candidate.target} run {candidate.run_index + 1}; {verdict.reason}"[:2048],
        labels=labels,
        encryption_spec_key_name=vertex.encryption_spec_key_name,
    )


def _import_evaluation(client: Any, versioned_name: str, candidate: Candidate, challenger_logloss: float,
                       decision: PromotionDecision) -> None:
    """The version's evaluation: the challenger's log-loss on the eval examples (the decision record's figure,
    whether or not a champion was scored), its AUC, and the decision record as metadata."""
    metrics = {"logLoss": challenger_logloss}
    if candidate.auc is not None:
        metrics["auRoc"] = candidate.auc
    client.import_model_evaluation(
        parent=versioned_name,
        model_evaluation={
            "display_name": f"{candidate.pipeline}-{candidate.target}-run{candidate.run_index + 1}",
            "metrics_schema_uri": CLASSIFICATION_METRICS_SCHEMA,
            "metrics": metrics,
            "metadata": {DECISION_METADATA: decision.model_dump(mode="json")},
        },
    )
