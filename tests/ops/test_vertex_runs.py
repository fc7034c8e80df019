"""`adrank runs list|show --backend vertex` against the local Vertex double."""

from __future__ import annotations

from ops.cli import main


def _submit_finished_run(fake, endpoint, vertex_args) -> str:
    fake.script_jobs([
        ("PIPELINE_STATE_FAILED", {"preprocess": "SUCCEEDED", "train · cpu · run 1": "SUCCEEDED",
                                   "train · gpu-a100x4 · run 1": "FAILED", "report": "CANCELLED"}),
    ], error="The DAG failed because some tasks failed.")
    assert main(["submit", *vertex_args, "--api-endpoint", endpoint]) == 0
    (job_id,) = fake.pipeline_jobs
    return job_id


def test_runs_list_shows_state_tasks_and_metrics(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    job_id = _submit_finished_run(fake, endpoint, vertex_args)
    capsys.readouterr()

    assert main(["runs", "list", "--backend", "vertex", *vertex_args, "--api-endpoint", endpoint]) == 0
    out = capsys.readouterr().out
    header, row = out.strip().splitlines()[:2]
    assert header.split()[:4] == ["JOB", "ID", "STATE", "CREATED"]
    assert "best engagement_logloss" in header
    assert row.startswith(job_id) and "FAILED" in row
    assert "failed=1" in row and "succeeded=2" in row
    # the Metrics artifacts of the double: engagement_logloss = 0.4 + task index / 1000; best = lowest
    assert "0.4020" in row
    listing = fake.calls("GET", r"/pipelineJobs$")[-1]
    assert listing.query["filter"] == ['display_name="adrank-daily"']


def test_runs_show_prints_tasks_metrics_and_console_url(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    job_id = _submit_finished_run(fake, endpoint, vertex_args)
    capsys.readouterr()

    assert main(["runs", "show", job_id, "--backend", "vertex", *vertex_args, "--api-endpoint", endpoint]) == 0
    out = capsys.readouterr().out
    assert f"run {job_id} (adrank-daily): FAILED" in out
    assert (f"console: https://console.cloud.google.com/vertex-ai/locations/us-central1/pipelines/runs/{job_id}"
            "?project=adrank-prod") in out
    assert "failed tasks: train · gpu-a100x4 · run 1" in out
    assert "error: The DAG failed because some tasks failed." in out
    assert "engagement_auc" in out and "engagement_logloss" in out
    lines = [line.split() for line in out.splitlines()]
    assert ["train", "·", "cpu", "·", "run", "1", "SUCCEEDED"] in lines
