"""GCPC's `VertexNotificationEmailOp`, recorded instead of sent.

Compiled, the component is an ordinary container task whose command is
`python3 -u -m google_cloud_pipeline_components.container.v1.vertex_notification_email.executor` with
`--type VertexNotificationEmail --payload ''`; that module only raises NotImplementedError ("supported only on
Vertex Pipelines"): Vertex recognises the task and sends the e-mail itself. It takes `recipients` (a list of up
to three addresses, per Vertex's "Configure email notifications" guide) and `pipeline_task_final_status`,
which Vertex fills in as the exit handler's input.

Here the task is not started: the stand-in writes the notification it stands for — recipients, the pipeline
job, its final state and error, and the tasks that failed — to `ROOT/spec-runs/<job>/notifications/<task>.json`
and into the run record. No e-mail leaves this machine; only Vertex sends it. The wording and layout of
Vertex's e-mail are not reproduced.
"""

from __future__ import annotations

import json
from pathlib import Path

NOTIFICATION_EXECUTOR = "google_cloud_pipeline_components.container.v1.vertex_notification_email.executor"
MAX_RECIPIENTS = 3  # Vertex's guide: "a list of up to three email addresses"


class BadNotification(ValueError):
    """The notification task's inputs are not what Vertex accepts."""


def is_notification_email(container: dict | None) -> bool:
    return bool(container) and NOTIFICATION_EXECUTOR in (container or {}).get("command", [])


def notification(task_path: str, executor_input: dict, failed_tasks: list[dict]) -> dict:
    """The notification Vertex would send for this exit-handler task, as a JSON-able record."""
    values = executor_input["inputs"]["parameterValues"]
    recipients = values.get("recipients")
    if not isinstance(recipients, list) or not recipients or not all(isinstance(r, str) and "@" in r
                                                                      for r in recipients):
        raise BadNotification(f"task '{task_path}': recipients must be a list of e-mail addresses, got {recipients!r}")
    if len(recipients) > MAX_RECIPIENTS:
        raise BadNotification(f"task '{task_path}': {len(recipients)} recipients; Vertex sends to at most "
                              f"{MAX_RECIPIENTS}")
    status = values.get("pipeline_task_final_status")
    if not isinstance(status, dict) or "state" not in status:
        raise BadNotification(f"task '{task_path}': no pipeline_task_final_status (the task is not an exit "
                              "handler's exit task)")
    return {
        "task": task_path,
        "sent": False,
        "why_not_sent": "only Vertex AI Pipelines sends notification e-mail; this is what it would be about",
        "recipients": recipients,
        "pipeline_job": status.get("pipelineJobResourceName", ""),
        "state": status["state"],
        "error": status.get("error", {}),
        "failed_tasks": failed_tasks,
    }


def write_notification(record: dict, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (record["task"].replace("/", "__") + ".json")
    path.write_text(json.dumps(record, indent=2))
    return path
