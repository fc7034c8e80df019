"""Nested DAGs and exit handlers in `run-spec`: a nested pipeline takes its inputs from the parent DAG and
surfaces its outputs through `dag.outputs`; an `ExitHandler`'s exit task runs after the group it guards,
whether that failed or not, with the group's `PipelineTaskFinalStatus`; GCPC's e-mail op is recorded, not sent.
`dsl.ParallelFor` runs every item and `dsl.Collected` fans the iterations in; `dsl.If`/`Elif`/`Else` choose each
item's branch and `dsl.OneOf` hands on the one that ran; a condition outside KFP's CEL subset is refused by name."""

import json
from pathlib import Path

import pytest

from ops.cli import main
from ops.spec_executor.pipeline_spec import UnsupportedSpec, load_pipeline_spec, planned_container_tasks
from ops.spec_executor.runner import run_spec

PIPELINE_ROOT = "gs://engine-tests/root"


def test_a_group_that_succeeds_notifies_succeeded_and_the_nested_dag_hands_on_its_output(compiled, options,
                                                                                           tmp_path):
    run = run_spec(compiled("notified"), options(tmp_path), report=lambda line: None)
    states = {task.task: task.state for task in run.tasks}
    assert states == {
        "exit-handler-1": "succeeded", "exit-handler-1/make-rows": "succeeded",
        "exit-handler-1/count-nested": "succeeded", "exit-handler-1/count-nested/count-rows": "succeeded",
        "exit-handler-1/maybe-fail": "succeeded", "vertex-pipelines-notification-email": "succeeded",
    }
    assert run.status == "succeeded"
    # the nested pipeline read the artifact the parent DAG's task wrote and surfaced its count
    made = run.task("exit-handler-1/make-rows").outputs["rows_out"][0]["uri"]
    assert made.startswith(f"{PIPELINE_ROOT}/0/{run.job_name}/make-rows_")
    assert run.task("exit-handler-1/count-nested").outputs["parameters"] == {"Output": 4}
    assert run.task("exit-handler-1/maybe-fail").outputs["parameters"]["Output"] == 4
    (notice,) = run.notifications
    assert notice["state"] == "SUCCEEDED" and notice["failed_tasks"] == [] and notice["sent"] is False
    assert notice["recipients"] == ["oncall@example.com"]
    written = Path(run.root) / "spec-runs" / run.job_name / "notifications" / "vertex-pipelines-notification-email.json"
    assert json.loads(written.read_text()) == notice


def test_a_failing_group_still_runs_the_exit_handler_which_names_the_failed_task(compiled, tmp_path, capsys):
    args = ["run-spec", str(compiled("notified")), "--root", str(tmp_path), "--project", "engine-tests",
            "--pipeline-root", PIPELINE_ROOT, "--create-time", "2026-03-04T04:00:00Z"]
    # a pipeline parameter cannot be set from the command line; edit the default as a submit would set it
    spec = compiled("notified").read_text().replace("fail:\n        defaultValue: false",
                                                    "fail:\n        defaultValue: true")
    failing = tmp_path / "failing.yaml"
    failing.write_text(spec)
    assert main([*args[:1], str(failing), *args[2:]]) == 2
    captured = capsys.readouterr()
    assert "failed    maybe-fail (exit-handler-1/maybe-fail)" in captured.out
    assert "succeeded vertex-pipelines-notification-email (vertex-pipelines-notification-email)" in captured.out
    assert "notified-20260304040000 failed" in captured.err
    record = json.loads((tmp_path / "spec-runs" / "notified-20260304040000" / "spec_run.json").read_text())
    assert record["status"] == "failed"
    (notice,) = record["notifications"]
    assert notice["state"] == "FAILED"
    assert [failed["task"] for failed in notice["failed_tasks"]] == ["exit-handler-1/maybe-fail"]
    # one line: how it ended and the error its log ends with
    assert notice["failed_tasks"][0]["reason"].endswith("… RuntimeError: asked to fail after counting 4")
    assert "exit-handler-1/maybe-fail" in notice["error"]["message"]
    assert notice["pipeline_job"] == "projects/0/locations/us-central1/pipelineJobs/notified-20260304040000"


