"""Put the runs a schedule started into the config's Vertex Experiment, so the Experiments page charts every
day's figures (the promotion step's `promotion_metrics`: challenger and champion log-loss on the same eval
examples, their difference and its 95% CI) and not only the runs submitted by hand.

Vertex creates scheduled runs server-side from the schedule's CreatePipelineJobRequest, and the v1
`PipelineJob` has no experiment field: the SDK joins a run to an experiment client-side, after `submit`
(asked for upstream: googleapis/python-aiplatform#2340). A pipeline run is in an experiment when its
`system.PipelineRun` Metadata context is a child of the experiment's context, which is what
`PipelineJob.submit(experiment=...)` does too. Adding is idempotent: AddContextChildren skips children
already added (documented in the aiplatform_v1 reference), so running this every day is safe.
"""

from __future__ import annotations

from dataclasses import dataclass

from configs import AdrankConfig
from ops.vertex.api_calls import with_backoff
from ops.vertex.runs import find_jobs, read_runs
from ops.vertex.schedules import config_schedules
from ops.vertex.session import VertexSession, VertexSetupError, vertex_section

METADATA_STORE = "default"


@dataclass
class ExperimentSync:
    experiment: str
    added: list[str]  # job ids whose run context was sent to the experiment
    without_context: list[str]  # job ids Vertex has not given a run context yet (just created); next time
    console_url: str


def add_scheduled_runs(config: AdrankConfig, session: VertexSession, experiment: str | None = None) -> ExperimentSync:
    """Add every run of the config's schedules to `experiment` (default `vertex.experiment`)."""
    from google.cloud import aiplatform

    experiment = experiment or vertex_section(config).experiment
    if not experiment:
        raise VertexSetupError("no experiment to add runs to: set vertex.experiment or pass --experiment")
    schedules = config_schedules(config, session)
    runs = read_runs(find_jobs(config, schedules, scheduled_only=True))
    contexts = {run.name.rsplit("/", 1)[-1]: run.job_detail.pipeline_run_context.name for run in runs}
    added = sorted(job for job, context in contexts.items() if context)
    if added:
        with_backoff(lambda: aiplatform.Experiment.get_or_create(experiment), f"get or create experiment {experiment}")
        name = f"{session.location_path}/metadataStores/{METADATA_STORE}/contexts/{experiment}"
        context = with_backoff(lambda: aiplatform.Context(resource_name=name), f"get {name}")
        children = [contexts[job] for job in added]
        with_backoff(lambda: context.api_client.add_context_children(context=name, child_contexts=children),
                     f"add {len(children)} run(s) to experiment {experiment}")
    return ExperimentSync(experiment, added, sorted(job for job, context in contexts.items() if not context),
                          experiment_console_url(session, experiment))


def experiment_console_url(session: VertexSession, experiment: str) -> str:
    return (f"https://console.cloud.google.com/vertex-ai/experiments/locations/{session.region}/experiments/"
            f"{experiment}?project={session.project}")
