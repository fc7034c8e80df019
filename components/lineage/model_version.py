"""The model version a run registered, as a `google.VertexModel` artifact of the run, with its aliases and labels.

The promotion step uploads the challenger from inside Python (`components.registry`), so by itself the run's
lineage ends at a `gs://` path. The **model version** step after it reads the decision record and

- writes its `google.VertexModel` output the way GCPC's own components do (metadata `resourceName`: the
  versioned model `projects/P/locations/L/models/ID@N`; URI the v1 REST URL of it), which is what links the
  Model Registry version into the run's lineage graph: logs → examples → promotion → model version;
- labels the version with the pipeline job that made it and the decision (`adrank-job`, `adrank-decision`:
  `promoted` or `kept`), through UpdateModel on the version;
- when it was promoted, moves the `champion` alias to it and adds a dated one (`champion-YYYYMMDD`, the run's
  create date in UTC), through MergeVersionAliases (an alias names one version of a model: `champion` is removed
  from the previous champion first).

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
from typing import Any

from components.progress import progress

log = logging.getLogger(__name__)

CHAMPION_ALIAS = "champion"
JOB_NAME = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/pipelineJobs/(?P<job>[^/]+)$")
LABEL_VALUE_MAX = 63


def dated_alias(create_time_utc: str) -> str:
    """`champion-20260304` for a run created 2026-03-04T03:00:00Z (an alias: `[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]`)."""
    day = re.match(r"^(\d{4})-(\d{2})-(\d{2})", create_time_utc)
    if day is None:
        raise ValueError(f"'{create_time_utc}' is not an RFC 3339 time")
    return f"{CHAMPION_ALIAS}-{''.join(day.groups())}"


def version_labels(job_id: str, promoted: bool) -> dict[str, str]:
    return {"adrank-job": job_id[:LABEL_VALUE_MAX].rstrip("-"), "adrank-decision": "promoted" if promoted else "kept"}


def champion_holder(model_resource_name: str) -> str | None:
    """The version id that has the `champion` alias, None when no version has it."""
    from google.api_core import exceptions
    from google.cloud import aiplatform

    try:
        return aiplatform.Model(f"{model_resource_name}@{CHAMPION_ALIAS}").version_id
    except exceptions.NotFound:
        return None


def record_model_version(decision_path: str, pipeline_job_name: str, create_time_utc: str, artifact: Any,
                         model_resource_name: str | None = None) -> str | None:
    """Label and alias the version the decision at `decision_path` registered and describe it in `artifact` (a KFP
    `google.VertexModel` output: `.uri`, `.metadata`). Returns the versioned resource name, None when the run
    registered nothing. `model_resource_name`: the registry model (default: found by the decision's model name)."""
    from google.cloud import aiplatform

    decision = json.loads(open(decision_path).read())
    job = JOB_NAME.match(pipeline_job_name)
    if job is None:
        raise ValueError(f"'{pipeline_job_name}' is not projects/P/locations/L/pipelineJobs/ID")
    artifact.metadata["decision"] = "promoted" if decision["promoted"] else "kept"
    if not decision.get("version"):
        artifact.metadata["reason"] = f"no version registered: {decision['reason']}"
        log.info(f"no model version to record: {decision['reason']}", extra=progress())
        return None
    aiplatform.init(project=job["project"], location=job["location"])
    if model_resource_name is None:
        found = aiplatform.Model.list(filter=f'display_name="{decision["model"]}"')
        if not found:
            raise LookupError(f"the registry has no model named '{decision['model']}' (the decision says version "
                              f"{decision['version']} was registered)")
        model_resource_name = found[0].resource_name
    version = decision["version"]
    versioned = f"{model_resource_name}@{version}"
    model = aiplatform.Model(versioned)
    labels = {**dict(model.labels or {}), **version_labels(job["job"], decision["promoted"])}
    model.api_client.update_model(model={"name": versioned, "labels": labels}, update_mask={"paths": ["labels"]})
    if decision["promoted"]:
        registry = aiplatform.models.ModelRegistry(model_resource_name)
        holder = champion_holder(model_resource_name)
        if holder and holder != version:
            registry.remove_version_aliases([CHAMPION_ALIAS], holder)
        registry.add_version_aliases([CHAMPION_ALIAS, dated_alias(create_time_utc)], version)
    artifact.uri = f"https://{job['location']}-aiplatform.googleapis.com/v1/{versioned}"
    artifact.metadata["resourceName"] = versioned
    log.info(f"model version {versioned}: labels {labels}"
             + (f", aliases {CHAMPION_ALIAS}, {dated_alias(create_time_utc)}" if decision["promoted"] else ""),
             extra=progress(model_version=versioned, promoted=bool(decision["promoted"])))
    return versioned
