"""Review pipeline runs on Vertex AI: state, task states, and the values of each run's Metrics artifacts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from configs import AdrankConfig
from ops.vertex.jobs import task_states
from ops.vertex.retry import with_backoff
from ops.vertex.session import VertexSession, console_url

STATE_PREFIX = "PIPELINE_STATE_"
JOB_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,127}$")
JOB_NAME = re.compile(r"^projects/[^/]+/locations/[^/]+/pipelineJobs/[a-z0-9][a-z0-9-]{0,127}$")


@dataclass
class VertexRun:
    job_id: str
    display_name: str
    state: str
    create_time: str
    tasks: dict[str, str]
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)  # task → metric → value
    labels: dict[str, str] = field(default_factory=dict)
    error: str = ""

    @property
    def failed_tasks(self) -> list[str]:
        return sorted(t for t, s in self.tasks.items() if s == "FAILED")


def run_from_resource(resource) -> VertexRun:
    metrics: dict[str, dict[str, float]] = {}
    for task in resource.job_detail.task_details:
        for output in task.outputs.values():
            for artifact in output.artifacts:
                if artifact.schema_title != "system.Metrics":
                    continue
                values = {k: v for k, v in dict(artifact.metadata).items() if isinstance(v, (int, float))}
                if values:
                    metrics.setdefault(task.task_name, {}).update(values)
    return VertexRun(
        job_id=resource.name.rsplit("/", 1)[-1],
        display_name=resource.display_name,
        state=resource.state.name.removeprefix(STATE_PREFIX),
        create_time=resource.create_time.isoformat() if "create_time" in resource else "",
        tasks=task_states(resource),
        metrics=metrics,
        labels=dict(resource.labels),
        error=resource.error.message if "error" in resource else "",
    )


def list_runs(config: AdrankConfig, session: VertexSession, limit: int = 20,
              sleep: Callable[[float], None] | None = None) -> list[VertexRun]:
    """The config's pipeline runs (by display name), newest first, with their task details."""
    from google.cloud import aiplatform

    jobs = with_backoff(
        lambda: aiplatform.PipelineJob.list(filter=f'display_name="{config.name}"', order_by="create_time desc"),
        "list pipeline jobs", sleep=sleep,
    )
    runs = []
    for job in jobs[:limit]:
        # list responses may omit the job detail; read each run in full
        resource = with_backoff(lambda: job.api_client.get_pipeline_job(name=job.resource_name),
                                f"get {job.resource_name}", sleep=sleep)
        runs.append(run_from_resource(resource))
    return runs


def get_run(job_id: str, session: VertexSession, sleep: Callable[[float], None] | None = None) -> VertexRun:
    from google.cloud import aiplatform

    from ops.errors import VertexApiError

    if not (JOB_ID.match(job_id) or JOB_NAME.match(job_id)):
        raise VertexApiError(f"{job_id!r} is not a pipeline job id (lowercase letters, digits and '-', at most 128) "
                             "or projects/P/locations/L/pipelineJobs/ID; see `adrank runs list --backend vertex`")
    name = job_id if job_id.startswith("projects/") else f"{session.location_path}/pipelineJobs/{job_id}"
    job = with_backoff(lambda: aiplatform.PipelineJob.get(name), f"get {name}", sleep=sleep)
    return run_from_resource(job.gca_resource)


def format_runs_table(runs: list[VertexRun]) -> str:
    if not runs:
        return "no runs on Vertex AI for this pipeline"
    metric_names = sorted({m for run in runs for values in run.metrics.values() for m in values
                           if m.endswith(("_logloss", "_auc"))})
    header = ["JOB ID", "STATE", "CREATED", "TASKS"] + [f"best {m}" for m in metric_names]
    rows = [header]
    for run in runs:
        counts: dict[str, int] = {}
        for state in run.tasks.values():
            counts[state] = counts.get(state, 0) + 1
        summary = " ".join(f"{s.lower()}={n}" for s, n in sorted(counts.items()))
        cells = [run.job_id, run.state, run.create_time[:19], summary]
        for metric in metric_names:
            values = [v[metric] for v in run.metrics.values() if metric in v]
            best = (min(values) if metric.endswith("logloss") else max(values)) if values else None
            cells.append("" if best is None else f"{best:.4f}")
        rows.append(cells)
    return _align(rows)


def format_run(run: VertexRun, session: VertexSession) -> str:
    lines = [f"run {run.job_id} ({run.display_name}): {run.state}", f"created: {run.create_time}",
             f"console: {console_url(session, run.job_id)}"]
    if run.labels:
        lines.append("labels: " + ", ".join(f"{k}={v}" for k, v in sorted(run.labels.items())))
    if run.error:
        lines.append(f"error: {run.error}")
    if run.failed_tasks:
        lines.append("failed tasks: " + ", ".join(run.failed_tasks))
    lines += ["", "tasks:"]
    lines += _align([["TASK", "STATE"]] + [[t, s] for t, s in run.tasks.items()], indent="  ").splitlines()
    if run.metrics:
        names = sorted({m for values in run.metrics.values() for m in values})
        rows = [["TASK"] + names] + [[task] + [_number(values.get(m)) for m in names]
                                      for task, values in run.metrics.items()]
        lines += ["", "metrics:"] + _align(rows, indent="  ").splitlines()
    return "\n".join(lines)


def _number(value) -> str:
    if value is None:
        return ""
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _align(rows: list[list[str]], indent: str = "") -> str:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(indent + "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)
