"""Submit the compiled DAG as a Vertex `PipelineJob` and follow it until it ends.

The job id is readable and deterministic: `<pipeline name>-<config hash>-<UTC time to the second>`,
so the same config submitted at the same second is the same job (a retried create that already
went through is recognised, not duplicated). Labels carry the package version, the git revision
and the config hash, so every run on Vertex can be traced back to code and config, and on a submitted
run the pipeline (`adrank-kind`) and the day it reads (`adrank-day`), by which a second submit of that
day is found (`runs_of_day`).

A job, once created, is never hidden behind an error: whatever fails after Vertex has it (adding it to the
Experiment, reading it back) becomes a warning naming the job and its console link, and the submit succeeds
(`Submission.warnings`).
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Callable, Literal

from configs import AdrankConfig, config_hash
from ops.errors import VertexApiError
from ops.vertex import api_calls
from ops.vertex.api_calls import with_backoff
from ops.vertex.session import VertexSession, console_url, require_service_account, vertex_section

CacheMode = Literal["on", "off", "default"]
FINAL_STATES = {"PIPELINE_STATE_SUCCEEDED", "PIPELINE_STATE_FAILED", "PIPELINE_STATE_CANCELLED"}
MAX_JOB_ID = 128
# The label every run of a config carries, submitted or started by a schedule: how `runs list` finds them.
PIPELINE_LABEL = "adrank-pipeline"
KIND_LABEL = "adrank-kind"  # benchmark | retraining
DAY_LABEL = "adrank-day"  # the last day a submitted run reads, 20260303 (components.lineage.run_day)
# A run of a day in these states makes a second submit of that day a second paid run of it.
LIVE_OR_DONE = {"PIPELINE_STATE_QUEUED", "PIPELINE_STATE_PENDING", "PIPELINE_STATE_RUNNING",
                "PIPELINE_STATE_SUCCEEDED", "PIPELINE_STATE_CANCELLING", "PIPELINE_STATE_PAUSED"}


def label_value(text: str) -> str:
    """A valid GCP label value: lowercase letters, digits, '_' and '-', at most 63 characters."""
    cleaned = "".join(c if c.isalnum() or c in "_-" else "-" for c in text.lower())
    return cleaned[:63]


def package_version() -> str:
    try:
        return metadata.version("adrank")
    except metadata.PackageNotFoundError:
        return "unknown"


def git_revision(cwd: Path | None = None) -> str:
    """The short commit of the checkout (with '-dirty' when it has uncommitted changes), or 'unknown'."""
    try:
        revision = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True, text=True,
            timeout=10, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return revision + ("-dirty" if dirty else "")


def job_labels(config: AdrankConfig, revision: str | None = None, kind: str | None = None,
               day: str | None = None) -> dict[str, str]:
    """The labels of a pipeline job: `vertex.labels` and adrank's own; `kind` (the pipeline) and `day` (the last day
    the run reads, `20260303`) when known (a schedule's template has no day: each run reads its own)."""
    vertex = vertex_section(config)
    labels = {
        **vertex.labels,
        "adrank-version": label_value(package_version()),
        "adrank-git": label_value(revision if revision is not None else git_revision()),
        "adrank-config": config_hash(config),
        PIPELINE_LABEL: pipeline_label_value(config),
    }
    if kind:
        labels[KIND_LABEL] = kind
    if day:
        labels[DAY_LABEL] = day
    return labels


def pipeline_label_value(config: AdrankConfig) -> str:
    """The `adrank-pipeline` label value of the config's runs (the config name is a valid label value)."""
    return label_value(config.name)


def job_id(config: AdrankConfig, now: dt.datetime) -> str:
    stamp = now.astimezone(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    suffix = f"-{config_hash(config)[:8]}-{stamp}"
    return config.name[: MAX_JOB_ID - len(suffix)] + suffix


def enable_caching(mode: CacheMode) -> bool | None:
    """`on`/`off` force caching for every task; `default` keeps each task's own setting from the spec."""
    return {"on": True, "off": False, "default": None}[mode]


@dataclass
class Submission:
    job_id: str
    resource_name: str
    console_url: str
    labels: dict[str, str]
    experiment: str | None
    warnings: list[str] = field(default_factory=list)  # what went wrong beside the run, one line each


def build_pipeline_job(
    config: AdrankConfig,
    template_path: Path,
    job_id: str | None,
    labels: dict[str, str],
    cache: CacheMode = "default",
    parameters: dict[str, object] | None = None,
):
    """The SDK's PipelineJob for the compiled template; `job_id` None for a schedule's template (Vertex names
    each run it starts)."""
    from google.cloud import aiplatform

    vertex = vertex_section(config)
    return aiplatform.PipelineJob(
        display_name=config.name,
        template_path=str(template_path),
        job_id=job_id,
        pipeline_root=vertex.pipeline_root,
        parameter_values=parameters or {},
        enable_caching=enable_caching(cache),
        labels=labels,
        encryption_spec_key_name=vertex.encryption_spec_key_name,
        project=vertex.project,
        location=vertex.region,
    )


def runs_of_day(config: AdrankConfig, kind: str, day: str) -> list[tuple[str, str]]:
    """(job id, state) of the submitted runs of `config`'s `kind` pipeline that read `day` (`20260303`) and are
    queued, running or succeeded: what a second submit of that day would pay for again."""
    from google.cloud import aiplatform

    wanted = (f'labels.{PIPELINE_LABEL}="{pipeline_label_value(config)}" AND labels.{KIND_LABEL}="{kind}" '
              f'AND labels.{DAY_LABEL}="{day}"')
    found = with_backoff(lambda: aiplatform.PipelineJob.list(filter=wanted), "list the runs of the day")
    runs = [(job.resource_name.rsplit("/", 1)[-1], job.gca_resource.state.name) for job in found]
    return sorted(run for run in runs if run[1] in LIVE_OR_DONE)


def submit_pipeline(
    config: AdrankConfig,
    template_path: Path,
    session: VertexSession,
    *,
    experiment: str | None = None,
    cache: CacheMode = "default",
    parameters: dict[str, object] | None = None,
    now: dt.datetime | None = None,
    revision: str | None = None,
    kind: str | None = None,
    day: str | None = None,
):
    """Create the PipelineJob on Vertex; returns `(job, Submission)`. Needs `vertex.service_account`. Anything that
    fails once Vertex has the job is a line of `Submission.warnings`, never an exception."""
    from google.api_core import exceptions
    from google.cloud import aiplatform

    service_account = require_service_account(config)
    vertex = vertex_section(config)
    experiment = experiment or vertex.experiment
    labels = job_labels(config, revision, kind, day)
    identifier = job_id(config, now or dt.datetime.now(dt.timezone.utc))
    job = build_pipeline_job(config, template_path, identifier, labels, cache, parameters)

    def create():
        try:
            job.submit(service_account=service_account, network=vertex.network, experiment=experiment)
            return job
        except exceptions.Conflict as error:
            # ALREADY_EXISTS (AlreadyExists over gRPC; a plain 409 Conflict over REST): an earlier attempt went
            # through before the transient error, and the job id is deterministic
            if api_calls.status_name(error) != "ALREADY_EXISTS":
                raise
            return aiplatform.PipelineJob.get(resource_name=f"{session.location_path}/pipelineJobs/{identifier}")

    warnings = []
    submitted = job
    link = console_url(session, identifier)
    try:
        submitted = with_backoff(create, f"create pipeline job {identifier}")
    except Exception as error:  # whatever failed: a job Vertex already has is said, never hidden (re-raised if none)
        if not _created(job, f"{session.location_path}/pipelineJobs/{identifier}"):
            if isinstance(error, VertexApiError):
                raise
            cause = error.__cause__ if isinstance(error.__cause__, api_calls.API_FAILURES) else None
            detail = api_calls.describe_failure("", cause).lstrip(": ") if cause is not None else ""
            raise VertexApiError(f"create pipeline job {identifier}: not created: {type(error).__name__}: "
                                 f"{' '.join(str(error).split())}" + (f" ({detail})" if detail else "")) from None
        # The SDK adds the run to the experiment after creating it (and wraps what fails there in a RuntimeError);
        # the run exists and goes on, only what came after the create was not done.
        api_cause = error.__cause__ if isinstance(error.__cause__, api_calls.API_FAILURES) else None
        what = (api_calls.describe_failure(f"add {identifier} to the experiment", api_cause) if api_cause is not None
                else _error_chain(error))
        not_done = f"not added to experiment '{experiment}'" if experiment else "the SDK's steps after the create"
        warnings.append(f"{identifier} was created and runs ({link}), but {not_done}: {what}")
        experiment = None
    return submitted, Submission(identifier, submitted.resource_name, link, labels, experiment, warnings)


def _error_chain(error: BaseException) -> str:
    """`RuntimeError: … (RuntimeError: …)`: an error and what caused it, on one line."""
    text = f"{type(error).__name__}: {' '.join(str(error).split())}"
    cause = error.__cause__ or error.__context__
    return text + (f" ({_error_chain(cause)})" if cause is not None else "")


def _created(job, resource_name: str) -> bool:
    """Whether Vertex has the job: the SDK object holds its created resource, or reading it back finds it."""
    from google.api_core import exceptions
    from google.cloud import aiplatform

    try:
        if job.resource_name:
            return True
    except (RuntimeError, AttributeError):  # the SDK's "resource has not been created" (no resource yet)
        pass
    try:
        aiplatform.PipelineJob.get(resource_name=resource_name)
    except exceptions.NotFound:
        return False
    except api_calls.API_FAILURES:
        return False  # cannot tell: the original error stands
    return True


def pause(seconds: float) -> None:
    """The wait between two polls of a running job (tests replace it)."""
    time.sleep(seconds)


@dataclass
class WaitResult:
    state: str
    failed_tasks: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def succeeded(self) -> bool:
        return self.state == "PIPELINE_STATE_SUCCEEDED"


def task_states(resource) -> dict[str, str]:
    """Task name → state name, from a PipelineJob resource's job detail (the root DAG task excluded)."""
    states = {}
    for task in resource.job_detail.task_details:
        if task.parent_task_id == 0 and task.task_name == resource.display_name:
            continue
        states[task.task_name] = type(task).State(task.state).name
    return states


def wait_for_pipeline(
    job,
    *,
    poll_seconds: float = 30.0,
    timeout_seconds: float | None = None,
    out=None,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> WaitResult:
    """Poll the job, print every change of the job's or a task's state, return the final state."""
    sleep = sleep or pause
    out = out or sys.stdout
    name = job.resource_name
    seen: dict[str, str] = {}
    job_state = ""
    started = clock()
    while True:
        resource = with_backoff(lambda: job.api_client.get_pipeline_job(name=name), f"get {name}")
        state = resource.state.name
        if state != job_state:
            print(f"pipeline {name.rsplit('/', 1)[-1]}: {state}", file=out)
            job_state = state
        for task, task_state in task_states(resource).items():
            if seen.get(task) != task_state:
                print(f"  task {task}: {task_state}", file=out)
                seen[task] = task_state
        if state in FINAL_STATES:
            failed = sorted(t for t, s in seen.items() if s == "FAILED")
            return WaitResult(state, failed, resource.error.message if resource.error else "")
        if timeout_seconds is not None and clock() - started > timeout_seconds:
            return WaitResult(state, [], f"still {state} after {timeout_seconds:.0f}s")
        sleep(poll_seconds)
