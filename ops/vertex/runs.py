"""Review pipeline runs on Vertex AI: state, task states, the values of each run's Metrics artifacts, and which
schedule started each run.

A config's runs are found by what Vertex keeps on them, never by display name: Vertex names the runs a
schedule starts itself, so `runs list` asks for the runs labelled `adrank-pipeline=<name>` (submitted runs
and scheduled ones both carry it: `submit` sets it on the PipelineJob, `schedule create` on the schedule's
CreatePipelineJobRequest) and, per schedule of the config, the runs whose `schedule_name` is that schedule
(the filter the SDK's own `PipelineJobSchedule.list_jobs` uses; it also finds runs of a schedule created
before the label existed).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass, field
from typing import Any

from components.display_tables import Table, text_table
from components.evaluate.experiment_keys import SEPARATOR, training_figure
from configs import AdrankConfig
from ops.errors import VertexApiError
from ops.vertex.api_calls import with_backoff
from ops.vertex.jobs import PIPELINE_LABEL, pipeline_label_value, task_states
from ops.vertex.schedules import config_schedules
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
    schedule_name: str = ""  # resource name of the schedule that started the run; "" for a submitted run
    schedule: str = ""  # that schedule's display name when known, else its resource id

    @property
    def failed_tasks(self) -> list[str]:
        return sorted(t for t, s in self.tasks.items() if s == "FAILED")


def run_from_resource(resource, schedules: dict[str, str] | None = None) -> VertexRun:
    """The run a PipelineJob resource describes; `schedules` maps schedule resource names to display names."""
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
        schedule_name=resource.schedule_name,
        schedule=(schedules or {}).get(resource.schedule_name, resource.schedule_name.rsplit("/", 1)[-1]),
    )


def list_runs(config: AdrankConfig, session: VertexSession, limit: int = 20) -> list[VertexRun]:
    """The config's pipeline runs, submitted or scheduled, newest first, with their task details."""

    schedules = config_schedules(config, session)
    return [run_from_resource(resource, schedules)
            for resource in read_runs(find_jobs(config, schedules)[:limit])]


def find_jobs(config: AdrankConfig, schedules: dict[str, str], scheduled_only: bool = False) -> list:
    """The PipelineJobs (SDK objects, as listed) of the config, newest first: labelled with its pipeline, or
    started by one of `schedules` (resource names); with `scheduled_only`, only those started by `schedules`."""
    from google.cloud import aiplatform

    filters = [] if scheduled_only else [f'labels.{PIPELINE_LABEL}="{pipeline_label_value(config)}"']
    filters += [f'schedule_name="{name}"' for name in sorted(schedules)]
    jobs: dict[str, Any] = {}  # resource name → the SDK's PipelineJob, as listed
    for list_filter in filters:
        found = with_backoff(
            functools.partial(aiplatform.PipelineJob.list, filter=list_filter, order_by="create_time desc"),
            "list pipeline jobs",
        )
        for job in found:
            jobs.setdefault(job.resource_name, job)
    return sorted(jobs.values(), key=lambda job: (job.gca_resource.create_time, job.resource_name), reverse=True)


def read_runs(jobs: list) -> list:
    """Each listed job's full resource (list responses may omit the job detail: task states, metrics, contexts)."""
    return [with_backoff(functools.partial(job.api_client.get_pipeline_job, name=job.resource_name),
                         f"get {job.resource_name}") for job in jobs]


def get_run(job_id: str, session: VertexSession) -> VertexRun:
    """One run by job id or resource name (its schedule, if any, by resource id: see `name_schedule`)."""
    from google.cloud import aiplatform


    if not (JOB_ID.match(job_id) or JOB_NAME.match(job_id)):
        raise VertexApiError(f"{job_id!r} is not a pipeline job id (lowercase letters, digits and '-', at most 128) "
                             "or projects/P/locations/L/pipelineJobs/ID; see `adrank runs list --backend vertex`")
    name = job_id if job_id.startswith("projects/") else f"{session.location_path}/pipelineJobs/{job_id}"
    job = with_backoff(lambda: aiplatform.PipelineJob.get(name), f"get {name}")
    return run_from_resource(job.gca_resource)


def name_schedule(run: VertexRun, schedules: dict[str, str]) -> VertexRun:
    """`run` with its schedule's display name, when the schedule is one of `schedules` (resource → display)."""
    if run.schedule_name not in schedules:
        return run
    return dataclasses.replace(run, schedule=schedules[run.schedule_name])


# The figures of the promotion step's `promotion_metrics` artifact (components.contracts.promotion_decision: metrics()):
# champion and challenger scored on the same eval examples of the run, and the decision taken on them.
PROMOTION_FIGURES = ("challenger_logloss", "champion_logloss", "difference", "difference_ci95_low",
                     "difference_ci95_high", "promoted")


def promotion_figures(run: VertexRun) -> dict[str, float] | None:
    """The run's promotion figures, from the task whose Metrics carry `challenger_logloss`; None without one."""
    for values in run.metrics.values():
        if "challenger_logloss" in values:
            return {name: values[name] for name in PROMOTION_FIGURES if name in values}
    return None


