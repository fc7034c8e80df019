"""The model version a run registered, as a `google.VertexModel` artifact of the run, with its aliases and labels.

The promotion step uploads the challenger from inside Python (`components.registry`), so by itself the run's
lineage ends at a `gs://` path. The **model version** step after it reads the decision record and

- writes its `google.VertexModel` output the way GCPC's own components do (metadata `resourceName`: the
  versioned model `projects/P/locations/L/models/ID@N`; URI the v1 REST URL of it), which is what links the
  Model Registry version into the run's lineage graph: logs → examples → promotion → model version;
- labels the version with the pipeline job that decided it and the decision (`adrank-job`, `adrank-decision`:
  `promoted` or `kept`), through UpdateModel on the version;
- keeps the aliases true, through MergeVersionAliases (an alias names one version of a model, so each is removed
  from its holder before it is added): `champion` is on the default version, and a promoted version holds the
  dated alias of the day its run read (`champion-20260303`, `components.lineage.run_day`).

Every operation is idempotent: a second run of a day (whose decision was reused) or a retry of this step finds
the labels and aliases in place, or puts them there. A day's decision taken earlier never moves `champion` back
to its version once a later day has a newer default. If the registry refuses an operation, the step fails with one
line saying what the registry holds (which version is the default, who holds `champion` and the dated alias), so
the run never ends FAILED after its promotion without saying what state it left.

The model is the decision's `model_resource_name`, the name adrank set (never a display-name lookup).

Why this and not GCPC's `ModelUploadOp` or a `dsl.importer`: the upload is the promotion rule's own act (it
decides whether the version becomes the default, in the same call), and the version only exists once the step has
run, so an importer compiled into the spec has no name to import; a step reading the decision record knows it.
A run that registered nothing (e.g. an eval split with one class) still writes the artifact, without a
`resourceName`, saying why in its metadata.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from components.lineage.run_day import day_stamp
from components.progress import progress

log = logging.getLogger(__name__)

CHAMPION_ALIAS = "champion"
JOB_NAME = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/pipelineJobs/(?P<job>[^/]+)$")
MODEL_NAME = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/models/(?P<model>[^/@]+)$")
LABEL_VALUE_MAX = 63


class RegistryStateError(RuntimeError):
    """The registry refused an operation of this step; the message says what it holds now."""


def dated_alias(day: str) -> str:
    """`champion-20260303` for the day 2026-03-03 (an alias: `[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]`)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
        raise ValueError(f"'{day}' is not a day (YYYY-MM-DD)")
    return f"{CHAMPION_ALIAS}-{day_stamp(day)}"


def version_labels(job_id: str, promoted: bool) -> dict[str, str]:
    return {"adrank-job": job_id[:LABEL_VALUE_MAX].rstrip("-"), "adrank-decision": "promoted" if promoted else "kept"}


def alias_holder(model_resource_name: str, alias: str) -> str | None:
    """The version id that has `alias`, None when no version has it."""
    from google.api_core import exceptions
    from google.cloud import aiplatform

    try:
        return aiplatform.Model(f"{model_resource_name}@{alias}").version_id
    except exceptions.NotFound:
        return None


def registry_state(model_resource_name: str, version: str, aliases: list[str]) -> str:
    """What the registry holds for `version` and `aliases`, in words, read back now (or why it cannot be read)."""
    from google.api_core import exceptions
    from google.cloud import aiplatform

    try:
        default = aiplatform.Model(model_resource_name).version_id
        holders = {alias: alias_holder(model_resource_name, alias) for alias in aliases}
    except (exceptions.GoogleAPICallError, exceptions.RetryError) as error:
        return f"the registry could not be read back ({type(error).__name__}: {_one_line(str(error))})"
    said = [f"version {version} is registered and {'is' if default == version else 'is not'} the default "
            f"(the default is version {default})"]
    said += [f"{alias} is on {'version ' + holder if holder else 'no version'}" for alias, holder in holders.items()]
    return "; ".join(said)


