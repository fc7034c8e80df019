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
    assert header.split()[:5] == ["JOB", "ID", "STATE", "CREATED", "SCHEDULE"]
    assert "best engagement_logloss" in header
    assert row.startswith(job_id) and "FAILED" in row
    assert row.split()[3] == "-"  # submitted, not started by a schedule
    assert "failed=1" in row and "succeeded=2" in row
    # the Metrics artifacts of the double: engagement_logloss = 0.4 + task index / 1000; best = lowest
    assert "0.4020" in row
    # found by the label every run of the config carries, not by display name (the first listing was submit's,
    # asking for the runs of the day it was about to submit)
    listing = fake.calls("GET", r"/pipelineJobs$")[-1]
    assert listing.query["filter"] == ['labels.adrank-pipeline="adrank-daily"']


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


def test_runs_list_finds_scheduled_runs_and_names_their_schedule(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    args = [*vertex_args, "--api-endpoint", endpoint]
    fake.script_jobs([("PIPELINE_STATE_SUCCEEDED", {"preprocess": "SUCCEEDED", "report": "SUCCEEDED",
                                                     "promote model": "SUCCEEDED"})])
    # the promotion step's promotion_metrics: challenger and champion on the same eval examples
    fake.task_metrics["promote model"] = {
        "challenger_logloss": 0.4123, "champion_logloss": 0.4131, "difference": -0.0008,
        "difference_ci95_low": -0.0013, "difference_ci95_high": -0.0003, "eval_examples": 52000.0, "promoted": 1.0}
    assert main(["submit", *args]) == 0
    (submitted,) = fake.pipeline_jobs
    assert main(["schedule", "create", *args, "--set", "vertex.schedule.start_time=null"]) == 0
    (schedule_id,) = fake.schedules
    schedule_name = fake.schedules[schedule_id]["name"]
    day_1 = fake.fire_schedule(schedule_id, "2026-03-03T11:00:00Z")
    day_2 = fake.fire_schedule(schedule_id, "2026-03-04T11:00:00Z")
    # a run of the same schedule created before adrank labelled its runs: found by schedule_name alone
    fake.pipeline_jobs[day_1]["labels"] = {}
    # Vertex names scheduled runs itself: nothing shares the submitted run's display name
    assert {fake.pipeline_jobs[j]["displayName"] for j in (day_1, day_2)}.isdisjoint({"adrank-daily"})
    # a run of another pipeline, from another schedule, is not listed
    other = fake.pipeline_jobs[day_2] | {"labels": {"adrank-pipeline": "other"}, "scheduleName": "x/schedules/9"}
    fake.pipeline_jobs["other-20260304110000"] = other | {"name": other["name"].replace(day_2, "other-2026")}
    capsys.readouterr()

    assert main(["runs", "list", "--backend", "vertex", *args]) == 0
    rows = [line.split() for line in capsys.readouterr().out.strip().splitlines()[1:]]
    assert [row[0] for row in rows] == [day_2, day_1, submitted]  # newest first
    assert [row[3] for row in rows] == ["adrank-daily-retrain", "adrank-daily-retrain", "-"]
    assert all(row[-5:] == ["0.4123", "0.4131", "-0.0008", "[-0.0013,-0.0003]", "yes"] for row in rows)
    filters = sorted(call.query["filter"][0] for call in fake.calls("GET", r"/pipelineJobs$")[1:])  # after submit's
    assert filters == ['labels.adrank-pipeline="adrank-daily"', f'schedule_name="{schedule_name}"']
    assert fake.rejected == []

    assert main(["runs", "list", "--backend", "vertex", "--limit", "1", *args]) == 0
    (row,) = capsys.readouterr().out.strip().splitlines()[1:]
    assert row.startswith(day_2)

    assert main(["runs", "show", day_2, "--backend", "vertex", *args]) == 0
    out = capsys.readouterr().out
    assert f"started by: schedule adrank-daily-retrain ({schedule_name})" in out
    assert "adrank-pipeline=adrank-daily" in out  # the schedule's request carried the labels
    assert ("promotion: challenger 0.4123 vs champion 0.4131 on the same eval examples: difference -0.0008 "
            "[95% CI -0.0013,-0.0003]: promoted") in out
    assert main(["runs", "show", submitted, "--backend", "vertex", *args]) == 0
    assert "started by: submit" in capsys.readouterr().out


def test_runs_of_a_schedule_renamed_since_are_still_the_configs(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    args = [*vertex_args, "--api-endpoint", endpoint]
    assert main(["schedule", "create", *args, "--set", "vertex.schedule.start_time=null",
                 "--set", "vertex.schedule.display_name=nightly-old"]) == 0
    (schedule_id,) = fake.schedules
    job = fake.fire_schedule(schedule_id, "2026-03-03T11:00:00Z")
    capsys.readouterr()
    # the config now names its schedule adrank-daily-retrain; the old one still carries adrank-pipeline
    assert main(["runs", "list", "--backend", "vertex", *args]) == 0
    (row,) = [line.split() for line in capsys.readouterr().out.strip().splitlines()[1:]]
    assert row[0] == job and row[3] == "nightly-old"
