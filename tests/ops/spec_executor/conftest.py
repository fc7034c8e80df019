"""Tiny KFP pipelines for the spec executor's engine tests, compiled per test session.

Each component is a few lines of Python started the way Vertex starts it (`kfp.dsl.executor_main` from the
compiled command), so a test runs in seconds; what each pipeline is for is in its docstring.
"""


import datetime as dt
from pathlib import Path
from typing import Callable, List

import pytest
from kfp import compiler, dsl

from ops.spec_executor.runner import RunSpecOptions

PIPELINE_ROOT = "gs://engine-tests/root"
SCHEDULE_TIME = dt.datetime(2026, 3, 4, 3, 0, tzinfo=dt.timezone.utc)


def _component(function: Callable) -> Callable:
    return dsl.component(function, base_image="python:3.11", install_kfp_package=False)


def make_rows(rows: int, window_end: str, fail_marker: str, rows_out: dsl.Output[dsl.Dataset]) -> str:
    """Writes `rows` lines; fails while the file `fail_marker` exists (so a test can make one run fail)."""
    import os

    if os.path.exists(fail_marker):
        raise RuntimeError(f"{fail_marker} exists")
    with open(rows_out.path, "w") as out:
        out.write("".join(f"{window_end} {i}\n" for i in range(rows)))
    return window_end


def count_rows(rows_in: dsl.Input[dsl.Dataset]) -> int:
    with open(rows_in.path) as data:
        return len(data.read().splitlines())


def fail_once(marker: str) -> str:
    """Fails on its first attempt (it leaves `marker`), succeeds on the next."""
    import os
    import tempfile

    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("first attempt fails")
    return tempfile.gettempdir()


def always_fail(message: str) -> str:
    raise RuntimeError(message)


def maybe_fail(fail: bool, count: int) -> int:
    if fail:
        raise RuntimeError(f"asked to fail after counting {count}")
    return count


def record_status(status: dsl.PipelineTaskFinalStatus, path: str):
    """An exit task in plain Python: writes what kfp's executor parsed from the final status."""
    import json

    with open(path, "w") as out:
        json.dump({"state": status.state, "task": status.pipeline_task_name, "job": status.pipeline_job_resource_name,
                   "error": status.error_message}, out)


def resume_from_checkpoint(seen: str) -> str:
    """A custom-job trainer: the first attempt leaves a checkpoint under AIP_CHECKPOINT_DIR and fails; the
    retry finds it there. Every attempt appends its AIP_CHECKPOINT_DIR to `seen`."""
    import os

    checkpoints = os.environ["AIP_CHECKPOINT_DIR"]
    with open(seen, "a") as out:
        out.write(checkpoints + "\n")
    checkpoint = os.path.join(checkpoints, "ckpt-1")
    if not os.path.exists(checkpoint):
        os.makedirs(checkpoints, exist_ok=True)
        open(checkpoint, "w").close()
        raise RuntimeError("preempted after the first checkpoint")
    return checkpoint


def total(values: List[int], datasets: dsl.Input[List[dsl.Dataset]]) -> str:
    """A fan-in through dsl.Collected: the iterations' counts and every iteration's artifact."""
    lines = 0
    for dataset in datasets:
        with open(dataset.path) as data:
            lines += len(data.read().splitlines())
    return f"{sum(values)} counted, {lines} read from {len(datasets)} datasets"


def sleep_for(seconds: int) -> int:
    import time

    time.sleep(seconds)
    return seconds