def training_figures(run: VertexRun) -> dict[str, list[float]]:
    """`<task>_logloss` / `<task>_auc` → the values of the run's training tasks: from the keys training writes
    (`<target>/run<n>/<task>/logloss`, components.evaluate.experiment_keys), or the `<task>_logloss` keys of runs
    trained before keys named their target."""
    found: dict[str, list[float]] = {}
    for values in run.metrics.values():
        for key, value in values.items():
            parsed = training_figure(key)
            if parsed is not None and parsed[2] and parsed[3] in ("logloss", "auc"):
                column = f"{parsed[2]}_{parsed[3]}"
            elif SEPARATOR not in key and key.endswith(("_logloss", "_auc")) and key not in PROMOTION_FIGURES:
                column = key
            else:
                continue
            found.setdefault(column, []).append(value)
    return found


def format_runs_table(runs: list[VertexRun]) -> str:
    """One row per run: state, creation, the schedule that started it ('-': submitted), task states, the best
    log-loss / AUC of its training runs and, for runs that promoted, challenger vs champion on the same day."""
    if not runs:
        return "no runs on Vertex AI for this pipeline"
    figures = [training_figures(run) for run in runs]
    metric_names = sorted({m for run_figures in figures for m in run_figures})
    promotions = [promotion_figures(run) for run in runs]
    header = ["JOB ID", "STATE", "CREATED", "SCHEDULE", "TASKS"] + [f"best {m}" for m in metric_names]
    if any(promotions):
        header += ["CHALLENGER", "CHAMPION", "DIFF [95% CI]", "PROMOTED"]
    rows = []
    for run, promotion, run_figures in zip(runs, promotions, figures):
        counts: dict[str, int] = {}
        for state in run.tasks.values():
            counts[state] = counts.get(state, 0) + 1
        summary = " ".join(f"{s.lower()}={n}" for s, n in sorted(counts.items()))
        cells = [run.job_id, run.state, run.create_time[:19], run.schedule or "-", summary]
        for metric in metric_names:
            values = run_figures.get(metric, [])
            best = (min(values) if metric.endswith("logloss") else max(values)) if values else None
            cells.append("" if best is None else f"{best:.4f}")
        if any(promotions):
            cells += _promotion_cells(promotion)
        rows.append(cells)
    return text_table(Table(header, rows))


def _promotion_line(figures: dict[str, float]) -> str:
    """`challenger 0.4120 vs champion 0.4131 on the same eval examples: difference -0.0011 [95% CI ...]: promoted`"""
    champion = figures.get("champion_logloss")
    text = f"challenger {_number(figures.get('challenger_logloss'))}"
    text += f" vs champion {champion:.4f} on the same eval examples" if champion is not None else " (no champion)"
    cells = _promotion_cells(figures)
    if cells[2]:
        text += f": difference {cells[2].replace(' [', ' [95% CI ')}"
    return text + {"yes": ": promoted", "no": ": not promoted", "": ""}[cells[3]]


def _promotion_cells(figures: dict[str, float] | None) -> list[str]:
    if figures is None:
        return ["", "", "", ""]
    difference = f"{figures['difference']:+.4f}" if "difference" in figures else ""
    if "difference_ci95_low" in figures and "difference_ci95_high" in figures:
        difference += f" [{figures['difference_ci95_low']:+.4f},{figures['difference_ci95_high']:+.4f}]"
    promoted = ("yes" if figures["promoted"] else "no") if "promoted" in figures else ""
    return [_number(figures.get("challenger_logloss")), _number(figures.get("champion_logloss")), difference,
            promoted]


def format_run(run: VertexRun, session: VertexSession) -> str:
    lines = [f"run {run.job_id} ({run.display_name}): {run.state}", f"created: {run.create_time}",
             f"console: {console_url(session, run.job_id)}"]
    if run.schedule_name:
        lines.append(f"started by: schedule {run.schedule} ({run.schedule_name})")
    else:
        lines.append("started by: submit")
    if run.labels:
        lines.append("labels: " + ", ".join(f"{k}={v}" for k, v in sorted(run.labels.items())))
    if run.error:
        lines.append(f"error: {run.error}")
    if run.failed_tasks:
        lines.append("failed tasks: " + ", ".join(run.failed_tasks))
    promotion = promotion_figures(run)
    if promotion:
        lines.append("promotion: " + _promotion_line(promotion))
    lines += ["", "tasks:"]
    lines += text_table(Table(["TASK", "STATE"], [[t, s] for t, s in run.tasks.items()]), indent="  ").splitlines()
    if run.metrics:
        names = sorted({m for values in run.metrics.values() for m in values})
        rows = [[task] + [_number(values.get(m)) for m in names] for task, values in run.metrics.items()]
        lines += ["", "metrics:"] + text_table(Table(["TASK"] + names, rows), indent="  ").splitlines()
    return "\n".join(lines)


def _number(value) -> str:
    if value is None:
        return ""
    return f"{value:.4f}" if isinstance(value, float) else str(value)

