"""Put the running pipeline run into its Vertex Experiment, from inside the run.

Vertex starts a schedule's runs server-side from the schedule's CreatePipelineJobRequest, and the v1 `PipelineJob`
has no experiment field: the SDK joins a run to an experiment client-side, after `submit` (googleapis/python-
aiplatform#2340). So the Vertex DAG starts with a step that does it for its own run, submitted or scheduled: the
run's `system.PipelineRun` Metadata context becomes a child of the experiment's context, which is what
`PipelineJob.submit(experiment=...)` does. AddContextChildren skips a child already added (documented in the
aiplatform_v1 reference), so a submitted run that the SDK already added is left as it is.
"""

from __future__ import annotations

import logging
import re

from components.progress import progress

log = logging.getLogger(__name__)

METADATA_STORE = "default"
JOB_NAME = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/pipelineJobs/[^/]+$")


class RunContextMissing(RuntimeError):
    """Vertex has not given the run a Metadata context (it does when the run starts)."""


def join_experiment(pipeline_job_name: str, experiment: str, api_endpoint: str | None = None) -> str:
    """Add pipeline job `pipeline_job_name` (projects/P/locations/L/pipelineJobs/ID) to `experiment`, creating the
    experiment when it does not exist; returns the run context added. `api_endpoint`: another REST server (tests)."""
    from google.cloud import aiplatform

    match = JOB_NAME.match(pipeline_job_name)
    if match is None:
        raise ValueError(f"'{pipeline_job_name}' is not projects/P/locations/L/pipelineJobs/ID")
    init: dict = {"project": match["project"], "location": match["location"]}
    if api_endpoint:
        from google.auth.credentials import AnonymousCredentials

        init.update(api_endpoint=api_endpoint, api_transport="rest", credentials=AnonymousCredentials())
    aiplatform.init(**init)
    job = aiplatform.PipelineJob.get(resource_name=pipeline_job_name)
    run_context = job.gca_resource.job_detail.pipeline_run_context.name
    if not run_context:
        raise RunContextMissing(f"{pipeline_job_name} has no pipeline run context yet")
    aiplatform.Experiment.get_or_create(experiment)
    experiment_context = (f"projects/{match['project']}/locations/{match['location']}/metadataStores/"
                          f"{METADATA_STORE}/contexts/{experiment}")
    context = aiplatform.Context(resource_name=experiment_context)
    context.api_client.add_context_children(context=experiment_context, child_contexts=[run_context])
    log.info(f"run {pipeline_job_name.rsplit('/', 1)[-1]} is in experiment {experiment}",
             extra=progress(experiment=experiment))
    return run_context
