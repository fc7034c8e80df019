"""Daily retraining as a native Vertex `PipelineJobSchedule`, addressed by its display name.

`create_or_update` is idempotent: when a schedule with the config's display name exists, it is
updated in place (cron, limits, window, and the pipeline it launches), never duplicated; the update names only the
fields it sets (`update_mask`). Every scheduled run starts from the same compiled template (the retraining
pipeline); its preprocess step reads the logs of the `logs.lookback_days` days before the run's scheduled time.

Vertex creates scheduled runs server-side from the schedule's CreatePipelineJobRequest, whose v1 `PipelineJob`
has no experiment field (the SDK adds a run to an experiment client-side, after `submit`): with
`vertex.experiment` set, the compiled DAG's first step joins its own run to the experiment
(components.experiment.membership), so every scheduled run is in it; `adrank schedule add-to-experiment`
(ops.vertex.experiments) adds runs started by templates compiled before that step existed. They carry the same `adrank-*` labels and the schedule's name (`schedule_name`), which is how
`adrank runs list --backend vertex` finds them.

No burst of catch-up runs: a `vertex.schedule.start_time` already past is refused (naming the field), or
moved to now only with `--start-now-if-past`; an update that keeps the start time the schedule already
has leaves it alone. `catch_up` is output-only on the Schedule resource (Vertex sets it from the last
resume): `resume` asks for it only with `--catch-up`. At most `max_concurrent_runs` runs (default 1) run
at once, and with `allow_queueing: false` (the default) a run due while that many run is skipped, not queued.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from configs import AdrankConfig
from foundation.utc_time import format_utc_seconds
from ops.vertex.api_calls import with_backoff
from ops.vertex.jobs import PIPELINE_LABEL, build_pipeline_job, job_labels, pipeline_label_value
from ops.vertex.session import VertexSession, require_service_account, vertex_section

if TYPE_CHECKING:
    pass

# Fields of the Schedule resource `create_or_update` sets. An update's mask names only those it sends with a value:
# Vertex documents that "the non-empty fields cannot be unset" (UpdateScheduleRequest.schedule), so naming a field
# and sending it empty is refused with 400 INVALID_ARGUMENT. The config field behind each, for the error that says
# a set one cannot be cleared in place.
UPDATED_FIELDS = {
    "cron": "vertex.schedule.cron",
    "max_concurrent_run_count": "vertex.schedule.max_concurrent_runs",
    "max_run_count": "vertex.schedule.max_runs (--max-runs)",
    "start_time": "vertex.schedule.start_time",
    "end_time": "vertex.schedule.end_time (--end-time)",
    "allow_queueing": "vertex.schedule.allow_queueing",
    "create_pipeline_job_request": "the compiled retraining pipeline",
}


class ScheduleNotFound(LookupError):
    pass


class ScheduleTimeError(ValueError):
    """A `vertex.schedule` time that cannot be sent now; the message names the field."""


class ScheduleUpdateError(ValueError):
    """An update Vertex would refuse (clearing a field the schedule has set); the message names the field."""


@dataclass(frozen=True)
class UpdateMask:
    """The fields an update names (`paths`) and, for each field the schedule keeps because the config leaves it
    empty, a line saying so (`kept`)."""

    paths: list[str]
    kept: list[str]


def update_mask(resource, existing, clearing: frozenset[str] = frozenset()) -> UpdateMask:
    """The fields an update of `existing` (the Schedule on Vertex) to `resource` names: those `resource` sets.

    Vertex cannot clear a field on an update ("the non-empty fields cannot be unset"). A field the schedule has set
    that the config leaves empty is kept, and said so; one the user asked to clear (`clearing`: `--max-runs none`,
    `--end-time none`) is a ScheduleUpdateError naming the config field, before anything is sent. The start time:
    not sent (none in the config, or the one the schedule already has: `StartTime.keep_existing`), it stays."""
    paths, kept = [], []
    for field, config_field in UPDATED_FIELDS.items():
        if field in resource:
            paths.append(field)
        elif field in existing and field in clearing:
            raise ScheduleUpdateError(
                f"{config_field}: the schedule {existing.display_name} has {field} = {_shown(existing, field)}, which "
                "Vertex cannot clear on an update (a set field cannot be unset); set a value, or delete the schedule "
                "and create it again (`adrank schedule delete`, then `create`)")
        elif field in existing and field != "start_time":
            kept.append(f"note: {config_field} is not set in the config; the schedule keeps its "
                        f"{field} = {_shown(existing, field)} (Vertex cannot clear a set field on an update)")
    return UpdateMask(paths, kept)


def _shown(resource, field: str) -> str:
    value = getattr(resource, field)
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


@dataclass(frozen=True)
class StartTime:
    """The start time `create_or_update` sends: `value` (None: unset, Vertex starts at create time), or, with
    `keep_existing`, none at all (an update leaves the schedule's own start time); `note` says what changed."""

    value: dt.datetime | None
    keep_existing: bool = False
    note: str = ""


def resolve_start_time(config: AdrankConfig, now: dt.datetime, existing=None,
                       start_now_if_past: bool = False) -> StartTime:
    """What to do with `vertex.schedule.start_time` at `now`, for a new schedule or the `existing` one.

    A config is not refused at load for a start time that has passed (it must load on every later day
    for compile and submit); the time only matters when the schedule is created or updated, so here."""
    schedule = vertex_section(config).schedule
    if schedule.end_time is not None and schedule.end_time <= now:
        raise ScheduleTimeError(f"vertex.schedule.end_time: {schedule.end_time.isoformat()} is already past "
                                f"(now {format_utc_seconds(now)}): the schedule would never start a run")
    start = schedule.start_time
    if start is None or start >= now:
        return StartTime(start)
    if existing is not None and "start_time" in existing.gca_resource and existing.gca_resource.start_time == start:
        return StartTime(None, keep_existing=True)  # the schedule has been running since then: leave it
    if start_now_if_past:
        return StartTime(now, note=f"note: vertex.schedule.start_time {start.isoformat()} is past; "
                                   f"the schedule starts now ({format_utc_seconds(now)}), with no catch-up runs")
    raise ScheduleTimeError(
        f"vertex.schedule.start_time: {start.isoformat()} is already past (now {format_utc_seconds(now)}); a start in the "
        "past could make Vertex start the runs due since then. Set a future time, remove it (start at creation), "
        "or pass --start-now-if-past"
    )


@dataclass
class ScheduleRow:
    display_name: str
    state: str
    cron: str
    next_run_time: str
    last_run: str
    resource_name: str


def experiment_note(config: AdrankConfig) -> str:
    """What `schedule create|update` says about the experiment, "" when none is configured."""
    experiment = vertex_section(config).experiment
    if not experiment:
        return ""
    return (f"scheduled runs join experiment '{experiment}' themselves (their first step, 'join experiment'; "
            "Vertex creates them without one); `adrank schedule add-to-experiment` adds runs started by an older "
            "template, `adrank runs list --backend vertex` lists them")


def schedule_display_name(config: AdrankConfig) -> str:
    return vertex_section(config).schedule.display_name or f"{config.name}-daily"


def find_schedules(display_name: str, session: VertexSession):
    from google.cloud import aiplatform

    found = with_backoff(
        lambda: aiplatform.PipelineJobSchedule.list(filter=f'display_name="{display_name}"'),
        f"list schedules {display_name}",
    )
    return [s for s in found if s.display_name == display_name]


def config_schedules(config: AdrankConfig, session: VertexSession) -> dict[str, str]:
    """Resource name → display name of every schedule that starts this config's pipeline: the one with the
    config's schedule display name, and any whose pipeline job carries the config's `adrank-pipeline` label
    (a schedule created under an earlier display name keeps launching runs until it is deleted)."""
    from google.cloud import aiplatform

    display_name = schedule_display_name(config)
    pipeline = pipeline_label_value(config)
    found = with_backoff(lambda: aiplatform.PipelineJobSchedule.list(), "list schedules")
    owned = {}
    for schedule in found:
        resource = schedule.gca_resource
        labels = resource.create_pipeline_job_request.pipeline_job.labels
        if resource.display_name == display_name or labels.get(PIPELINE_LABEL) == pipeline:
            owned[resource.name] = resource.display_name
    return owned


def find_schedule(display_name: str, session: VertexSession):
    found = find_schedules(display_name, session)
    if not found:
        raise ScheduleNotFound(f"no schedule named '{display_name}' in {session.location_path}")
    if len(found) > 1:
        names = ", ".join(s.resource_name for s in found)
        raise ScheduleNotFound(f"{len(found)} schedules are named '{display_name}' ({names}); delete the extras")
    return found[0]


def _schedule_resource(config: AdrankConfig, template_path: Path, revision: str | None, start: StartTime):
    """`(client, Schedule)`: the Vertex schedule service client and the Schedule proto for this config, its
    timing and the CreatePipelineJobRequest it fires.

    The SDK's `PipelineJobSchedule` builds the CreatePipelineJobRequest from the compiled template; its
    `create()` cannot be used because an update must send the same Schedule (with the new request), which
    its `update()` cannot, so the proto is read back through the public `to_dict()` and sent with the
    SDK's service client."""
    from google.cloud import aiplatform
    from google.cloud.aiplatform_v1.types import Schedule

    vertex = vertex_section(config)
    schedule = vertex.schedule
    job = build_pipeline_job(config, template_path, job_id=None, labels=job_labels(config, revision, "retraining"))
    builder = aiplatform.PipelineJobSchedule(pipeline_job=job, display_name=schedule_display_name(config))
    resource = Schedule.from_json(json.dumps(builder.to_dict()))
    resource.cron = schedule.vertex_cron
    resource.max_concurrent_run_count = schedule.max_concurrent_runs
    resource.allow_queueing = schedule.allow_queueing
    if schedule.max_runs:
        resource.max_run_count = schedule.max_runs
    if start.value is not None:
        resource.start_time = start.value
    if schedule.end_time:
        resource.end_time = schedule.end_time
    request_job = resource.create_pipeline_job_request.pipeline_job
    request_job.service_account = require_service_account(config)
    if vertex.network:
        request_job.network = vertex.network
    return builder.api_client, resource


def create_or_update(
    config: AdrankConfig,
    template_path: Path,
    session: VertexSession,
    revision: str | None = None,
    now: dt.datetime | None = None,
    start_now_if_past: bool = False,
    clearing: frozenset[str] = frozenset(),
) -> tuple[str, str, StartTime, list[str]]:
    """Create the config's schedule, or update the one with the same display name.

    Returns (action, the schedule's resource name, the start time sent, notes on fields an update kept); a past
    start time raises ScheduleTimeError, and clearing a set field (`clearing`, see `update_mask`)
    ScheduleUpdateError, before anything is written."""
    from google.protobuf import field_mask_pb2

    display_name = schedule_display_name(config)
    existing = find_schedules(display_name, session)
    if len(existing) > 1:
        raise ScheduleNotFound(f"{len(existing)} schedules are named '{display_name}'; delete the extras")
    start = resolve_start_time(config, now or dt.datetime.now(dt.timezone.utc), existing[0] if existing else None,
                               start_now_if_past)
    client, resource = _schedule_resource(config, template_path, revision, start)
    if not existing:
        created = with_backoff(lambda: client.create_schedule(parent=session.location_path, schedule=resource),
                               f"create schedule {resource.display_name}")
        return "created", created.name, start, []
    resource.name = existing[0].resource_name
    fields = update_mask(resource, existing[0].gca_resource, clearing)
    mask = field_mask_pb2.FieldMask(paths=fields.paths)
    updated = with_backoff(lambda: client.update_schedule(schedule=resource, update_mask=mask),
                           f"update schedule {resource.display_name}")
    return "updated", updated.name, start, fields.kept


def pause(display_name: str, session: VertexSession):
    schedule = find_schedule(display_name, session)
    with_backoff(schedule.pause, f"pause schedule {display_name}")
    return schedule


def resume(display_name: str, session: VertexSession, catch_up: bool = False):
    """Resume a paused schedule; `catch_up` also starts the runs it missed while paused.

    Calls the API client directly: aiplatform's `PipelineJobSchedule.resume(catch_up=...)` drops the
    flag and always sends an empty body (so Vertex never catches up)."""
    schedule = find_schedule(display_name, session)
    with_backoff(lambda: schedule.api_client.resume_schedule(name=schedule.resource_name, catch_up=catch_up),
                 f"resume schedule {display_name}")
    return schedule


def delete(display_name: str, session: VertexSession) -> str:
    schedule = find_schedule(display_name, session)
    name = schedule.resource_name
    with_backoff(schedule.delete, f"delete schedule {display_name}")
    return name


def list_schedules(session: VertexSession, name_prefix: str = "") -> list[ScheduleRow]:
    from google.cloud import aiplatform

    schedules = with_backoff(lambda: aiplatform.PipelineJobSchedule.list(), "list schedules")
    rows = []
    for schedule in schedules:
        resource = schedule.gca_resource
        if not resource.display_name.startswith(name_prefix):
            continue
        rows.append(ScheduleRow(
            display_name=resource.display_name,
            state=resource.state.name,
            cron=resource.cron,
            next_run_time=_time(resource, "next_run_time"),
            last_run=(resource.last_scheduled_run_response.run_response
                      if "last_scheduled_run_response" in resource else ""),
            resource_name=resource.name,
        ))
    return sorted(rows, key=lambda row: row.display_name)


def _time(resource, field: str) -> str:
    if field not in resource:
        return ""
    value = getattr(resource, field)
    return value.isoformat() if hasattr(value, "isoformat") else str(value)
