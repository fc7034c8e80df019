"""The compiled DAG: tasks, display names, the fan-out (one dsl.ParallelFor over the training runs, a dsl.If
branch per target, dsl.OneOf) and fan-in (dsl.Collected), and that the YAML is a valid PipelineSpec."""

import json

import pytest
import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from configs import load_config
from configs.slices import ReportStepConfig
from ops.cli import main
from pipelines.fan_in import TRAINING_RUNS, training_run_items
from pipelines.ranking import create_pipeline, targets_for, train_display_name
from tests.support.compiled_spec import tasks_named, training_branches

TARGET_FIELD = "inputs.parameter_values['pipelinechannel--training_runs-loop-item-subvar-target']"


def compile_to_dict(tmp_path, *cli_args):
    output = tmp_path / "pipeline.yaml"
    assert main(["compile", *cli_args, "--output", str(output)]) == 0
    documents = list(yaml.safe_load_all(output.read_text()))
    return documents[0], output


def test_local_compile_fans_out_over_every_run_and_in_with_collected(tmp_path):
    spec, output = compile_to_dict(tmp_path, "--backend", "local", "--set", "runs_per_target=4")
    pipeline_spec = json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
    tasks = pipeline_spec.root.dag.tasks
    # the benchmark promotes nothing unless benchmark.promote (docs/daily_retraining.md)
    assert sorted(task.task_info.name for task in tasks.values()) == [
        "generate logs", "preprocess", "report", "training runs"]
    # one loop over every (target, run), its items a pipeline input whose default the config gives
    items = spec["root"]["inputDefinitions"]["parameters"][TRAINING_RUNS]["defaultValue"]
    assert items == training_run_items([(t, i) for t in ("cpu", "cpu-jax", "cpu-ps") for i in range(4)])
    assert [item["display_name"] for item in items[:2]] == ["cpu · run 1", "cpu · run 2"]
    (loop_key, loop), = tasks_named(spec, "training runs")
    assert loop["parameterIterator"]["items"] == {"inputParameter": f"pipelinechannel--{TRAINING_RUNS}"}
    # a branch per target, chosen by the item's target; each trains that target with the item's run index
    branches = training_branches(spec)
    assert {target: condition for target, (condition, _) in branches.items()} == {
        "cpu": f"{TARGET_FIELD} == 'cpu'", "cpu-jax": f"!({TARGET_FIELD} == 'cpu') && {TARGET_FIELD} == 'cpu-jax'",
        "cpu-ps": f"!({TARGET_FIELD} == 'cpu') && !({TARGET_FIELD} == 'cpu-jax')"}
    for _, train in branches.values():
        assert train["inputs"]["parameters"]["run_index"]["parameterExpressionSelector"] == \
            'parseJson(string_value)["run_index"]'
    # dsl.OneOf of the branches' summaries feeds the run's record
    (_, record), = tasks_named(spec, "record run")
    oneof = record["inputs"]["artifacts"]["summary"]["taskOutputArtifact"]
    branch_group = spec["components"][f"comp-{oneof['producerTask']}"]["dag"]
    selectors = branch_group["outputs"]["artifacts"][oneof["outputArtifactKey"]]["artifactSelectors"]
    # the JAX target's branch hands on its export step's summary (the serving model written by TensorFlow)
    assert len(selectors) == 3 and {s["outputArtifactKey"] for s in selectors} == {
        "pipelinechannel--train-step-summary", "pipelinechannel--export-step-summary",
        "pipelinechannel--train-step-3-summary"}
    (_, export), = tasks_named(spec, "export")
    assert export["inputs"]["artifacts"]["trained"]["taskOutputArtifact"] == {
        "outputArtifactKey": "model", "producerTask": "train-step-2"}
    # dsl.Collected: the report takes every run's record as one list, a signature fixed whatever the config
    report = spec["root"]["dag"]["tasks"]["report-step"]
    collected = report["inputs"]["artifacts"]["runs"]["taskOutputArtifact"]
    assert collected["producerTask"] == loop_key
    loop_outputs = spec["components"][loop["componentRef"]["name"]]["dag"]["outputs"]["artifacts"]
    assert loop_outputs[collected["outputArtifactKey"]]["artifactSelectors"] == [
        {"outputArtifactKey": "run", "producerSubtask": "record-run-step"}]
    report_inputs = spec["components"]["comp-report-step"]["inputDefinitions"]["artifacts"]
    assert report_inputs["runs"]["isArtifactList"] is True and set(report_inputs) == {"examples", "runs"}
    assert set(spec["components"]["comp-report-step"]["outputDefinitions"]["artifacts"]) == {
        "report_html", "report_markdown", "summary_json", "metrics", "target_metrics", "best_roc"}


def test_the_training_run_names_are_what_the_console_shows():
    assert train_display_name("cpu", 0) == "train · cpu · run 1"
    with pytest.raises(ValueError, match="listed twice"):
        training_run_items([("cpu", 0), ("cpu", 0)])


