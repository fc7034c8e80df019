"""The Vertex double parses every request body strictly as the aiplatform_v1 message it claims to be."""

from __future__ import annotations

import sys

import pytest

PARENT = "/v1/projects/adrank-prod/locations/us-central1"


@pytest.fixture
def fake():
    vertex_fake = sys.modules["adrank_tests_vertex_fake"]  # loaded by conftest.py
    return vertex_fake.FakeVertex(project="adrank-prod", region="us-central1")


@pytest.mark.parametrize("method, path, body, query, problem", [
    ("POST", "/schedules", {"displayName": "daily", "cronn": "0 3 * * *"}, {}, 'no field named "cronn"'),
    ("POST", "/schedules", {"displayName": "daily", "maxRunCount": "many"}, {}, "maxRunCount"),
    ("POST", "/schedules", {"displayName": "daily", "state": "SLEEPING"}, {}, "SLEEPING"),
    ("POST", "/schedules", {"createPipelineJobRequest": {"pipelineJob": {"experiment": "x"}}}, {}, "experiment"),
    ("PATCH", "/schedules/1", {"cron": "0 3 * * *"}, {"updateMask": ["cron,maxRuns"]}, "'maxRuns'"),
    ("POST", "/schedules/1:resume", {"catchUp": "yes"}, {}, "catchUp"),
    ("POST", "/schedules/1:resume", {"catch_up": True, "backfill": True}, {}, "backfill"),
    ("POST", "/pipelineJobs", {"displayName": "x", "runtimeConfig": {"gcsOutputDir": "gs://b"}}, {}, "gcsOutputDir"),
    ("POST", "/pipelineJobs", {"labels": {"team": 3}}, {}, "labels"),
    ("GET", "/pipelineJobs/x", {"unexpected": True}, {}, "takes none"),
    # the documented formats (tests/ops/vertex_fake.py cites each)
    ("POST", "/pipelineJobs", {"displayName": "x"}, {"pipelineJobId": ["Adrank_1"]}, "must match [a-z][-a-z0-9]"),
    ("POST", "/pipelineJobs", {"displayName": "x"}, {"pipelineJobId": ["a" * 129]}, "must match [a-z][-a-z0-9]"),
    ("POST", "/pipelineJobs", {"labels": {"Team": "ads"}}, {}, "label key 'Team'"),
    ("POST", "/pipelineJobs", {"labels": {"team": "ads ranking"}}, {}, "label value 'ads ranking'"),
    ("POST", "/schedules", {"cron": "0 3 * *", "maxConcurrentRunCount": "1"}, {}, "not a cron tab"),
    ("POST", "/schedules", {"cron": "TZ=Etc/UTC 0 3 * * *"}, {}, "max_concurrent_run_count is required"),
    ("POST", "/schedules", {"cron": "0 3 * * *", "maxConcurrentRunCount": "1",
                            "createPipelineJobRequest": {"pipelineJob": {"labels": {"-x": "y"}}}}, {}, "label key '-x'"),
])
def test_bodies_the_api_would_reject_are_400(fake, method, path, body, query, problem):
    status, payload = fake.handle(method, PARENT + path, query, body)
    assert status == 400
    assert payload["error"]["status"] == "INVALID_ARGUMENT"
    assert problem in payload["error"]["message"]
    assert fake.rejected and problem in fake.rejected[-1][2]
    assert fake.schedules == {} and fake.pipeline_jobs == {}


def test_valid_bodies_are_accepted(fake):
    schedule = {"displayName": "daily", "cron": "TZ=Etc/UTC 0 3 * * *", "maxConcurrentRunCount": "1",
                "startTime": "2026-03-01T00:00:00Z", "allowQueueing": False,
                "createPipelineJobRequest": {"parent": PARENT[4:], "pipelineJob": {
                    "displayName": "adrank", "pipelineSpec": {"any": ["struct", 1]}, "labels": {"team": "ads"},
                    "runtimeConfig": {"gcsOutputDirectory": "gs://bucket/root"}}}}
    assert fake.handle("POST", PARENT + "/schedules", {}, schedule)[0] == 200
    (schedule_id,) = fake.schedules
    mask = {"updateMask": ["cron,maxRunCount,endTime"]}
    assert fake.handle("PATCH", f"{PARENT}/schedules/{schedule_id}", mask, {"cron": "0 4 * * *"})[0] == 200
    assert fake.handle("POST", f"{PARENT}/schedules/{schedule_id}:pause", {}, {})[0] == 200
    assert fake.handle("POST", f"{PARENT}/schedules/{schedule_id}:resume", {}, {"catchUp": True})[0] == 200
    assert fake.rejected == []
    assert fake.schedules[schedule_id]["catchUp"] is True