def test_a_python_exit_task_receives_the_final_status_as_kfp_parses_it(compiled, options, tmp_path):
    status_file = tmp_path / "status.json"
    run = run_spec(compiled("status-handler"), options(tmp_path, parameters={"path": str(status_file)}),
                   report=lambda line: None)
    assert run.task("exit-handler-1/maybe-fail").state == "failed"
    assert run.task("record-status").state == "succeeded"
    seen = json.loads(status_file.read_text())
    assert seen["state"] == "FAILED" and seen["task"] == "exit-handler-1"
    assert seen["job"] == f"projects/0/locations/us-central1/pipelineJobs/{run.job_name}"
    assert "maybe-fail" in seen["error"] and "exited with 1" in seen["error"]


def test_a_parallel_for_runs_every_item_and_collected_fans_them_in(compiled, options, tmp_path):
    run = run_spec(compiled("fan-in"), options(tmp_path), report=lambda line: None)
    assert run.status == "succeeded", [(t.task, t.reason) for t in run.tasks if t.reason]
    total = run.task("total")
    assert total.outputs["parameters"]["Output"] == "6 counted, 6 read from 3 datasets"
    loop = run.task("for-loop-1")
    assert loop.outputs["parameters"]["pipelinechannel--count-rows-Output"] == [1, 2, 3]  # in item order
    uris = [artifact["uri"] for artifact in loop.outputs["pipelinechannel--make-rows-rows_out"]]
    assert len(set(uris)) == 3  # one artifact per iteration, each its own task id
    assert run.task("for-loop-1/iteration-2/count-rows").outputs["parameters"]["Output"] == 3
    # a loop over dicts: each iteration's `spec.rows` is the field of its item
    assert [run.task(f"for-loop-3/iteration-{i}/count-rows-2").outputs["parameters"]["Output"]
            for i in (0, 1)] == [2, 5]


def test_conditions_choose_each_items_branch_and_one_of_hands_on_the_branch_that_ran(compiled, options, tmp_path):
    run = run_spec(compiled("branches"), options(tmp_path), report=lambda line: None)
    assert run.status == "succeeded", [(t.task, t.reason) for t in run.tasks if t.reason]
    branches = "for-loop-1/iteration-{}/condition-branches-2/condition-{}"
    ran = {(i, n): run.task(branches.format(i, n)).state for i in range(3) for n in (3, 4, 5)}
    assert ran == {(0, 3): "succeeded", (0, 4): "not_triggered", (0, 5): "not_triggered",
                   (1, 3): "not_triggered", (1, 4): "succeeded", (1, 5): "not_triggered",
                   (2, 3): "not_triggered", (2, 4): "not_triggered", (2, 5): "succeeded"}
    assert "is false" in run.task(branches.format(0, 4)).reason
    total = run.task("total").outputs["parameters"]["Output"]
    assert total == "3 counted, 3 read from 3 datasets"
    collected = run.task("for-loop-1").outputs["pipelinechannel--relabel-rows_out"]
    # tasks wrote through the local paths they were handed; the job records the gs:// URIs Vertex would
    assert all(a["uri"].startswith(f"{PIPELINE_ROOT}/") for a in collected)
    assert [Path(a["uri"].replace("gs://", f"{tmp_path}/")).read_text() for a in collected] == [
        "a:first\n", "b:second\n", "c:third\n"]  # in item order, each from the branch its kind chose
    # an item's display_name field names its iteration's tasks
    assert run.task(branches.format(0, 3)).display_name == "kind a · a · first"
    assert run.task("for-loop-1/iteration-1/relabel").display_name == "relabel"
    # what a progress line counts: one branch and the step after it per item, and the fan-in
    started = [t for t in run.tasks if t.state == "succeeded" and t.attempts]
    assert planned_container_tasks(load_pipeline_spec(compiled("branches"))) == len(started) == 3 * 2 + 1


def test_a_condition_outside_what_kfp_compiles_is_refused_naming_it(compiled, tmp_path):
    text = compiled("branches").read_text().replace(
        "condition: inputs.parameter_values['pipelinechannel--items-loop-item-subvar-kind']",
        "condition: size(inputs.parameter_values['pipelinechannel--items-loop-item-subvar-kind'])", 1)
    assert "size(" in text
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    with pytest.raises(UnsupportedSpec, match=r"task 'condition-3': condition \"size\(inputs"):
        load_pipeline_spec(path)