def hold_temp_dir(seconds: int) -> str:
    """Writes a file in its TMPDIR, waits (at most `seconds`) for the file named by `ENGINE_TEST_RELEASE` in its
    environment, and fails when its own temp file was removed meanwhile."""
    import os
    import tempfile
    import time

    mine = os.path.join(tempfile.gettempdir(), "held")
    open(mine, "w").close()
    deadline = time.monotonic() + seconds
    while not os.path.exists(os.environ["ENGINE_TEST_RELEASE"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not os.path.exists(mine):
        raise RuntimeError(f"{mine} was removed while the task ran")
    return mine


def branch_rows(branch: str, label: str, rows_out: dsl.Output[dsl.Dataset]):
    """One branch of a dsl.If/Elif/Else: a line naming the branch that ran and the item's label."""
    with open(rows_out.path, "w") as out:
        out.write(f"{branch}:{label}\n")


def relabel(rows_in: dsl.Input[dsl.Dataset], rows_out: dsl.Output[dsl.Dataset]) -> int:
    """The per-item step after a dsl.OneOf: copies the chosen branch's rows and counts them."""
    with open(rows_in.path) as data:
        lines = data.read().splitlines()
    with open(rows_out.path, "w") as out:
        out.write("".join(f"{line}\n" for line in lines))
    return len(lines)


make_rows_op = _component(make_rows)
branch_rows_op = _component(branch_rows)
relabel_op = _component(relabel)
sleep_op = _component(sleep_for)
hold_temp_dir_op = _component(hold_temp_dir)
total_op = _component(total)
count_rows_op = _component(count_rows)
fail_once_op = _component(fail_once)
always_fail_op = _component(always_fail)
maybe_fail_op = _component(maybe_fail)
record_status_op = _component(record_status)
resume_op = _component(resume_from_checkpoint)


@dsl.pipeline(name="cached-window")
def cached_window(rows: int = 3, fail_marker: str = "/nonexistent"):
    """Two steps; the first reads only the schedule time (as the retraining pipeline's preprocess does)."""
    made = make_rows_op(rows=rows, window_end=dsl.PIPELINE_JOB_SCHEDULE_TIME_UTC_PLACEHOLDER, fail_marker=fail_marker)
    count_rows_op(rows_in=made.outputs["rows_out"]).set_caching_options(False)


@dsl.pipeline(name="retried")
def retried(marker: str):
    fail_once_op(marker=marker).set_retry(num_retries=2, backoff_duration="30s", backoff_factor=2.0,
                                          backoff_max_duration="3600s").set_caching_options(False)


@dsl.pipeline(name="retried-out")
def retried_out():
    always_fail_op(message="never works").set_retry(num_retries=1, backoff_duration="1s").set_caching_options(False)


@dsl.pipeline(name="count-nested")
def count_nested(rows_in: dsl.Input[dsl.Dataset]) -> int:
    """A nested pipeline: an artifact in, a parameter out (through dag.outputs)."""
    return count_rows_op(rows_in=rows_in).set_caching_options(False).output


@dsl.pipeline(name="notified")
def notified(fail: bool = False, rows: int = 4):
    """The retraining pipeline's shape: an ExitHandler with GCPC's e-mail op around the work, a nested DAG."""
    from google_cloud_pipeline_components.v1.vertex_notification_email import VertexNotificationEmailOp

    notify = VertexNotificationEmailOp(recipients=["oncall@example.com"])
    with dsl.ExitHandler(notify, name="daily-run"):
        made = make_rows_op(rows=rows, window_end="2026-03-04T03:00:00Z", fail_marker="/nonexistent")
        counted = count_nested(rows_in=made.outputs["rows_out"])
        maybe_fail_op(fail=fail, count=counted.output).set_caching_options(False)


@dsl.pipeline(name="status-handler")
def status_handler(path: str):
    with dsl.ExitHandler(record_status_op(path=path)):
        maybe_fail_op(fail=True, count=1)


@dsl.pipeline(name="custom-job-retry")
def custom_job_retry(seen: str):
    from google_cloud_pipeline_components.v1.custom_job import create_custom_training_job_from_component

    train = create_custom_training_job_from_component(
        resume_op, display_name="train", machine_type="n1-standard-4",
        base_output_directory=f"{PIPELINE_ROOT}/custom-jobs/train")
    train(seen=seen).set_retry(num_retries=1).set_caching_options(False)


@dsl.pipeline(name="fan-in")
def fan_in(sizes: List[int] = [1, 2, 3]):  # noqa: B006 (a KFP pipeline default is a literal, read once)
    """dsl.ParallelFor over a pipeline parameter, fanned in with dsl.Collected; a loop over dicts by field."""
    with dsl.ParallelFor(sizes) as size:
        made = make_rows_op(rows=size, window_end="w", fail_marker="/nonexistent").set_caching_options(False)
        counted = count_rows_op(rows_in=made.outputs["rows_out"]).set_caching_options(False)
    total_op(values=dsl.Collected(counted.output), datasets=dsl.Collected(made.outputs["rows_out"]))
    with dsl.ParallelFor([{"rows": 2}, {"rows": 5}]) as spec:
        count_rows_op(rows_in=make_rows_op(rows=spec.rows, window_end="v", fail_marker="/nonexistent")
                      .set_caching_options(False).outputs["rows_out"]).set_caching_options(False)


BRANCH_ITEMS = [{"kind": "a", "label": "first", "display_name": "a · first"}, {"kind": "b", "label": "second"},
                {"kind": "c", "label": "third"}]


@dsl.pipeline(name="branches")
def branches(items: list = BRANCH_ITEMS):
    """adrank's fan-out and fan-in: one loop over dict items, each item's kind choosing its branch
    (dsl.If/Elif/Else), dsl.OneOf of the branches' outputs, a step per item, dsl.Collected into one step."""
    with dsl.ParallelFor(items) as item:
        with dsl.If(item.kind == "a", name="kind a"):
            a = branch_rows_op(branch="a", label=item.label).set_caching_options(False)
        with dsl.Elif(item.kind == "b"):
            b = branch_rows_op(branch="b", label=item.label).set_caching_options(False)
        with dsl.Else():
            c = branch_rows_op(branch="c", label=item.label).set_caching_options(False)
        chosen = dsl.OneOf(a.outputs["rows_out"], b.outputs["rows_out"], c.outputs["rows_out"])
        copied = relabel_op(rows_in=chosen).set_caching_options(False)
    total_op(values=dsl.Collected(copied.outputs["Output"]), datasets=dsl.Collected(copied.outputs["rows_out"])) \
        .set_caching_options(False)


@dsl.pipeline(name="sleeper")
def sleeper(seconds: int = 120):
    sleep_op(seconds=seconds).set_caching_options(False)


@dsl.pipeline(name="temp-holder")
def temp_holder(seconds: int = 60):
    hold_temp_dir_op(seconds=seconds).set_caching_options(False)


PIPELINES = {pipeline.name: pipeline for pipeline in (cached_window, retried, retried_out, notified, status_handler,
                                                      custom_job_retry, sleeper, fan_in, branches, temp_holder)}


@pytest.fixture(scope="session")
def compiled(tmp_path_factory) -> Callable[[str], Path]:
    """`compiled("cached-window")` → the path of that pipeline's compiled YAML (compiled once per session)."""
    directory = tmp_path_factory.mktemp("specs")
    done: dict[str, Path] = {}

    def compile_pipeline(name: str) -> Path:
        if name not in done:
            done[name] = directory / f"{name}.yaml"
            compiler.Compiler().compile(PIPELINES[name], str(done[name]))
        return done[name]

    return compile_pipeline


@pytest.fixture
def options() -> Callable[..., RunSpecOptions]:
    """`options(root, hour=..., **changes)`: a job created at `hour` o'clock, scheduled at SCHEDULE_TIME."""
    def make(root: Path, hour: int = 4, **changes) -> RunSpecOptions:
        values = dict(root=root, project="engine-tests", location="us-central1", pipeline_root=PIPELINE_ROOT,
                      create_time=SCHEDULE_TIME.replace(hour=hour), schedule_time=SCHEDULE_TIME,
                      sleep=lambda seconds: None)
        values.update(changes)
        return RunSpecOptions(**values)  # type: ignore[arg-type]

    return make