def test_compiled_yaml_depends_only_on_the_config(tmp_path, monkeypatch):
    first, _ = compile_to_dict(tmp_path, "--backend", "local")
    monkeypatch.setenv("ADRANK_SOMETHING", "1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    second, _ = compile_to_dict(tmp_path, "--backend", "local")
    assert first == second
    changed, _ = compile_to_dict(tmp_path, "--backend", "local", "--set", "seed=99")
    assert changed != first


def test_local_backend_runs_only_cpu_targets():
    config = load_config(overrides=[
        "targets=[{name: cpu, kind: cpu}, {name: tpu-v3-8, kind: tpu}]",
    ])
    pipeline = create_pipeline(config, "local")
    spec = json_format.MessageToDict(pipeline.pipeline_spec)
    assert set(training_branches(spec)) == {"cpu"}  # one target: no branch, trained in the loop itself
    assert [item["target"] for item in spec["root"]["inputDefinitions"]["parameters"][TRAINING_RUNS]
            ["defaultValue"]] == ["cpu"] * config.runs_per_target


def test_local_backend_lists_each_target_it_leaves_out_with_the_reason():
    config = load_config(overrides=[
        "targets=[{name: cpu, kind: cpu}, {name: tpu-v3-8, kind: tpu}, {name: gpu-local, kind: gpu}, "
        "{name: gpu-or-cpu, kind: gpu, allow_cpu_fallback: true}, {name: cpu-ps, kind: cpu-ps}]",
    ])
    selection = targets_for(config, "local", local_devices={"CPU"})
    # a CPU fallback runs, on the CPU; cpu-ps starts its own cluster on this machine
    assert [t.name for t in selection.runnable] == ["cpu", "gpu-or-cpu", "cpu-ps"]
    skipped = {s.name: s for s in selection.skipped}
    assert set(skipped) == {"tpu-v3-8", "gpu-local"}
    assert "no TPU" in skipped["tpu-v3-8"].reason and skipped["tpu-v3-8"].kind == "tpu"
    assert "no GPU" in skipped["gpu-local"].reason
    with_gpu = targets_for(config, "local", local_devices={"CPU", "GPU"})
    assert [s.name for s in with_gpu.skipped] == ["tpu-v3-8"]
    assert "gpu-local" in [t.name for t in with_gpu.runnable]
    assert targets_for(config, "vertex").skipped == [] and len(targets_for(config, "vertex").runnable) == 5

    # the report step receives them with its config slice
    pipeline = create_pipeline(config, "local", local_devices={"CPU"})
    report = pipeline.pipeline_spec.root.dag.tasks["report-step"]
    sent = report.inputs.parameters["report_config_json"].runtime_value.constant.string_value
    assert [s.name for s in ReportStepConfig.model_validate_json(sent).skipped_targets] == ["tpu-v3-8", "gpu-local"]


def test_no_runnable_target_fails_naming_every_reason():
    config = load_config(overrides=["targets=[{name: tpu-v3-8, kind: tpu}]", "retraining.target=tpu-v3-8"])
    with pytest.raises(ValueError, match="tpu-v3-8 \\(tpu\\): the local backend has no TPU"):
        create_pipeline(config, "local", local_devices={"CPU"})


def test_local_backend_adds_gpu_targets_only_when_a_gpu_is_present():
    config = load_config(overrides=["targets=[{name: cpu, kind: cpu}, {name: gpu-local, kind: gpu}]"])

    def trained(devices):
        pipeline = create_pipeline(config, "local", local_devices=devices)
        return set(training_branches(json_format.MessageToDict(pipeline.pipeline_spec)))

    assert trained({"CPU"}) == {"cpu"}
    assert trained({"CPU", "GPU"}) == {"cpu", "gpu-local"}


def test_vertex_compile_carries_the_dataflow_options_as_a_parameter(tmp_path):
    # without notify_emails every task is in the root DAG (tests/pipelines/test_vertex_compile.py walks the e-mail
    # exit handler's nested DAG)
    spec, _ = compile_to_dict(tmp_path, "--config", "configs/vertex.yaml", "--backend", "vertex", "--allow-image-tags",
                              "--set", "vertex.notify_emails=[]")
    pipeline_spec = json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
    preprocess = next(t for t in pipeline_spec.root.dag.tasks.values() if t.task_info.name == "preprocess")
    args = json.loads(preprocess.inputs.parameters["beam_args_json"].runtime_value.constant.string_value)
    assert "--runner=DataflowRunner" in args
    config = load_config("configs/vertex.yaml")
    assert f"--project={config.preprocess.dataflow.project}" in args
    assert any(arg.startswith("--temp_location=gs://") for arg in args)
    kinds = {t.kind for t in config.targets}
    assert {"tpu", "gpu", "cpu-ps"} <= kinds
    # a branch per target (each its own CustomJob), a loop item per run, every run collected into the report
    branches = training_branches(spec)
    assert sorted(branches) == sorted(t.name for t in config.targets)  # the spec lists tasks by name, not config order
    assert branches[config.targets[-1].name][0].startswith("!(")  # the last target is the dsl.Else
    items = spec["root"]["inputDefinitions"]["parameters"][TRAINING_RUNS]["defaultValue"]
    assert len(items) == len(config.targets) * config.runs_per_target == len(config.targets) * 5
    report = spec["root"]["dag"]["tasks"]["report-step"]
    assert set(report["inputs"]["artifacts"]) == {"examples", "runs"}


def test_a_config_with_history_features_compiles_for_vertex_and_dataflow_computes_them(tmp_path):
    # kind: history features are computed in preprocess (Beam), so on Vertex they run on Dataflow with the rest
    history = "{name: user_history, kind: history, ids: [user_id], windows_hours: [24, 72], smoothing_prior: 200}"
    spec, _ = compile_to_dict(tmp_path, "--config", "configs/vertex.yaml", "--backend", "vertex", "--allow-image-tags",
                              "--set", "vertex.notify_emails=[]", "--set", f"features.9={history}")
    pipeline_spec = json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
    preprocess = next(t for t in pipeline_spec.root.dag.tasks.values() if t.task_info.name == "preprocess")
    args = json.loads(preprocess.inputs.parameters["beam_args_json"].runtime_value.constant.string_value)
    assert "--runner=DataflowRunner" in args
    constants = json.dumps(json_format.MessageToDict(preprocess.inputs))
    assert "user_history" in constants and "windows_hours" in constants
