"""The compiled *retraining* pipeline of configs/vertex.yaml, executed here as Vertex executes it (`run-spec`):
a manual re-run of the scheduled day, with another job id and create time and no schedule time (the engine then
fills the scheduled-time placeholder with the create time, as open-source KFP does), resolves the same window and
reuses the finished preprocess from the execution cache; exactly one training task runs, in its own output
directory; and a day that fails still runs the e-mail exit handler, which names the failed task.
`benchmarks/retraining_spec.py` times the same flow (first run vs the cached re-run)."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pytest

from ops.cli import main
from ops.spec_executor.runner import RunSpecOptions, run_spec
from ops.spec_executor.storage import CloudStorageRoot
from tests.support.paths import VERTEX_CONFIG
from tests.support.tiny_config import tiny_logs

PIPELINE_ROOT = "gs://adrank-prod-pipelines/root"
SCHEDULED = dt.datetime(2026, 3, 4, 3, 0, tzinfo=dt.timezone.utc)
# Three days of tiny synthetic logs before the scheduled time; the production target is the cpu machine.
TINY_RETRAINING = [
    "logs.source=synthetic", *tiny_logs(users=300, ads=60, advertisers=10), "logs.synthetic.start_date=2026-03-01", "features.0.hash_buckets=1000", "preprocess.output_shards=1",
    "model.embedding_dim=8", "model.deep_layers=[16]", "model.cross_layers=1", "training.epochs=1",
    "training.global_batch_size=256", "training.shuffle_buffer=1000",
    "targets=[{name: cpu, kind: cpu, price_per_hour: 0.76, vertex: {machine: {machine_type: n1-standard-16}}}]",
    "retraining.target=cpu", "vertex.notify_emails=[ranking-oncall@example.com]",
]


def compile_retraining(output: Path, overrides: list[str]) -> Path:
    args = [arg for override in overrides for arg in ("--set", override)]
    assert main(["compile", "--pipeline", "retraining", "--config", str(VERTEX_CONFIG), "--backend", "vertex",
                 "--allow-image-tags", "--output", str(output), *args]) == 0
    return output


def options(root: Path, create_time: dt.datetime, schedule_time: dt.datetime | None = SCHEDULED) -> RunSpecOptions:
    return RunSpecOptions(root=root, project="adrank-prod", location="us-central1", pipeline_root=PIPELINE_ROOT,
                          create_time=create_time, schedule_time=schedule_time, direct_running_mode="in_memory",
                          direct_num_workers=1, sleep=lambda seconds: None)


def _by_display_name(run) -> dict:
    return {task.display_name: task for task in run.tasks}


def _promotion(root: Path, run) -> dict:
    """The decision record the run's promotion step wrote (its `promotion` artifact)."""
    uri = _by_display_name(run)["promote model"].outputs["promotion"][0]["uri"]
    return json.loads(CloudStorageRoot(root).local_path(uri).read_text())


@pytest.fixture(scope="module")
def two_runs_of_one_day(tmp_path_factory):
    """The scheduled run of 2026-03-04 and a manual re-run of the same day hours later, which no schedule started
    (another job id, create time and task ids), under one Cloud Storage root, as Vertex would cache them."""
    spec = compile_retraining(tmp_path_factory.mktemp("spec") / "retraining.yaml", TINY_RETRAINING)
    root = tmp_path_factory.mktemp("gcs")
    report = lambda line: print(line, file=sys.stderr)  # noqa: E731
    first = run_spec(spec, options(root, SCHEDULED + dt.timedelta(minutes=1)), report=report)
    second = run_spec(spec, options(root, SCHEDULED + dt.timedelta(hours=14), schedule_time=None), report=report)
    return spec, root, first, second


@pytest.mark.long
def test_the_retraining_spec_trains_once_and_its_rerun_reuses_preprocess(two_runs_of_one_day):
    _, root, first, second = two_runs_of_one_day
    assert first.status == "succeeded", [(t.task, t.reason) for t in first.tasks if t.reason]
    assert second.status == "succeeded", [(t.task, t.reason) for t in second.tasks if t.reason]
    assert first.job_name != second.job_name and first.job_uuid != second.job_uuid
    trained = [t for t in first.tasks if t.display_name.startswith("train ·")]  # the steps, not the loop
    assert [t.display_name for t in trained] == ["train · cpu · run 1"]

    # both runs resolved the window themselves (never cached) to the same midnight: the day read is 2026-03-03
    for run in (first, second):
        window = _by_display_name(run)["resolve window"]
        assert window.state == "succeeded"
        assert window.outputs["parameters"] == {"window_end": "2026-03-04T00:00:00Z", "day": "20260303"}
    directory = _by_display_name(first)["run directory · cpu · run 1"].outputs["parameters"]["Output"]
    assert directory == f"{PIPELINE_ROOT}/custom-jobs/cpu/day-20260303/run-index-0"

    first_preprocess = _by_display_name(first)["preprocess"]
    second_preprocess = _by_display_name(second)["preprocess"]
    assert first_preprocess.state == "succeeded"
    assert second_preprocess.state == "cached"
    assert second_preprocess.cached_from["job"] == first.job_name
    assert second_preprocess.outputs["examples"][0]["uri"] == first_preprocess.outputs["examples"][0]["uri"]
    # the registry changes between the two runs, so the promotion is decided again, never taken from the cache,
    # and the second run scores yesterday's promoted model (copied into the registry) against today's
    assert _by_display_name(second)["promote model"].state == "succeeded"
    decision = _promotion(root, second)
    assert decision["champion_status"] == "scored" and decision["champion_version"] == "1"
    assert decision["day"] == "2026-03-03" and decision["eval_positives_by_task"]
    assert decision["decided_by"] == second.job_name


@pytest.mark.long
def test_each_run_of_the_day_announces_its_end(two_runs_of_one_day):
    _, _, first, second = two_runs_of_one_day
    for run in (first, second):
        (notice,) = run.notifications
        assert notice["state"] == "SUCCEEDED" and notice["failed_tasks"] == []
        assert notice["recipients"] == ["ranking-oncall@example.com"] and notice["sent"] is False


@pytest.mark.long
def test_a_failing_day_runs_the_notification_which_names_the_failed_step(two_runs_of_one_day, tmp_path):
    # the same day with a minimum the window cannot meet: preprocess fails (a real failure, not an injected one),
    # is tried once more as its retry policy says, and the exit handler still runs
    spec = compile_retraining(tmp_path / "failing.yaml",
                              [*TINY_RETRAINING, "split.min_train_examples=10000000", "retry.max_retries=1"])
    _, root, _, _ = two_runs_of_one_day
    run = run_spec(spec, options(root, SCHEDULED + dt.timedelta(hours=3)), report=lambda line: None)
    assert run.status == "failed"
    states = {task.display_name: task.state for task in run.tasks}
    assert states["preprocess"] == "failed"
    assert states["notify by e-mail"] == "succeeded"
    preprocess = _by_display_name(run)["preprocess"]
    assert preprocess.attempts == 2
    (notice,) = run.notifications
    assert notice["state"] == "FAILED"
    assert [failed["task"] for failed in notice["failed_tasks"]] == [preprocess.task]
