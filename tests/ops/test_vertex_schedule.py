"""`adrank schedule` lifecycle against the local Vertex double: create → update (no duplicate) →
pause → resume → list → delete."""

from __future__ import annotations

import pytest

from ops.cli import main
from tests.support.compiled_spec import spec_tasks

SCHEDULES = r"/schedules$"
PAST_START = ["--set", "vertex.schedule.start_time=2026-03-01T00:00:00Z"]
# these tests start the schedule in the future
FUTURE_START = ["--set", "vertex.schedule.start_time=2099-03-01T00:00:00Z"]


def test_schedule_lifecycle(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    args = [*vertex_args, *FUTURE_START, "--api-endpoint", endpoint]

    assert main(["schedule", "create", *args]) == 0
    creates = fake.calls("POST", SCHEDULES)
    assert len(creates) == 1
    body = creates[0].body
    assert body["displayName"] == "adrank-daily-retrain"
    assert body["cron"] == "TZ=America/Los_Angeles 0 3 * * *"
    assert int(body["maxConcurrentRunCount"]) == 1
    assert body["startTime"].startswith("2099-03-01T00:00:00")
    job = body["createPipelineJobRequest"]["pipelineJob"]
    assert body["createPipelineJobRequest"]["parent"] == "projects/adrank-prod/locations/us-central1"
    assert job["serviceAccount"] == "adrank-pipelines@adrank-prod.iam.gserviceaccount.com"
    assert job["runtimeConfig"]["gcsOutputDirectory"] == "gs://adrank-prod-pipelines/root"
    # scheduled runs carry the labels `runs list` finds them by, like submitted ones
    assert job["labels"]["adrank-pipeline"] == "adrank-daily" and "adrank-config" in job["labels"]
    # the schedule runs the retraining pipeline: one training task, inside the e-mail exit handler
    tasks = spec_tasks(job["pipelineSpec"])  # the exit handler's body and the training-runs loop in it
    assert [name for name in tasks if name.startswith("train")] == ["train-step"]
    assert len(job["pipelineSpec"]["root"]["inputDefinitions"]["parameters"]["training_runs"]["defaultValue"]) == 1
    assert "promote-step" in tasks
    # one template serves every day: the window is resolved from the run's scheduled time, and preprocess reads it
    (window,) = [task for name, task in tasks.items() if name.startswith("resolve-window")]
    scheduled = window["inputs"]["parameters"]["scheduled_time"]["runtimeValue"]["constant"]
    assert scheduled == "{{$.pipeline_job_schedule_time_utc}}"
    (preprocess,) = [task for name, task in tasks.items() if name.startswith("preprocess")]
    assert preprocess["inputs"]["parameters"]["window_end"]["taskOutputParameter"] == {
        "producerTask": "resolve-window-step", "outputParameterKey": "window_end"}
    assert "parameterValues" not in job["runtimeConfig"]  # no window_end: a scheduled run reads its scheduled day
    assert job["labels"]["adrank-kind"] == "retraining" and "adrank-day" not in job["labels"]  # each run's own day
    out = capsys.readouterr().out
    assert "created schedule adrank-daily-retrain" in out
    assert "estimated cost of one retraining run: $34.68 (training $6.00, Dataflow up to $28.36, CPU steps $0.29, " \
           "run fee $0.03; every figure an estimate)" in out
    assert "  Dataflow: up to 50 × n2-standard-8 workers × 1 h" in out
    assert "scheduled runs join experiment 'adrank-daily' themselves (their first step, 'join experiment'" in out
    (join,) = [task for name, task in tasks.items() if name.startswith("join-experiment")]
    assert join["inputs"]["parameters"]["experiment"]["runtimeValue"]["constant"] == "adrank-daily"
    assert join["inputs"]["parameters"]["pipeline_job_name"]["runtimeValue"]["constant"] == \
        "{{$.pipeline_job_resource_name}}"

    # create again with a changed cron: the same schedule is updated, not duplicated
    assert main(["schedule", "create", *args, "--set", "vertex.schedule.cron=30 4 * * *",
                 "--set", "vertex.schedule.max_concurrent_runs=2"]) == 0
    assert len(fake.calls("POST", SCHEDULES)) == 1
    assert len(fake.schedules) == 1
    patch = fake.calls("PATCH", r"/schedules/\d+$")[-1]
    mask = patch.query["updateMask"][0].split(",")
    assert {"cron", "maxConcurrentRunCount", "createPipelineJobRequest"} <= set(mask)
    (schedule,) = fake.schedules.values()
    assert schedule["cron"] == "TZ=America/Los_Angeles 30 4 * * *"
    assert int(schedule["maxConcurrentRunCount"]) == 2
    assert "updated schedule" in capsys.readouterr().out

    assert main(["schedule", "update", *args]) == 0
    assert schedule["cron"] == "TZ=America/Los_Angeles 0 3 * * *"

    assert main(["schedule", "pause", *args]) == 0
    assert fake.calls("POST", r"/schedules/\d+:pause$")
    assert schedule["state"] == "PAUSED"
    assert main(["schedule", "list", *args]) == 0
    listing = capsys.readouterr().out
    assert "adrank-daily-retrain" in listing and "PAUSED" in listing

    assert main(["schedule", "resume", *args]) == 0
    assert schedule["state"] == "ACTIVE"
    capsys.readouterr()
    assert main(["schedule", "list", *args]) == 0
    listing = capsys.readouterr().out
    assert "ACTIVE" in listing and "TZ=America/Los_Angeles 0 3 * * *" in listing

    assert main(["schedule", "delete", *args]) == 0
    assert fake.calls("DELETE", r"/schedules/\d+$")
    assert fake.schedules == {}
    capsys.readouterr()
    assert main(["schedule", "list", *args]) == 0
    assert "no schedules" in capsys.readouterr().out


def test_schedule_actions_on_a_missing_schedule_fail_clearly(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    args = [*vertex_args, "--api-endpoint", endpoint]
    assert main(["schedule", "pause", *args]) == 2
    assert "no schedule named 'adrank-daily-retrain'" in capsys.readouterr().err
    assert main(["schedule", "update", *args]) == 2
    assert "adrank schedule create" in capsys.readouterr().err
    assert not fake.calls("POST", SCHEDULES)


def test_schedule_needs_a_service_account(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    code = main(["schedule", "create", *vertex_args, "--set", "vertex.service_account=null",
                 "--api-endpoint", endpoint])
    assert code == 2
    assert "vertex.service_account is not set" in capsys.readouterr().err
    assert not fake.calls("POST", SCHEDULES)


def test_resume_with_catch_up_sends_catch_up(fake_vertex, vertex_args):
    fake, endpoint = fake_vertex
    args = [*vertex_args, *FUTURE_START, "--api-endpoint", endpoint]
    assert main(["schedule", "create", *args]) == 0
    assert main(["schedule", "pause", *args]) == 0
    assert main(["schedule", "resume", *args, "--catch-up"]) == 0
    assert fake.calls("POST", r"/schedules/\d+:resume$")[-1].body == {"catchUp": True}
    (schedule,) = fake.schedules.values()
    assert schedule["state"] == "ACTIVE" and schedule["catchUp"] is True

    assert main(["schedule", "pause", *args]) == 0
    assert main(["schedule", "resume", *args]) == 0
    assert not (fake.calls("POST", r"/schedules/\d+:resume$")[-1].body or {}).get("catchUp")
    assert schedule["catchUp"] is False


def test_an_update_names_only_the_fields_it_sets(fake_vertex, vertex_args, capsys):
    """Vertex refuses an update whose mask names a field it sends empty ("the non-empty fields cannot be unset");
    the double enforces that, so every update here would fail on Vertex if it broke the rule."""
    fake, endpoint = fake_vertex
    args = [*vertex_args, "--api-endpoint", endpoint]
    assert main(["schedule", "create", *args]) == 0  # no start time, no limits
    (schedule,) = fake.schedules.values()
    assert "startTime" not in schedule and "maxRunCount" not in schedule

    # a second create and an update: the same schedule, masks without the fields left empty
    assert main(["schedule", "create", *args, "--set", "vertex.schedule.cron=15 3 * * *"]) == 0
    assert main(["schedule", "update", *args, "--max-runs", "30", "--end-time", "2099-12-31T00:00:00Z"]) == 0
    masks = [set(p.query["updateMask"][0].split(",")) for p in fake.calls("PATCH", r"/schedules/\d+$")]
    assert masks[0] == {"cron", "maxConcurrentRunCount", "createPipelineJobRequest"}
    assert masks[1] == masks[0] | {"maxRunCount", "endTime"}
    assert (schedule["maxRunCount"], schedule["endTime"]) == ("30", "2099-12-31T00:00:00Z")
    assert len(fake.schedules) == 1 and fake.rejected == []
    assert "at most 30 runs, until 2099-12-31T00:00:00+00:00" in capsys.readouterr().out

    # the config has no end time: the schedule keeps its own (it cannot be cleared) and the command says so
    assert main(["schedule", "update", *args, "--max-runs", "7"]) == 0
    assert schedule["maxRunCount"] == "7" and schedule["endTime"] == "2099-12-31T00:00:00Z"
    assert ("note: vertex.schedule.end_time (--end-time) is not set in the config; the schedule keeps its end_time = "
            "2099-12-31T00:00:00+00:00") in capsys.readouterr().out


def test_clearing_a_set_limit_fails_naming_the_field_before_any_update(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    args = [*vertex_args, "--api-endpoint", endpoint]
    assert main(["schedule", "create", *args, "--max-runs", "30"]) == 0
    capsys.readouterr()
    err = _one_line_error(capsys, ["schedule", "update", *args, "--max-runs", "none"])
    assert err.startswith("adrank schedule: error: vertex.schedule.max_runs (--max-runs): the schedule "
                          "adrank-daily-retrain has max_run_count = 30, which Vertex cannot clear")
    assert fake.calls("PATCH", r"/schedules/\d+$") == []


def test_the_double_refuses_what_vertex_refuses(fake_vertex, vertex_args):
    """The update the old code sent (a start time named in the mask, sent empty) is refused, as by Vertex."""
    from google.api_core import exceptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.aiplatform_v1.services.schedule_service import ScheduleServiceClient
    from google.protobuf import field_mask_pb2

    fake, endpoint = fake_vertex
    assert main(["schedule", "create", *vertex_args, *FUTURE_START, "--api-endpoint", endpoint]) == 0
    (schedule,) = fake.schedules.values()
    client = ScheduleServiceClient(credentials=AnonymousCredentials(), transport="rest",
                                   client_options={"api_endpoint": endpoint})
    resource = client.get_schedule(name=schedule["name"])
    resource.start_time = None
    with pytest.raises(exceptions.BadRequest, match="The non-empty fields cannot be unset: startTime"):
        client.update_schedule(schedule=resource, update_mask=field_mask_pb2.FieldMask(paths=["start_time"]))
    resource = client.get_schedule(name=schedule["name"])
    resource.cron = "every day at 3"
    with pytest.raises(exceptions.BadRequest, match="is not a cron tab"):
        client.update_schedule(schedule=resource, update_mask=field_mask_pb2.FieldMask(paths=["cron"]))


def test_bad_schedule_limits_fail_before_any_request(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    args = [*vertex_args, "--api-endpoint", endpoint]
    with pytest.raises(SystemExit) as exit_:
        main(["schedule", "create", *args, "--max-runs", "0"])
    assert exit_.value.code == 2
    assert "expected a run count >= 1 or 'none'" in capsys.readouterr().err
    assert main(["schedule", "create", *args, "--end-time", "2026-12-31T00:00:00"]) == 2
    assert "end_time needs a UTC offset" in capsys.readouterr().err
    assert main(["schedule", "create", *args, *FUTURE_START, "--end-time", "2099-02-01T00:00:00Z"]) == 2  # before start
    assert "end_time must be after start_time" in capsys.readouterr().err
    assert fake.requests == []


def _one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    # without the INFO records (`adrank: …`, e.g. the images the compiled spec uses)
    err = "\n".join(line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("adrank: "))
    assert "\n" not in err and "Traceback" not in err
    return err


def test_a_past_start_time_is_refused_naming_the_field(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    args = [*vertex_args, "--api-endpoint", endpoint, *PAST_START]
    err = _one_line_error(capsys, ["schedule", "create", *args])
    assert "vertex.schedule.start_time: 2026-03-01T00:00:00+00:00 is already past" in err
    assert "--start-now-if-past" in err
    err = _one_line_error(capsys, ["schedule", "create", *args, "--set", "vertex.schedule.start_time=null",
                                   "--end-time", "2026-01-01T00:00:00Z"])
    assert "vertex.schedule.end_time: 2026-01-01T00:00:00+00:00 is already past" in err
    assert not fake.calls("POST", SCHEDULES) and fake.schedules == {}


def test_start_now_if_past_moves_the_start_to_now(fake_vertex, vertex_args, capsys):
    import datetime as dt

    fake, endpoint = fake_vertex
    before = dt.datetime.now(dt.timezone.utc)
    assert main(["schedule", "create", *vertex_args, "--api-endpoint", endpoint, *PAST_START,
                 "--start-now-if-past"]) == 0
    after = dt.datetime.now(dt.timezone.utc)
    (schedule,) = fake.schedules.values()
    sent = dt.datetime.fromisoformat(schedule["startTime"].replace("Z", "+00:00"))
    assert before <= sent <= after
    out = capsys.readouterr().out
    assert "note: vertex.schedule.start_time 2026-03-01T00:00:00+00:00 is past; the schedule starts now" in out
    # without a start time the schedule starts at creation: nothing is sent, nothing to catch up
    assert main(["schedule", "update", *vertex_args, "--api-endpoint", endpoint,
                 "--set", "vertex.schedule.start_time=null"]) == 0
    assert "startTime" not in fake.calls("PATCH", r"/schedules/\d+$")[-1].body
    assert "no start time (runs from its creation)" in capsys.readouterr().out


def test_an_update_keeps_the_start_time_the_schedule_already_has(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    args = [*vertex_args, "--api-endpoint", endpoint]
    assert main(["schedule", "create", *args, *FUTURE_START]) == 0
    (schedule,) = fake.schedules.values()
    schedule["startTime"] = "2026-03-01T00:00:00Z"  # as if created back then, from configs/vertex.yaml
    capsys.readouterr()

    # the config's start time is the schedule's own: the update leaves it out (no re-start, no catch-up)
    assert main(["schedule", "update", *args, *PAST_START, "--set", "vertex.schedule.cron=0 4 * * *"]) == 0
    patch = fake.calls("PATCH", r"/schedules/\d+$")[-1]
    mask = patch.query["updateMask"][0].split(",")
    assert "startTime" not in mask and "start_time" not in mask and "cron" in mask
    assert schedule["startTime"] == "2026-03-01T00:00:00Z" and schedule["cron"].endswith("0 4 * * *")
    assert "start time unchanged" in capsys.readouterr().out
    # another past start time is refused
    err = _one_line_error(capsys, ["schedule", "update", *args, "--set",
                                   "vertex.schedule.start_time=2026-04-01T00:00:00Z"])
    assert err.startswith("adrank schedule: error: vertex.schedule.start_time: 2026-04-01")
    assert len(fake.calls("PATCH", r"/schedules/\d+$")) == 1