def record_model_version(decision_path: str, pipeline_job_name: str, artifact: Any) -> str | None:
    """Label and alias the version the decision at `decision_path` registered and describe it in `artifact` (a KFP
    `google.VertexModel` output: `.uri`, `.metadata`). Returns the versioned resource name, None when the run
    registered nothing."""
    from google.api_core import exceptions
    from google.cloud import aiplatform

    decision = json.loads(Path(decision_path).read_text())
    job = JOB_NAME.match(pipeline_job_name)
    if job is None:
        raise ValueError(f"'{pipeline_job_name}' is not projects/P/locations/L/pipelineJobs/ID")
    artifact.metadata["decision"] = "promoted" if decision["promoted"] else "kept"
    if not decision.get("version"):
        artifact.metadata["reason"] = f"no version registered: {decision['reason']}"
        log.info(f"no model version to record: {decision['reason']}", extra=progress())
        return None
    model_name = decision.get("model_resource_name") or ""
    model = MODEL_NAME.match(model_name)
    if model is None:
        raise ValueError(f"{decision_path}: the decision names no registry model (model_resource_name "
                         f"{model_name!r}); it was written by an older promotion step")
    aiplatform.init(project=model["project"], location=model["location"])
    version = str(decision["version"])
    versioned = f"{model_name}@{version}"
    artifact.uri = f"https://{model['location']}-aiplatform.googleapis.com/v1/{versioned}"
    artifact.metadata["resourceName"] = versioned
    if decision.get("day"):
        artifact.metadata["day"] = decision["day"]
    dated = dated_alias(decision["day"]) if decision["promoted"] and decision.get("day") else None
    step = "reading the version"
    try:
        registered = aiplatform.Model(versioned)
        labels = dict(registered.labels or {})
        # the job that decided the day: an earlier run's, when this run reused its decision
        decider = labels.get("adrank-job") if decision.get("reused") else None
        decider = decider or decision.get("decided_by") or job["job"]
        wanted = {**labels, **version_labels(decider, decision["promoted"])}
        if wanted != labels:
            step = "labelling the version"
            registered.api_client.update_model(model={"name": versioned, "labels": wanted},
                                               update_mask={"paths": ["labels"]})
        registry = aiplatform.models.ModelRegistry(model_name)
        moved = []
        step = "reading the default version"
        if aiplatform.Model(model_name).version_id == version:  # `champion` follows the default version
            step = f"moving {CHAMPION_ALIAS}"
            moved += _move_alias(registry, model_name, CHAMPION_ALIAS, version)
        if dated is not None:
            step = f"moving {dated}"
            moved += _move_alias(registry, model_name, dated, version)
    except (exceptions.GoogleAPICallError, exceptions.RetryError) as error:
        state = registry_state(model_name, version, [CHAMPION_ALIAS] + ([dated] if dated else []))
        message = (f"model version {versioned} (day {decision.get('day') or '—'}, "
                   f"{'promoted' if decision['promoted'] else 'kept'}): {step} failed ({type(error).__name__}: "
                   f"{_one_line(str(error))}); the registry holds: {state}")
        log.error(message)
        raise RegistryStateError(message) from None
    log.info(f"model version {versioned}: labels {wanted}" + (f", aliases {', '.join(moved)}" if moved else ""),
             extra=progress(model_version=versioned, promoted=bool(decision["promoted"])))
    return versioned


def _move_alias(registry: Any, model_name: str, alias: str, version: str) -> list[str]:
    """Put `alias` on `version`, removing it from the version holding it first; [] when it is already there."""
    holder = alias_holder(model_name, alias)
    if holder == version:
        return []
    if holder is not None:
        registry.remove_version_aliases([alias], holder)
    registry.add_version_aliases([alias], version)
    return [alias if holder is None else f"{alias} (from version {holder})"]


def _one_line(text: str) -> str:
    return " ".join(text.split())
