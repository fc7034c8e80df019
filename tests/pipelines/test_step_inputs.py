"""Each step gets only the config it reads; the report's signature is fixed, whatever the targets and runs."""

import json
import re
import tempfile
from pathlib import Path

import pytest
import yaml

from components.preprocess.beam_options import (
    beam_pipeline_args,
    compiled_beam_args,
    dataflow_job_name,
    with_run_job_name,
)
from configs import config_hash, load_config
from configs.slices import PreprocessStepConfig, PromoteStepConfig, ReportStepConfig, TrainStepConfig
from foundation.canonical_json import canonical_json
from ops.cli import main
from pipelines.steps import report_step

VERTEX_CONFIG = Path(__file__).parents[2] / "configs" / "vertex.yaml"


def _compiled_tasks(tmp_path: Path, *overrides: str) -> dict[str, dict]:
    output = tmp_path / f"ranking-{len(list(tmp_path.iterdir()))}.yaml"
    args = [arg for override in overrides for arg in ("--set", override)]
    assert main(["compile", "--config", str(VERTEX_CONFIG), "--backend", "vertex", "--allow-image-tags", *args,
                 "--output", str(output)]) == 0
    spec = yaml.safe_load(output.read_text())
    tasks, dags = {}, [spec["root"]["dag"]]
    while dags:  # the root DAG's tasks and those nested in it (the e-mail exit handler's body)
        for name, task in dags.pop()["tasks"].items():
            tasks[name] = task
            if "dag" in spec["components"][task["componentRef"]["name"]]:
                dags.append(spec["components"][task["componentRef"]["name"]]["dag"])
    return tasks


def _inputs(task: dict) -> str:
    return canonical_json(task["inputs"])


def test_a_report_change_leaves_preprocess_and_training_inputs_byte_identical(tmp_path):
    before = _compiled_tasks(tmp_path)
    after = _compiled_tasks(tmp_path, "report.baseline_target=gpu-a100x4")
    assert before.keys() == after.keys()
    steps = [name for name in before if name.startswith(("preprocess", "train"))]
    # preprocess, and one training task per target (a branch of the runs loop; a scale sweep's points are targets)
    assert len(steps) == 1 + len(load_config(VERTEX_CONFIG).targets)
    for name in steps:
        assert _inputs(before[name]) == _inputs(after[name]), name
    assert _inputs(before["report-step"]) != _inputs(after["report-step"])


def test_a_training_change_leaves_preprocessing_alone(tmp_path):
    before = _compiled_tasks(tmp_path)
    after = _compiled_tasks(tmp_path, "training.epochs=7")
    assert _inputs(before["preprocess-files-step"]) == _inputs(after["preprocess-files-step"])
    trains = [name for name in before if name.startswith("train")]
    assert all(_inputs(before[name]) != _inputs(after[name]) for name in trains)


def test_slices_hold_only_their_sections():
    config = load_config(VERTEX_CONFIG)
    preprocess = json.loads(PreprocessStepConfig.of(config).to_json())
    assert set(preprocess) == {"name", "seed", "logs", "tasks", "split", "features", "preprocess"}
    train = TrainStepConfig.of(config, "gpu-a100x4")
    assert set(json.loads(train.to_json())) == {"name", "seed", "model", "training", "targets", "features"}
    assert train.target("gpu-a100x4") == config.target("gpu-a100x4")
    assert train.batch_size(train.targets[0]) == config.batch_size(config.target("gpu-a100x4"))
    with pytest.raises(KeyError, match="for target 'gpu-a100x4'"):
        train.target("cpu")
    for labelled in (ReportStepConfig.of(config), PromoteStepConfig.of(config)):
        assert labelled.config_hash == config_hash(config)  # reports and registry labels keep the full hash
    assert ReportStepConfig.of(config).target("gpu-a100x4") == config.target("gpu-a100x4")


def test_the_report_signature_is_fixed_and_no_component_source_is_generated(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    specs = []
    for runs in ("2", "3"):
        output = tmp_path / "out" / f"local-{runs}.yaml"
        output.parent.mkdir(exist_ok=True)
        assert main(["compile", "--backend", "local", "--set", f"runs_per_target={runs}", "--output",
                     str(output)]) == 0
        specs.append(yaml.safe_load(output.read_text()))
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # nothing written beside the spec
    first, second = ({name: c for name, c in spec["components"].items() if name == "comp-report-step"}
                     for spec in specs)
    assert first == second  # the report component does not depend on how many runs it collects
    report = specs[0]["deploymentSpec"]["executors"]["exec-report-step"]["container"]
    assert "def report_step(" in " ".join(report["command"])  # the package's own function, as KFP embeds it
    assert "runs: Input[List[Artifact]]" in " ".join(report["command"])
    assert "adrank generated component" not in json.dumps(specs[0])
    assert set(report_step.__annotations__) >= {"runs", "target_metrics"}


def test_the_dataflow_job_name_is_unique_per_pipeline_run_and_valid():
    config = load_config(VERTEX_CONFIG)
    args = beam_pipeline_args(config)
    first = with_run_job_name(args, config.name, "8F3a_c2e1-44")
    second = with_run_job_name(args, config.name, "9b10-77")
    names = [next(a for a in argv if a.startswith("--job_name=")) for argv in (first, second)]
    assert names[0] != names[1]
    for name in names:
        assert re.fullmatch(r"--job_name=[a-z]([-a-z0-9]*[a-z0-9])?", name)
    assert names[0] == "--job_name=adrank-daily-preprocess-8f3a-c2e1-44"
    assert [a for a in first if not a.startswith("--job_name=")] == [a for a in args if not a.startswith("--job_name=")]
    assert with_run_job_name(args, config.name, "") == args
    assert dataflow_job_name("adrank-daily") == "adrank-daily-preprocess"


def test_dataflow_gets_the_cmek_key_only_when_one_is_configured():
    config = load_config(VERTEX_CONFIG)
    key = config.vertex.encryption_spec_key_name
    assert f"--dataflow_kms_key={key}" in compiled_beam_args(config)
    assert not any(arg.startswith("--dataflow_kms_key") for arg in beam_pipeline_args(PreprocessStepConfig.of(config)))
    plain = load_config(VERTEX_CONFIG, ["vertex.encryption_spec_key_name=null"])
    assert not any(arg.startswith("--dataflow_kms_key") for arg in compiled_beam_args(plain))
