"""The preprocess step's Dataflow job: `gcp_resources` in GCPC's format (the console links it), cancelled on SIGTERM
(Vertex stops a cancelled run's pods with it). A stand-in result records the cancel."""

from __future__ import annotations

import os
import signal
import time

import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from google.protobuf import json_format
from google_cloud_pipeline_components.proto import gcp_resources_pb2

from components.preprocess.dataflow_job import CancelledBySignal, watch_job
from ops.spec_executor.dataflow import DataflowArgsError, check_gcp_resources_output

OPTIONS = PipelineOptions(["--runner=DataflowRunner", "--project=adrank-prod", "--region=us-central1"])
JOB_ID = "2026-03-04_03_00_12-1234567890123456789"


class StandInDataflowResult:
    """What `DataflowPipelineResult` offers the step: a job id, a cancel, a wait that returns while it runs."""

    has_job = True

    def __init__(self):
        self.cancels = 0

    def job_id(self) -> str:
        return JOB_ID

    def cancel(self) -> str:
        self.cancels += 1
        return "CANCELLING"


def _parsed(path) -> gcp_resources_pb2.GcpResources:
    return json_format.Parse(path.read_text(), gcp_resources_pb2.GcpResources())


def test_sigterm_while_the_job_runs_cancels_it(tmp_path):
    result = StandInDataflowResult()
    resources = tmp_path / "outputs" / "gcp_resources"
    waited = []

    def wait(job):
        waited.append(job)
        os.kill(os.getpid(), signal.SIGTERM)  # Vertex cancelling the run
        time.sleep(5)  # the job would go on; the handler interrupts this
        pytest.fail("SIGTERM did not stop the wait")

    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(CancelledBySignal) as stopped:
        watch_job(result, OPTIONS, str(resources), wait)
    assert stopped.value.code == 143 and stopped.value.job == JOB_ID
    assert waited == [result] and result.cancels == 1
    assert signal.getsignal(signal.SIGTERM) is previous  # the step's own handler is put back
    (resource,) = _parsed(resources).resources
    assert resource.resource_type == "DataflowJob"
    assert resource.resource_uri == ("https://dataflow.googleapis.com/v1b3/projects/adrank-prod/locations/us-central1/"
                                     f"jobs/{JOB_ID}")


def test_a_job_that_ends_is_not_cancelled(tmp_path):
    result = StandInDataflowResult()
    resources = tmp_path / "gcp_resources"
    watch_job(result, OPTIONS, str(resources), lambda job: None)
    assert result.cancels == 0
    assert len(_parsed(resources).resources) == 1


def test_a_direct_runner_job_has_no_resource(tmp_path):
    class DirectResult:  # the DirectRunner's result has no job id
        pass

    resources = tmp_path / "gcp_resources"
    watch_job(DirectResult(), PipelineOptions(["--runner=DirectRunner"]), str(resources), lambda job: None)
    assert resources.read_text() == "{}" and len(_parsed(resources).resources) == 0


def test_run_spec_refuses_a_dataflow_task_without_gcp_resources():
    with pytest.raises(DataflowArgsError, match="no 'gcp_resources' output parameter"):
        check_gcp_resources_output("preprocess", {"outputs": {"parameters": {}}})
    check_gcp_resources_output("preprocess", {"outputs": {"parameters": {"gcp_resources": {"outputFile": "x"}}}})


def test_the_compiled_preprocess_step_declares_gcp_resources():
    from kfp import dsl

    from pipelines.steps import preprocess_files_step, preprocess_step

    for function in (preprocess_step, preprocess_files_step):
        component = dsl.component(function, base_image="python:3.11-slim", install_kfp_package=False)
        outputs = component.component_spec.outputs
        assert outputs["gcp_resources"].type == "String"
