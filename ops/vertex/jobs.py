"""Submit the compiled DAG as a Vertex `PipelineJob` and follow it until it ends.

The job id is readable and deterministic: `<pipeline name>-<config hash>-<UTC time to the second>`,
so the same config submitted at the same second is the same job (a retried create that already
went through is recognised, not duplicated). Labels carry the package version, the git revision
and the config hash, so every run on Vertex can be traced back to code and config.
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
from ops.vertex import retry
from ops.vertex.retry import with_backoff
from ops.vertex.session import VertexSession, require_service_account, vertex_section

CacheMode = Literal["on", "off", "default"]
FINAL_STATES = {"PIPELINE_STATE_SUCCEEDED", "PIPELINE_STATE_FAILED", "PIPELINE_STATE_CANCELLED"}
MAX_JOB_ID = 128
# The label every run of a config carries, submitted or started by a schedule: how `runs list` finds them.
PIPELINE_LABEL = "adrank-pipeline"


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


def job_labels(config: AdrankConfig, revision: str | None = None) -> dict[str, str]:
    vertex = vertex_section(config)
    return {
        **vertex.labels,
        "adrank-version": label_value(package_version()),
        "adrank-git": label_value(revision if revision is not None else git_revision()),
        "adrank-config": config_hash(config),
        PIPELINE_LABEL: pipeline_label_value(config),
    }


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
    sleep: Callable[[float], None] | None = None,
):
    """Create the PipelineJob on Vertex; returns `(job, Submission)`. Needs `vertex.service_account`."""
    from google.api_core import exceptions

    service_account = require_service_account(config)
    vertex = vertex_section(config)
    experiment = experiment or vertex.experiment
    labels = job_labels(config, revision)
    identifier = job_id(config, now or dt.datetime.now(dt.timezone.utc))
    job = build_pipeline_job(config, template_path, identifier, labels, cache, parameters)

    def create():
        try:
            job.submit(service_account=service_account, network=vertex.network, experiment=experiment)
        except exceptions.AlreadyExists:
            # an earlier attempt went through before the transient error: the job id is deterministic
            job._gca_resource = job.api_client.get_pipeline_job(name=f"{session.location_path}/pipelineJobs/{identifier}")

    warnings = []
    try:
        with_backoff(create, f"create pipeline job {identifier}", sleep=sleep)
    except RuntimeError as error:
        # The SDK adds the run to the experiment after creating it and wraps an API failure there in a
        # RuntimeError: the run exists and goes on, only the experiment lacks it.
        if not (experiment and isinstance(error.__cause__, retry.API_FAILURES)):
            raise
        warnings.append(f"{identifier} runs, but was not added to experiment '{experiment}': "
                        + retry.describe_failure(f"add {identifier} to the experiment", error.__cause__))
        experiment = None
    from ops.vertex.session import console_url

    return job, Submission(identifier, job.resource_name, console_url(session, identifier), labels, experiment,
                           warnings)


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
    sleep = sleep or retry.pause
    out = out or sys.stdout
    name = job.resource_name
    seen: dict[str, str] = {}
    job_state = ""
    started = clock()
    while True:
        resource = with_backoff(lambda: job.api_client.get_pipeline_job(name=name), f"get {name}", sleep=sleep)
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
