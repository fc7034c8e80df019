"""`adrank submit` against the local Vertex double, through the real aiplatform client."""

from __future__ import annotations

import datetime as dt
import re

from configs import config_hash, load_config
from ops.cli import main
from ops.pipeline_compiler import compile_pipeline
from ops.vertex.jobs import job_id, job_labels, submit_pipeline
from ops.vertex.session import session_for
from tests.support.compiled_spec import spec_tasks

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
    tasks = spec_tasks(spec)  # the root DAG's and those nested in it: the e-mail exit handler, the runs loop
    assert sum(name.startswith("train") for name in tasks) == 13  # the benchmark: one branch per target (sweep points too)
    assert len(spec["root"]["inputDefinitions"]["parameters"]["training_runs"]["defaultValue"]) == 13  # x 1 run
    # a submitted run reads the window ending when it was submitted (a scheduled one: its scheduled time)
    window_end = body["runtimeConfig"]["parameterValues"]["window_end"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", window_end)
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
    assert window_end.endswith("T00:00:00Z")  # a UTC midnight: every submit of one day has the same inputs
    assert labels["adrank-kind"] == "benchmark"
    day = (dt.date.fromisoformat(window_end[:10]) - dt.timedelta(days=1)).isoformat()
    assert labels["adrank-day"] == day.replace("-", "")
    out = capsys.readouterr().out
    assert f"submitted {identifier} (the benchmark pipeline; window ends {window_end}, day {day})" in out
    assert f"pipelines/runs/{identifier}?project=adrank-prod" in out
    # what the run costs, Dataflow and the CPU steps included
    assert "estimated cost of one benchmark run: " in out and "Dataflow up to $28.36, CPU steps $" in out


def test_submit_the_retraining_pipeline_for_a_given_day(fake_vertex, vertex_args, capsys):
    """`--param window_end=...` re-runs a day: any time of it gives the same window end, a UTC midnight, so the same
    preprocess inputs (Vertex's cache)."""
    fake, endpoint = fake_vertex
    assert main(["submit", *vertex_args, "--pipeline", "retraining", "--param", "window_end=2026-03-04T11:00:00Z",
                 "--api-endpoint", endpoint]) == 0
    body = _submitted_job(fake).body
    assert body["runtimeConfig"]["parameterValues"]["window_end"] == "2026-03-04T00:00:00Z"
    assert body["labels"]["adrank-day"] == "20260303" and body["labels"]["adrank-kind"] == "retraining"
    tasks = spec_tasks(body["pipelineSpec"])
    assert [name for name in tasks if name.startswith("train")] == ["train-step"]
    assert [item["target"] for item in body["pipelineSpec"]["root"]["inputDefinitions"]["parameters"]
            ["training_runs"]["defaultValue"]] == ["tpu-v5e-4"]  # retraining.target, once
    assert "the retraining pipeline; window ends 2026-03-04T00:00:00Z, day 2026-03-03)" in capsys.readouterr().out


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
    # the compiled DAG declares only the run parameters it records: an unknown one is refused before any request
    assert main(["submit", *vertex_args, "--param", "lookback=3", "--api-endpoint", endpoint]) == 2
    # the training runs the loop iterates over are compiled from the config, which the report reads too
    assert main(["submit", *vertex_args, "--param", "training_runs=[]", "--api-endpoint", endpoint]) == 2
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


def test_submit_retries_transient_errors_with_backoff(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    fake.failures += [("POST", r"/pipelineJobs$", 503), ("POST", r"/pipelineJobs$", 429)]
    assert main(["submit", *vertex_args, "--api-endpoint", endpoint]) == 0
    attempts = fake.calls("POST", r"/pipelineJobs$")
    assert len(attempts) == 3
    assert len({r.query["pipelineJobId"][0] for r in attempts}) == 1  # same deterministic id each time
    assert len(fake.pipeline_jobs) == 1
    retries = [line for line in capsys.readouterr().err.splitlines() if "retrying with backoff" in line]
    assert all(line.startswith("adrank warning: create pipeline job ") for line in retries)
    assert [line.rsplit(": ", 1)[1] for line in retries] == [
        "503 ServiceUnavailable, retrying with backoff (attempt 1/6)",
        "429 TooManyRequests, retrying with backoff (attempt 2/6)",
    ]


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


def _submit_and_wait(fake, endpoint, vertex_args, capsys) -> tuple[int, str, str]:
    code = main(["submit", *vertex_args, "--wait", "--poll-seconds", "0", "--api-endpoint", endpoint])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    # stderr without the INFO records (`adrank: …`, e.g. the images the spec uses): warnings and errors
    return code, captured.out, "\n".join(line for line in captured.err.strip().splitlines()
                                         if not line.startswith("adrank: "))


def test_wait_on_a_failed_run_is_one_line_even_when_vertex_writes_several(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    fake.script_jobs([("PIPELINE_STATE_FAILED", {"preprocess": "FAILED"})],
                     error="The DAG failed because some tasks failed.\nThe failed tasks are: [preprocess].\n")
    code, _, err = _submit_and_wait(fake, endpoint, vertex_args, capsys)
    assert code == 1
    (line,) = err.splitlines()
    assert line.endswith("PIPELINE_STATE_FAILED (failed tasks: preprocess): The DAG failed because some tasks "
                         "failed. The failed tasks are: [preprocess].; console: https://console.cloud.google.com"
                         f"/vertex-ai/locations/us-central1/pipelines/runs/{next(iter(fake.pipeline_jobs))}"
                         "?project=adrank-prod")


def test_wait_on_a_cancelled_run_exits_non_zero(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    fake.script_jobs([("PIPELINE_STATE_RUNNING", {"preprocess": "RUNNING"}),
                      ("PIPELINE_STATE_CANCELLED", {"preprocess": "CANCELLED"})])
    code, out, err = _submit_and_wait(fake, endpoint, vertex_args, capsys)
    assert code == 1
    (line,) = err.splitlines()
    assert "PIPELINE_STATE_CANCELLED (cancelled before it finished)" in line
    assert "task preprocess: CANCELLED" in out


def test_an_api_error_while_waiting_is_one_line_naming_the_run(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    fake.script_jobs([("PIPELINE_STATE_RUNNING", {"preprocess": "RUNNING"})])
    fake.failures.append(("GET", r"/pipelineJobs/[^/]+$", 403))  # the first poll
    code, _, err = _submit_and_wait(fake, endpoint, [*vertex_args, "--set", "vertex.experiment=null"], capsys)
    assert code == 2
    (line,) = err.splitlines()
    (job_id,) = fake.pipeline_jobs
    assert line.startswith(f"adrank submit: error: {job_id}: stopped waiting: get ")
    assert "403 PERMISSION_DENIED" in line and "the run goes on on Vertex: https://" in line


def test_interrupting_the_wait_says_the_run_goes_on(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    fake.script_jobs([("PIPELINE_STATE_RUNNING", {"preprocess": "RUNNING"})])
    fake.pauses.side_effect = KeyboardInterrupt  # Ctrl-C between two polls
    code, _, err = _submit_and_wait(fake, endpoint, vertex_args, capsys)
    assert code == 130
    (job_id,) = fake.pipeline_jobs
    assert err == f"adrank warning: {job_id}: stopped waiting (interrupted); the run goes on on Vertex: " \
                  f"https://console.cloud.google.com/vertex-ai/locations/us-central1/pipelines/runs/{job_id}" \
                  "?project=adrank-prod"


def test_an_experiment_vertex_would_refuse_fails_before_any_request(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    assert main(["submit", *vertex_args, "--experiment", "Ranking_Daily", "--api-endpoint", endpoint]) == 2
    err = capsys.readouterr().err
    assert "--experiment: experiment name 'Ranking_Daily': lowercase letters, digits and '-'" in err
    assert fake.requests == []


def test_a_failure_adding_the_run_to_the_experiment_is_a_warning(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    # the SDK reads the new job back to add it to the experiment; that read fails
    fake.failures.append(("GET", r"/pipelineJobs/[^/]+$", 403))
    assert main(["submit", *vertex_args, "--api-endpoint", endpoint]) == 0
    captured = capsys.readouterr()
    (job_id,) = fake.pipeline_jobs
    assert f"submitted {job_id}" in captured.out and "  experiment: " not in captured.out
    (line,) = [line for line in captured.err.strip().splitlines() if not line.startswith("adrank: ")]
    link = f"https://console.cloud.google.com/vertex-ai/locations/us-central1/pipelines/runs/{job_id}?project=adrank-prod"
    assert line.startswith(f"adrank warning: {job_id} was created and runs ({link}), but not added to experiment "
                           f"'adrank-daily': add {job_id} to the experiment: 403 PERMISSION_DENIED")


def test_any_failure_after_the_job_exists_is_a_warning_naming_it_never_a_traceback(fake_vertex, vertex_args,
                                                                                       capsys):
    """The run fails at once, before Vertex made its run context: the SDK cannot add it to the experiment and
    raises an error that is no API failure (a RuntimeError around a RuntimeError). The job exists, so `submit`
    says so and exits 0; submitting the day again is refused only while a run of it is live or succeeded."""
    fake, endpoint = fake_vertex
    fake.run_contexts = False
    fake.script_jobs([("PIPELINE_STATE_FAILED", {"preprocess": "FAILED"})], error="image not found")
    assert main(["submit", *vertex_args, "--api-endpoint", endpoint]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    (job_id,) = fake.pipeline_jobs
    (line,) = [line for line in captured.err.strip().splitlines() if not line.startswith("adrank: ")]
    assert line.startswith(f"adrank warning: {job_id} was created and runs (https://console.cloud.google.com/")
    assert ", but not added to experiment 'adrank-daily': RuntimeError: " in line
    assert "(RuntimeError: Cannot associate PipelineJob to Experiment: " in line and "image not found" in line
    assert f"submitted {job_id}" in captured.out


def test_an_experiment_that_cannot_be_made_before_the_create_is_one_line(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    fake.failures += [("GET", r"/contexts/adrank-daily$", 404), ("POST", r"/metadataStores/default/contexts$", 400)]
    assert main(["submit", *vertex_args, "--api-endpoint", endpoint]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and not fake.pipeline_jobs
    (line,) = [line for line in err.strip().splitlines() if not line.startswith("adrank: ")]
    assert line.startswith("adrank submit: error: create pipeline job adrank-daily-")
    assert ": not created: RuntimeError: Experiment adrank-daily could not be found or created" in line
    assert "400 INVALID_ARGUMENT" in line


def test_submitting_a_day_twice_is_refused_unless_forced_and_a_failed_day_is_submitted_again(fake_vertex,
                                                                                           vertex_args, capsys,
                                                                                           monkeypatch):
    from ops.vertex import jobs

    fake, endpoint = fake_vertex
    args = [*vertex_args, "--pipeline", "retraining", "--set", "vertex.experiment=null", "--api-endpoint", endpoint]
    fake.script_jobs([("PIPELINE_STATE_RUNNING", {"preprocess": "RUNNING"})])
    seconds = iter(range(100))  # each submit a second later (one second's submits are one job, by design)
    job_id = jobs.job_id
    monkeypatch.setattr(jobs, "job_id", lambda config, now: job_id(config, now + dt.timedelta(seconds=next(seconds))))
    assert main(["submit", *args, "--param", "window_end=2026-03-04T08:00:00Z"]) == 0
    (first,) = fake.pipeline_jobs
    fake.pipeline_jobs[first]["state"] = "PIPELINE_STATE_RUNNING"
    capsys.readouterr()
    # later the same day: the same window, so the same paid run again
    assert main(["submit", *args, "--param", "window_end=2026-03-04T17:30:00Z"]) == 2
    err = capsys.readouterr().err
    assert (f"adrank submit: error: the retraining pipeline already has a run of day 2026-03-03 (window ending "
            f"2026-03-04T00:00:00Z): {first} RUNNING (https://console.cloud.google.com/") in err
    assert "pass --force to submit it again" in err
    assert list(fake.pipeline_jobs) == [first]
    # the next day, or the benchmark of the same day, is another run
    assert main(["submit", *args, "--param", "window_end=2026-03-05T08:00:00Z", "--force"]) == 0
    # --force submits the same day again; a failed run of the day does not block a new one
    fake.pipeline_jobs[first]["state"] = "PIPELINE_STATE_FAILED"
    assert main(["submit", *args, "--param", "window_end=2026-03-04T09:00:00Z"]) == 0
    assert main(["submit", *args, "--param", "window_end=2026-03-04T09:00:00Z", "--force"]) == 0
    days = sorted(job["labels"]["adrank-day"] for job in fake.pipeline_jobs.values())
    assert days == ["20260303", "20260303", "20260303", "20260304"]
    assert fake.rejected == []


def test_a_create_that_already_went_through_is_read_back_not_duplicated(fake_vertex, vertex_args, tmp_path):
    """A retried create of a job id Vertex already has (the first attempt went through before a transient
    error) reads that job back instead of failing or making a second one."""
    fake, endpoint = fake_vertex
    config = load_config(vertex_args[1], [*vertex_args[3:], "vertex.experiment=null"])
    template = compile_pipeline(config, "vertex", tmp_path / "pipeline.yaml")
    session = session_for(config, endpoint)
    when = dt.datetime(2026, 3, 2, 3, 0, 5, tzinfo=dt.timezone.utc)
    first, submitted = submit_pipeline(config, template, session, now=when, revision="abc")
    again, resubmitted = submit_pipeline(config, template, session, now=when, revision="abc")
    assert len(fake.pipeline_jobs) == 1
    assert again.resource_name == first.resource_name == resubmitted.resource_name == submitted.resource_name
    assert len(fake.calls("POST", r"/pipelineJobs$")) == 2
    assert fake.calls("GET", rf"/pipelineJobs/{submitted.job_id}$")  # the existing job, read back
