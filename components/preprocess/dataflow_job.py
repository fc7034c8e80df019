"""The Dataflow job a preprocess step launches: linked from the Vertex console, and cancelled with its run.

The step builds the Beam pipeline in-process (`beam.Pipeline(options).run()`) rather than through GCPC's
`DataflowPythonJobOp` + `WaitGcpResourcesOp`: GCPC's launcher runs a Python file in its own image with its own
requirements and knows nothing of the tf.Transform output, the manifest and the checks that follow the job in
`components.preprocess.run`; the local backend and `adrank run-spec` run this same step on the DirectRunner. So
the step does what GCPC's launcher does for a job it starts:

- **visible**: as soon as Dataflow answers the job id, it writes the step's `gcp_resources` output parameter in
  GCPC's `GcpResources` JSON (one `DataflowJob` resource, URI
  `https://dataflow.googleapis.com/v1b3/projects/P/locations/R/jobs/ID`, the form GCPC's Dataflow launcher
  writes); the Vertex console reads that parameter of a task and links the job. A step that starts no Dataflow
  job writes an empty `GcpResources` (`{}`).
- **stoppable**: Vertex stops a cancelled run's task pods with SIGTERM; while the step waits for the job, SIGTERM
  cancels the Dataflow job (`PipelineResult.cancel()`, which asks Dataflow for JOB_STATE_CANCELLED) and ends the
  step with exit status 143, so the job does not go on being paid after its run was cancelled.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from components.progress import progress

log = logging.getLogger(__name__)

DATAFLOW_JOB_RESOURCE = "DataflowJob"
TERMINATED_EXIT_STATUS = 128 + signal.SIGTERM


class CancelledBySignal(SystemExit):
    """The step got SIGTERM (its Vertex run was cancelled) and asked Dataflow to cancel its job."""

    def __init__(self, job: str):
        super().__init__(TERMINATED_EXIT_STATUS)
        self.job = job


def dataflow_job_uri(project: str, region: str, job_id: str) -> str:
    return f"https://dataflow.googleapis.com/v1b3/projects/{project}/locations/{region}/jobs/{job_id}"


def gcp_resources_json(project: str | None = None, region: str | None = None, job_id: str | None = None) -> str:
    """GCPC's `GcpResources` message as JSON: the Dataflow job, or no resource ("{}") when there is no job."""
    if not (project and region and job_id):
        return "{}"
    return json.dumps({"resources": [{"resourceType": DATAFLOW_JOB_RESOURCE,
                                      "resourceUri": dataflow_job_uri(project, region, job_id)}]})


def write_gcp_resources(path: str | None, text: str) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)


@contextlib.contextmanager
def cancelled_on_sigterm(result: Any, job: str) -> Iterator[None]:
    """While the block runs, SIGTERM cancels `result`'s job (`result.cancel()`) and raises `CancelledBySignal`.

    Signal handlers can only be set from the main thread (the KFP executor runs the step there); elsewhere the
    block runs without one, said on the step's log."""
    if threading.current_thread() is not threading.main_thread():
        log.warning(f"not the main thread: SIGTERM will not cancel Dataflow job {job}")
        yield
        return

    def cancel(signum, frame):
        log.info(f"SIGTERM (the pipeline run was cancelled): cancelling Dataflow job {job}", extra=progress(job=job))
        try:
            result.cancel()
        except Exception as error:  # noqa: BLE001 - the step ends either way; say what the user must do
            log.warning(f"could not cancel Dataflow job {job} ({error}); cancel it in the Dataflow console")
        else:
            log.info(f"asked Dataflow to cancel job {job}", extra=progress(job=job))
        raise CancelledBySignal(job)

    previous = signal.signal(signal.SIGTERM, cancel)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def dataflow_job_of(result: Any, options) -> tuple[str, str, str] | None:
    """(project, region, job id) of the Dataflow job `result` runs, None for another runner's result."""
    from apache_beam.options.pipeline_options import GoogleCloudOptions

    job_id = getattr(result, "job_id", None)
    if not callable(job_id) or not getattr(result, "has_job", False):
        return None
    cloud = options.view_as(GoogleCloudOptions)
    return cloud.project, cloud.region, job_id()


def watch_job(result: Any, options, gcp_resources_path: str | None, wait) -> None:
    """Write `gcp_resources` for the job `result` runs, then `wait(result)` with SIGTERM cancelling a Dataflow job.

    `wait`: waits for the job's end (`components.preprocess.step_messages.wait_for_job`)."""
    job = dataflow_job_of(result, options)
    if job is None:
        write_gcp_resources(gcp_resources_path, gcp_resources_json())
        wait(result)
        return
    project, region, job_id = job
    write_gcp_resources(gcp_resources_path, gcp_resources_json(project, region, job_id))
    log.info(f"Dataflow job {job_id}: https://console.cloud.google.com/dataflow/jobs/{region}/{job_id}?project={project}",
             extra=progress(job=job_id, project=project, region=region))
    with cancelled_on_sigterm(result, job_id):
        wait(result)
