"""The retraining pipeline a schedule runs, compiled from configs/vertex.yaml as a user would: one training task,
caching that can match from one run to the next, a retry policy on every task, an e-mail exit handler, sized fan-in
steps and its cost beside the benchmark's; bad input fails at load naming the field."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import yaml
from google.protobuf import json_format

from configs import load_config
from foundation.canonical_json import canonical_json
from ops.cli import main
from pipelines.ranking import create_pipeline
from tests.support.compiled_spec import spec_tasks

VERTEX_CONFIG = Path(__file__).parents[2] / "configs" / "vertex.yaml"
# What differs on every run: in a cached task's inputs, any of these keeps Vertex's cache from ever matching.
RUN_UNIQUE = ("pipeline_job_uuid", "pipeline_task_uuid", "pipeline_job_create_time_utc", "pipeline_job_name",
              "pipeline_job_resource_name")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[dict, dict, str, str]:
    """(retraining spec, benchmark spec, what compiling each printed)."""
    directory = tmp_path_factory.mktemp("retraining")
    outputs = {}
    for pipeline in ("retraining", "benchmark"):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert main(["compile", "--config", str(VERTEX_CONFIG), "--pipeline", pipeline, "--allow-image-tags",
                         "--output", str(directory / f"{pipeline}.yaml")]) == 0
        outputs[pipeline] = (yaml.safe_load((directory / f"{pipeline}.yaml").read_text()), printed.getvalue())
    return outputs["retraining"][0], outputs["benchmark"][0], outputs["retraining"][1], outputs["benchmark"][1]



def _effective_inputs(spec: dict, task: dict) -> str:
    """The task's inputs and its component's input defaults (a CustomJob's worker pools, output directory, ...)."""
    component = spec["components"][task["componentRef"]["name"]]
    defaults = component.get("inputDefinitions", {}).get("parameters", {})
    return canonical_json([task.get("inputs", {}), defaults])


def test_exactly_one_training_task_of_the_retraining_target(compiled):
    retraining, benchmark, _, _ = compiled
    trains = {name: task for name, task in spec_tasks(retraining).items() if name.startswith("train")}
    assert list(trains) == ["train-step"]
    target = trains["train-step"]["inputs"]["parameters"]["target"]["runtimeValue"]["constant"]
    assert target == load_config(VERTEX_CONFIG).retraining.target == "tpu-v5e-4"
    assert {"preprocess-files-step", "report-step", "promote-step"} <= set(spec_tasks(retraining))
    runs = retraining["root"]["inputDefinitions"]["parameters"]["training_runs"]["defaultValue"]
    assert [(item["target"], item["run_index"]) for item in runs] == [("tpu-v5e-4", "0")]
    # the benchmark: one training task per target (a branch of the runs loop), 5 runs of each as loop items
    assert sum(name.startswith("train") for name in spec_tasks(benchmark)) == 13
    assert len(benchmark["root"]["inputDefinitions"]["parameters"]["training_runs"]["defaultValue"]) == 65
    assert "promote-step" not in spec_tasks(benchmark)  # benchmark.promote is false


def test_no_run_unique_placeholder_in_any_cached_task(compiled):
    for spec in compiled[:2]:
        cached = {name: task for name, task in spec_tasks(spec).items()
                  if task.get("cachingOptions", {}).get("enableCache")}
        assert {"preprocess-files-step", "report-step", "record-run-step"} <= set(cached)
        assert any(n.startswith("train") for n in cached)
        for name, task in cached.items():
            inputs = _effective_inputs(spec, task)
            assert not [p for p in RUN_UNIQUE if p in inputs], name
    tasks = spec_tasks(compiled[0])
    window = tasks["resolve-window-step"]["inputs"]["parameters"]
    assert window["scheduled_time"]["runtimeValue"]["constant"] == "{{$.pipeline_job_schedule_time_utc}}"
    assert "resolve-window-step" not in cached  # what it falls back to (the time it runs) is run-unique
    preprocess = tasks["preprocess-files-step"]["inputs"]["parameters"]
    assert set(preprocess) == {"preprocess_config_json", "window_end", "beam_args_json"}


def test_every_task_retries_as_the_config_says(compiled):
    retry = load_config(VERTEX_CONFIG).retry
    expected = {"maxRetryCount": retry.max_retries, "backoffDuration": f"{retry.backoff_seconds}s",
                "backoffFactor": retry.backoff_factor, "backoffMaxDuration": f"{retry.max_backoff_seconds}s"}
    for spec in compiled[:2]:
        tasks = spec_tasks(spec)
        plain = {name: task for name, task in tasks.items()
                 if "dag" not in spec["components"][task["componentRef"]["name"]]}  # not the exit handler's group
        assert len(plain) >= 5
        for name, task in plain.items():
            assert task.get("retryPolicy") == expected, name


def test_an_email_exit_handler_wraps_the_pipeline(compiled):
    for spec in compiled[:2]:
        root = spec["root"]["dag"]["tasks"]
        assert set(root) == {"exit-handler-1", "vertex-pipelines-notification-email"}
        notify = root["vertex-pipelines-notification-email"]
        assert notify["triggerPolicy"]["strategy"] == "ALL_UPSTREAM_TASKS_COMPLETED"  # runs after a failure too
        status = notify["inputs"]["parameters"]["pipeline_task_final_status"]
        assert status == {"taskFinalStatus": {"producerTask": "exit-handler-1"}}
        recipients = notify["inputs"]["parameters"]["recipients"]["runtimeValue"]["constant"]
        assert recipients == ["ads-ranking-oncall@example.com"]
        executor = spec["deploymentSpec"]["executors"]["exec-vertex-pipelines-notification-email"]["container"]
        assert "vertex_notification_email" in " ".join(executor["command"])


def test_report_and_promotion_declare_their_resources(compiled):
    executors = compiled[0]["deploymentSpec"]["executors"]
    report, promote = executors["exec-report-step"]["container"], executors["exec-promote-step"]["container"]
    assert (report["resources"]["resourceCpuLimit"], report["resources"]["resourceMemoryLimit"]) == ("4", "16G")
    assert (promote["resources"]["resourceCpuLimit"], promote["resources"]["resourceMemoryLimit"]) == ("8", "32G")


def test_compile_prints_what_one_run_costs(compiled):
    """The whole run: training, Dataflow (workers × machine × hours), the CPU steps and the run fee."""
    _, _, retraining_out, benchmark_out = compiled
    assert ("estimated cost of one retraining run: $34.68 (training $6.00, Dataflow up to $28.36, CPU steps $0.29, "
            "run fee $0.03; every figure an estimate)") in retraining_out
    assert "train tpu-v5e-4: 1 × 1.25 h × $4.80/h (targets[].price_per_hour) = $6.00" in retraining_out
    # 50 × n2-standard-8 (8 vCPU, 32 GB, 100 GB disk) at 0.056/vCPU-h + 0.003557/GB-h + 0.000054/disk GB-h
    assert ("  Dataflow: up to 50 × n2-standard-8 workers × 1 h (default: set vertex.cost.preprocess_expected_hours) "
            "× $0.567/h (list price as of 2026-11-27) = $28.36") in retraining_out
    assert "  promote model: 1 × e2-standard-8 × 0.1 h × $0.308/h = $0.03" in retraining_out
    assert "  run fee: $0.03 per pipeline run (Vertex AI Pipelines)" in retraining_out
    assert "estimated cost of one benchmark run: $771.10 (training $740.02, Dataflow up to $28.36" in benchmark_out
    assert "train cpu: 5 × 10 h × $0.76/h (targets[].price_per_hour) = $38.00" in benchmark_out
    assert "  run directory: 65 × e2-standard-4" in benchmark_out and "  record run: 65 × " in benchmark_out
    assert "  export: 30 × e2-standard-4" in benchmark_out  # the JAX targets' runs, each exported by TensorFlow
    # a sweep point: N times the price for 1/N of the hours
    assert ("train tpu-v5e-4-x16: 5 × 0.078125 h (tpu-v5e-4's hours / 16: perfect scaling assumed) × $76.80/h "
            "(targets[].price_per_hour) = $30.00") in benchmark_out


def test_the_priced_steps_are_the_compiled_tasks(compiled):
    """`pipelines.run_cost` lists the CPU tasks `pipelines.ranking` builds; both pipelines' compiled specs hold
    exactly those (the training tasks, priced from their targets, and the groups aside)."""
    from pipelines.run_cost import planned_steps

    config = load_config(VERTEX_CONFIG)
    for spec, pipeline, runs, promote, jax_runs in ((compiled[0], "retraining", 1, True, 0),
                                                    (compiled[1], "benchmark", 65, False, 30)):
        executors = spec["deploymentSpec"]["executors"]
        compiled_steps = {name for name, task in spec_tasks(spec).items()
                          if "dag" not in spec["components"][task["componentRef"]["name"]]
                          and not name.startswith("train")}
        displayed = {spec_tasks(spec)[name]["taskInfo"]["name"] for name in compiled_steps}
        assert displayed == {name for name, _, _ in planned_steps(config, runs, promote, jax_runs)}, pipeline
        assert len(executors) >= len(compiled_steps)


def test_locally_the_retraining_pipeline_has_no_exit_handler_or_retries():
    """The local backend compiles no exit handler: `adrank retrain` runs the same steps without one."""
    pipeline = create_pipeline(load_config(), "local", pipeline="retraining", window_end="2026-01-04T00:00:00Z")
    tasks = pipeline.pipeline_spec.root.dag.tasks
    assert sorted(t.task_info.name for t in tasks.values()) == [
        "generate logs", "preprocess", "promote model", "report", "training runs"]
    spec = json_format.MessageToDict(pipeline.pipeline_spec)
    assert [item["display_name"] for item in spec["root"]["inputDefinitions"]["parameters"]["training_runs"]
            ["defaultValue"]] == ["cpu · run 1"]
    assert {name for name in spec_tasks(spec)} >= {"train-step", "record-run-step"}
    assert not any("retryPolicy" in task for task in spec_tasks(spec).values())


@pytest.mark.parametrize(("overrides", "field", "message"), [
    (["retraining.target=tpu-v9"], "retraining.target", "'tpu-v9' is not one of the targets"),
    (["vertex.notify_emails=[oncall.example.com]"], "vertex.notify_emails",
     "'oncall.example.com' is not an e-mail address"),
    (["vertex.notify_emails=[a@example.com, b@example.com, c@example.com, d@example.com]"], "vertex.notify_emails",
     "at most 3 items"),
    (["retry.max_retries=11"], "retry.max_retries", "less than or equal to 10"),
    (["retry.max_retries=-1"], "retry.max_retries", "greater than or equal to 0"),
    (["retry.max_backoff_seconds=7200"], "retry.max_backoff_seconds", "less than or equal to 3600"),
    (["targets.1.vertex.expected_hours=0"], "targets.1.vertex.expected_hours", "greater than 0"),
])
def test_bad_input_fails_at_load_naming_the_field(tmp_path, capsys, overrides, field, message):
    args = [arg for override in overrides for arg in ("--set", override)]
    assert main(["compile", "--config", str(VERTEX_CONFIG), "--pipeline", "retraining", *args, "--allow-image-tags",
                 "--output", str(tmp_path / "spec.yaml")]) == 2
    err = capsys.readouterr().err
    assert f"{field}: " in err and message in err, err
    assert not (tmp_path / "spec.yaml").exists()


def test_the_retraining_pipeline_needs_a_production_target(tmp_path, capsys):
    args = ["--config", str(VERTEX_CONFIG), "--set", "retraining.target=null", "--set", "runs_per_target=1",
            "--allow-image-tags"]
    assert main(["compile", *args, "--pipeline", "retraining", "--output", str(tmp_path / "r.yaml")]) == 2
    assert "error: retraining.target: config 'adrank-daily' names no production target" in capsys.readouterr().err
    assert main(["compile", *args, "--output", str(tmp_path / "b.yaml")]) == 0  # the benchmark needs none
