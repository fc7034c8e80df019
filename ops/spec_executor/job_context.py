"""What Vertex fills in when it creates a pipeline job: its name and ids, times, project, location, root.

Vertex resolves these `{{$.pipeline_*}}` placeholders itself; the values' shapes below are what the Vertex
SDK and console show, not a documented contract, and are marked where assumed.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field

from foundation.utc_time import format_utc_seconds


@dataclass
class PipelineJobContext:
    pipeline_name: str
    project: str
    location: str
    pipeline_root: str  # gs://...
    create_time: dt.datetime
    schedule_time: dt.datetime | None = None
    project_number: str = "0"
    persistent_resource_id: str = ""
    job_uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    task_uuids: dict[str, str] = field(default_factory=dict)

    @property
    def job_name(self) -> str:
        """`<pipeline>-<YYYYmmddHHMMSS>`: the job id the Vertex SDK gives a submitted pipeline by default."""
        return f"{self.pipeline_name}-{self.create_time.astimezone(dt.timezone.utc):%Y%m%d%H%M%S}"

    @property
    def resource_name(self) -> str:
        return f"projects/{self.project_number}/locations/{self.location}/pipelineJobs/{self.job_name}"

    def task_uuid(self, task: str) -> str:
        """One id per task for the whole job (assumed: Vertex's task ids are opaque; a UUID stands in)."""
        return self.task_uuids.setdefault(task, str(uuid.uuid4()))

    def task_root(self, task: str) -> str:
        """Where a task's output artifacts go: `<root>/<project number>/<job>/<task>_<task id>` (assumed: the
        layout Vertex shows for artifact URIs; KFP's own backend uses `<root>/<pipeline>/<run id>/<task>`)."""
        leaf = task.rsplit("/", 1)[-1]  # a task of a nested DAG: its own name, its own id
        return f"{self.pipeline_root.rstrip('/')}/{self.project_number}/{self.job_name}/{leaf}_{self.task_uuid(task)}"

    def pipeline_placeholders(self, task: str) -> dict[str, str]:
        """The `{{$.pipeline_*}}` placeholders and their values for `task`."""
        schedule = self.schedule_time or self.create_time
        return {
            "pipeline_job_name": self.job_name,
            "pipeline_job_resource_name": self.resource_name,
            "pipeline_job_uuid": self.job_uuid,
            "pipeline_task_name": task.rsplit("/", 1)[-1],
            "pipeline_task_uuid": self.task_uuid(task),
            # assumed: RFC 3339 in UTC with a `Z`, whole seconds, as the Vertex console shows them
            "pipeline_job_create_time_utc": format_utc_seconds(self.create_time),
            "pipeline_job_schedule_time_utc": format_utc_seconds(schedule),
            "pipeline_root": self.pipeline_root,
            "pipeline_google_cloud_project_id": self.project,
            "pipeline_google_cloud_location": self.location,
            "pipeline_persistent_resource_id": self.persistent_resource_id,
        }