def test_an_update_cannot_unset_a_set_field(fake):
    """UpdateScheduleRequest: "The non-empty fields cannot be unset"; output-only fields are ignored."""
    schedule = {"displayName": "daily", "cron": "0 3 * * *", "maxConcurrentRunCount": "1", "maxRunCount": "30",
                "startTime": "2099-03-01T00:00:00Z",
                "createPipelineJobRequest": {"parent": PARENT[4:], "pipelineJob": {"displayName": "adrank"}}}
    assert fake.handle("POST", PARENT + "/schedules", {}, schedule)[0] == 200
    (schedule_id,) = fake.schedules
    path = f"{PARENT}/schedules/{schedule_id}"
    for mask in ("cron,startTime", "maxRunCount", "max_run_count,cron"):
        status, payload = fake.handle("PATCH", path, {"updateMask": [mask]}, {"cron": "0 4 * * *"})
        assert status == 400 and "The non-empty fields cannot be unset" in payload["error"]["message"], mask
    assert fake.schedules[schedule_id]["cron"] == "0 3 * * *"  # a refused update changes nothing
    assert fake.handle("PATCH", path, {"updateMask": ["cron,state"]}, {"cron": "0 4 * * *", "state": "PAUSED"})[0] == 200
    assert fake.schedules[schedule_id]["cron"] == "0 4 * * *" and fake.schedules[schedule_id]["state"] == "ACTIVE"
    status, payload = fake.handle("PATCH", path, {"updateMask": ["createNotebookExecutionJobRequest"]},
                                  {"createNotebookExecutionJobRequest": {"parent": "x"}})
    assert status == 400 and "request type cannot be changed" in payload["error"]["message"]


def test_list_filters_the_double_does_not_know_are_400(fake):
    for bad in ('pipeline_job_user_id="x"', 'labels.team:*', 'display_name="a" OR display_name="b"'):
        status, payload = fake.handle("GET", PARENT + "/pipelineJobs", {"filter": [bad]}, None)
        assert status == 400 and payload["error"]["status"] == "INVALID_ARGUMENT", bad


def test_a_schedule_starts_runs_the_way_vertex_does(fake):
    job = {"displayName": "adrank-daily", "pipelineSpec": {"pipelineInfo": {"name": "adrank-daily"}},
           "labels": {"adrank-pipeline": "adrank-daily"}, "runtimeConfig": {"gcsOutputDirectory": "gs://b/root"}}
    schedule = {"displayName": "adrank-daily-retrain", "cron": "TZ=Etc/UTC 0 3 * * *", "maxConcurrentRunCount": "1",
                "createPipelineJobRequest": {"parent": PARENT[4:], "pipelineJob": job}}
    assert fake.handle("POST", PARENT + "/schedules", {}, schedule)[0] == 200
    (schedule_id,) = fake.schedules
    job_id = fake.fire_schedule(schedule_id, "2026-03-03T03:00:00Z")
    run = fake.pipeline_jobs[job_id]
    assert run["displayName"] == "adrank-daily-retrain-20260303030000" != job["displayName"]
    assert run["scheduleName"] == fake.schedules[schedule_id]["name"]
    assert run["labels"] == {"adrank-pipeline": "adrank-daily"} and run["createTime"] == "2026-03-03T03:00:00Z"
    assert fake.schedules[schedule_id]["startedRunCount"] == "1"
    wanted = {"filter": [f'schedule_name="{run["scheduleName"]}" AND labels.adrank-pipeline="adrank-daily"']}
    status, listing = fake.handle("GET", PARENT + "/pipelineJobs", wanted, None)
    assert status == 200 and [j["name"] for j in listing["pipelineJobs"]] == [run["name"]]

    assert fake.handle("POST", f"{PARENT}/schedules/{schedule_id}:pause", {}, {})[0] == 200
    with pytest.raises(RuntimeError, match="PAUSED"):
        fake.fire_schedule(schedule_id, "2026-03-04T03:00:00Z")
