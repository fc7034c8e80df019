"""The compiled DAG: tasks, display names, fan-in, and that the YAML is a valid PipelineSpec."""

import json

import pytest
import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from configs import load_config
from configs.slices import ReportStepConfig
from ops.cli import main
from pipelines.fan_in import summary_input_name
from pipelines.ranking import create_pipeline, targets_for, train_display_name


def compile_to_dict(tmp_path, *cli_args):
    output = tmp_path / "pipeline.yaml"
    assert main(["compile", *cli_args, "--output", str(output)]) == 0
    documents = list(yaml.safe_load_all(output.read_text()))
    return documents[0], output


def test_local_compile_has_every_step_and_one_input_per_run(tmp_path):
    spec, output = compile_to_dict(tmp_path, "--backend", "local", "--set", "runs_per_target=4")
    pipeline_spec = json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
    tasks = pipeline_spec.root.dag.tasks
    names = sorted(task.task_info.name for task in tasks.values())
    trains = [train_display_name(target, i) for target in ("cpu", "cpu-ps") for i in range(4)]
    # the benchmark promotes nothing unless benchmark.promote (docs/daily_retraining.md)
    assert names == sorted(["generate logs", "preprocess", "report"] + trains)
    report = next(t for t in tasks.values() if t.task_info.name == "report")
    fed = {name for name in report.inputs.artifacts if name.startswith("summary_cpu_run")}
    assert fed == {summary_input_name("cpu", i) for i in range(4)} == {f"summary_cpu_run_{n}" for n in (1, 2, 3, 4)}
    for name in fed:  # each input is fed by the training task of the same target and run
        producer = report.inputs.artifacts[name].task_output_artifact.producer_task
        assert tasks[producer].task_info.name == train_display_name("cpu", int(name.rsplit("_", 1)[1]) - 1)
    producers = {report.inputs.artifacts[name].task_output_artifact.producer_task for name in fed}
    assert len(producers) == 4  # each run feeds its own input


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
    names = {t.task_info.name for t in pipeline.pipeline_spec.root.dag.tasks.values()}
    assert train_display_name("cpu", 0) in names
    assert not any("tpu" in name for name in names)


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
    report = next(t for t in pipeline.pipeline_spec.root.dag.tasks.values() if t.task_info.name == "report")
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
        return {t.task_info.name for t in pipeline.pipeline_spec.root.dag.tasks.values() if t.task_info.name.startswith("train")}

    assert not any("gpu-local" in name for name in trained({"CPU"}))
    assert train_display_name("gpu-local", 0) in trained({"CPU", "GPU"})


def test_vertex_compile_carries_the_dataflow_options_as_a_parameter(tmp_path):
    # without notify_emails every task is in the root DAG (tests/pipelines/test_vertex_compile.py walks the e-mail
    # exit handler's nested DAG)
    spec, _ = compile_to_dict(tmp_path, "--config", "configs/vertex.yaml", "--backend", "vertex",
                              "--set", "vertex.notify_emails=[]")
    pipeline_spec = json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
    preprocess = next(t for t in pipeline_spec.root.dag.tasks.values() if t.task_info.name == "preprocess")
    args = json.loads(preprocess.inputs.parameters["beam_args_json"].runtime_value.constant.string_value)
    assert "--runner=DataflowRunner" in args
    config = load_config("configs/vertex.yaml")
    assert f"--project={config.preprocess.dataflow.project}" in args
    assert any(arg.startswith("--temp_location=gs://") for arg in args)
    trains = [t for t in pipeline_spec.root.dag.tasks.values() if t.task_info.name.startswith("train")]
    kinds = {t.kind for t in config.targets}
    assert {"tpu", "gpu", "cpu-ps"} <= kinds
    assert len(trains) == len(config.targets) * config.runs_per_target == len(config.targets) * 5
    report = next(t for t in pipeline_spec.root.dag.tasks.values() if t.task_info.name == "report")
    assert len([a for a in report.inputs.artifacts if a.startswith("summary_")]) == len(trains)


def test_a_config_with_history_features_compiles_for_vertex_and_dataflow_computes_them(tmp_path):
    # kind: history features are computed in preprocess (Beam), so on Vertex they run on Dataflow with the rest
    history = "{name: user_history, kind: history, ids: [user_id], windows_hours: [24, 72], smoothing_prior: 200}"
    spec, _ = compile_to_dict(tmp_path, "--config", "configs/vertex.yaml", "--backend", "vertex",
                              "--set", "vertex.notify_emails=[]", "--set", f"features.9={history}")
    pipeline_spec = json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
    preprocess = next(t for t in pipeline_spec.root.dag.tasks.values() if t.task_info.name == "preprocess")
    args = json.loads(preprocess.inputs.parameters["beam_args_json"].runtime_value.constant.string_value)
    assert "--runner=DataflowRunner" in args
    constants = json.dumps(json_format.MessageToDict(preprocess.inputs))
    assert "user_history" in constants and "windows_hours" in constants
