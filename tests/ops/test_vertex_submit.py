"""`adrank submit` against the local Vertex double, through the real aiplatform client."""

from __future__ import annotations

import datetime as dt
import re

from configs import config_hash, load_config
from ops.cli import main
from ops.vertex.jobs import job_id, job_labels

JOB_ID = re.compile(r"^adrank-daily-[0-9a-f]{8}-\d{8}-\d{6}$")


def _submitted_job(fake):
    creates = [r for r in fake.calls("POST", r"/pipelineJobs$")]
    assert creates, "no pipeline job was created"
    return creates[-1]


def test_submit_sends_the_pipeline_job(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    assert main(["submit", *vertex_args, "--cache", "off", "--api-endpoint", endpoint]) == 0

    request = _submitted_job(fake)
    assert request.path == "/v1/projects/adrank-prod/locations/us-central1/pipelineJobs"
    identifier = request.query["pipelineJobId"][0]
    assert JOB_ID.match(identifier)
    body = request.body
    spec = body["pipelineSpec"]
    assert spec["pipelineInfo"]["name"] == "adrank-daily"
    tasks = spec["root"]["dag"]["tasks"]
    assert sum(name.startswith("train") for name in tasks) == 5  # 5 targets x 1 run
    assert all(task["cachingOptions"].get("enableCache", False) is False for task in tasks.values())
    assert body["displayName"] == "adrank-daily"
    assert body["serviceAccount"] == "adrank-pipelines@adrank-prod.iam.gserviceaccount.com"
    assert body["network"] == "projects/123456789012/global/networks/adrank-vpc"
    assert body["encryptionSpec"]["kmsKeyName"].endswith("/cryptoKeys/pipelines")
    assert body["runtimeConfig"]["gcsOutputDirectory"] == "gs://adrank-prod-pipelines/root"
    config = load_config(vertex_args[1], vertex_args[3:])
    labels = body["labels"]
    assert labels["adrank-config"] == config_hash(config)
    assert labels["adrank-version"] == "0-1-0"
    assert re.fullmatch(r"[0-9a-f]{7,12}(-dirty)?|unknown", labels["adrank-git"])
    assert labels["team"] == "ads-ranking"
    out = capsys.readouterr().out
    assert f"submitted {identifier}" in out
    assert f"pipelines/runs/{identifier}?project=adrank-prod" in out


def test_submit_associates_the_run_with_the_experiment(fake_vertex, vertex_args):
    fake, endpoint = fake_vertex
    assert main(["submit", *vertex_args, "--experiment", "ranking-daily", "--api-endpoint", endpoint]) == 0

    store = "projects/adrank-prod/locations/us-central1/metadataStores/default"
    experiment = fake.contexts[f"{store}/contexts/ranking-daily"]
    assert experiment["schemaTitle"] == "system.Experiment"
    identifier = _submitted_job(fake).query["pipelineJobId"][0]
    assert fake.context_children[f"{store}/contexts/ranking-daily"] == [f"{store}/contexts/{identifier}"]


def test_submit_refuses_parameters_the_pipeline_does_not_declare(fake_vertex, vertex_args):
    fake, endpoint = fake_vertex
    # the compiled DAG declares no pipeline parameters: an unknown one is refused before any request
    assert main(["submit", *vertex_args, "--param", "window_days=3", "--api-endpoint", endpoint]) == 2
    assert not fake.calls("POST", r"/pipelineJobs$")


def test_wait_prints_task_states_and_succeeds(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    fake.script_jobs([
        ("PIPELINE_STATE_RUNNING", {"preprocess": "RUNNING"}),
        ("PIPELINE_STATE_RUNNING", {"preprocess": "RUNNING"}),
        ("PIPELINE_STATE_RUNNING", {"preprocess": "SUCCEEDED", "train · cpu · run 1": "RUNNING"}),
        ("PIPELINE_STATE_SUCCEEDED", {"preprocess": "SUCCEEDED", "train · cpu · run 1": "SUCCEEDED",
                                      "report": "SUCCEEDED"}),
    ])
    code = main(["submit", *vertex_args, "--wait", "--poll-seconds", "0", "--api-endpoint", endpoint])
    out = capsys.readouterr().out
    assert code == 0
    assert "task train · cpu · run 1: RUNNING" in out
    assert "task train · cpu · run 1: SUCCEEDED" in out
    assert out.index("task train · cpu · run 1: RUNNING") < out.index("task train · cpu · run 1: SUCCEEDED")
    assert "PIPELINE_STATE_SUCCEEDED" in out and ": succeeded" in out


def test_wait_on_failure_exits_non_zero_naming_the_failed_task(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    fake.script_jobs([
        ("PIPELINE_STATE_RUNNING", {"preprocess": "SUCCEEDED", "train · tpu-v5e-4 · run 1": "RUNNING"}),
        ("PIPELINE_STATE_RUNNING", {"preprocess": "SUCCEEDED", "train · tpu-v5e-4 · run 1": "RUNNING"}),
        ("PIPELINE_STATE_FAILED", {"preprocess": "SUCCEEDED", "train · tpu-v5e-4 · run 1": "FAILED"}),
    ], error="The DAG failed because some tasks failed.")
    code = main(["submit", *vertex_args, "--wait", "--poll-seconds", "0", "--api-endpoint", endpoint])
    captured = capsys.readouterr()
    assert code == 1
    assert "failed tasks: train · tpu-v5e-4 · run 1" in captured.err
    assert "PIPELINE_STATE_FAILED" in captured.err


def test_submit_retries_transient_errors_with_backoff(fake_vertex, vertex_args):
    fake, endpoint = fake_vertex
    fake.failures += [("POST", r"/pipelineJobs$", 503), ("POST", r"/pipelineJobs$", 429)]
    assert main(["submit", *vertex_args, "--api-endpoint", endpoint]) == 0
    attempts = fake.calls("POST", r"/pipelineJobs$")
    assert len(attempts) == 3
    assert len({r.query["pipelineJobId"][0] for r in attempts}) == 1  # same deterministic id each time
    assert len(fake.pipeline_jobs) == 1
    delays = [call.args[0] for call in fake.pauses.call_args_list]
    assert len(delays) == 2 and delays[1] > 0


def test_submit_without_service_account_fails_clearly(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    code = main(["submit", *vertex_args, "--set", "vertex.service_account=null", "--api-endpoint", endpoint])
    assert code == 2
    assert "vertex.service_account is not set" in capsys.readouterr().err
    assert fake.requests == []


def test_job_id_is_deterministic_and_readable(vertex_args):
    config = load_config(vertex_args[1], vertex_args[3:])
    when = dt.datetime(2026, 3, 2, 3, 0, 5, tzinfo=dt.timezone.utc)
    assert job_id(config, when) == job_id(config, when) == f"adrank-daily-{config_hash(config)[:8]}-20260302-030005"
    other = load_config(vertex_args[1], ["runs_per_target=2"])
    assert job_id(other, when) != job_id(config, when)
    assert job_labels(config, revision="ABC123")["adrank-git"] == "abc123"
