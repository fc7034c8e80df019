"""A config of any width reaches its steps: each step's slice travels as one parameter that stays far below Linux's
131,072 bytes per command-line argument (the executor input is one argument on Vertex and here), compressed when
wide (`configs.slices`), and decodes to the very slice the config cuts. With 5,000 features the whole DAG runs
through `adrank run` and the compiled Vertex spec through `adrank run-spec`."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from configs import load_config
from configs.slices import COMPRESSED_PREFIX, PreprocessStepConfig, TrainStepConfig
from ops.cli import main

REPO = Path(__file__).parents[2]
MAX_ARG_STRLEN = 131_072  # Linux: the longest single argument execve accepts
WIDTH = 5000
DAYS = ("2026-03-07", "2026-03-08", "2026-03-09")


def wide_features(count: int) -> list[dict]:
    """`count` features as a wide ad model has them: hashed ids, numbers, id lists."""
    kinds = [{"kind": "categorical", "encoding": "hash", "hash_buckets": 100},
             {"kind": "numeric", "normalization": "zscore"},
             {"kind": "categorical_list", "encoding": "hash", "hash_buckets": 50, "max_length": 2}]
    return [{"name": f"f{index:05d}", **kinds[index % 10 // 4]} for index in range(count)]


def wide_config(base: Path, output: Path, features: int) -> Path:
    raw = yaml.safe_load(base.read_text())
    raw["features"] = wide_features(features)
    output.write_text(yaml.safe_dump(raw))
    return output


def container_tasks(spec: dict) -> list[tuple[str, dict]]:
    """(name, task) of every task of the spec that runs a container, in nested DAGs too (branches, loops)."""
    found, dags = [], [spec["root"]["dag"]]
    while dags:
        for name, task in dags.pop()["tasks"].items():
            component = spec["components"][task["componentRef"]["name"]]
            if "dag" in component:
                dags.append(component["dag"])
            else:
                found.append((name, task))
    return found


def constant_parameters(task: dict) -> dict[str, object]:
    return {name: value["runtimeValue"]["constant"] for name, value in task["inputs"].get("parameters", {}).items()
            if "runtimeValue" in value}


def test_5000_features_compile_to_a_vertex_spec_whose_executor_inputs_fit_a_command_line(tmp_path):
    config_path = wide_config(REPO / "configs" / "vertex.yaml", tmp_path / "wide.yaml", 5000)
    config = load_config(config_path)
    output = tmp_path / "wide-vertex.yaml"
    assert main(["compile", "--config", str(config_path), "--backend", "vertex", "--output", str(output)]) == 0
    spec = yaml.safe_load(output.read_text())
    preprocess_slice = PreprocessStepConfig.of(config)
    assert len(preprocess_slice.to_json()) > 5 * MAX_ARG_STRLEN  # the slice itself would never fit

    received: dict[str, list] = {"preprocess": [], "train": []}
    for name, task in container_tasks(spec):
        parameters = constant_parameters(task)
        # what Vertex puts into `{{$}}`: every input parameter value, and artifact references of a few hundred bytes
        executor_input = json.dumps({"inputs": {"parameterValues": parameters}})
        assert len(executor_input.encode()) < MAX_ARG_STRLEN // 4, name
        if "preprocess_config_json" in parameters:
            received["preprocess"].append(PreprocessStepConfig.from_parameter(parameters["preprocess_config_json"]))
        if "train_config_json" in parameters:
            received["train"].append(TrainStepConfig.from_parameter(parameters["train_config_json"]))
    assert received["preprocess"] == [preprocess_slice]
    assert received["train"] and all(len(s.features) == 5000 for s in received["train"])
    assert sorted(s.targets[0].name for s in received["train"]) == sorted(t.name for t in config.targets)
    for train_slice in received["train"]:
        assert train_slice == TrainStepConfig.of(config, train_slice.targets[0].name)


def test_a_slice_parameter_is_its_json_until_wide_and_changes_exactly_with_its_content():
    config = load_config()
    narrow = PreprocessStepConfig.of(config)
    assert narrow.to_parameter() == narrow.to_json()  # the compiled spec (and its cache keys) as before
    wide = PreprocessStepConfig.of(config.model_validate(config.model_dump() | {"features": wide_features(2000)}))
    parameter = wide.to_parameter()
    assert parameter.startswith(COMPRESSED_PREFIX) and parameter == wide.to_parameter()
    assert PreprocessStepConfig.from_parameter(parameter) == wide
    changed = wide.model_copy(update={"seed": wide.seed + 1})
    assert changed.to_parameter() != parameter


def run_columns(count: int) -> list[dict]:
    """`count` features as the whole-DAG runs read them: hashed ids and z-scored numbers (list features cost
    tf.Transform much more per feature; `wide_features` has them for the compile)."""
    return [{"name": f"f{index:05d}", **({"kind": "numeric", "normalization": "zscore"} if index % 5 == 4 else
                                         {"kind": "categorical", "encoding": "hash", "hash_buckets": 100})}
            for index in range(count)]


@pytest.fixture(scope="module")
def wide_logs(tmp_path_factory) -> dict:
    """120 impressions over 3 days with a value for each of `WIDTH` columns, a swipe after every third."""
    directory = tmp_path_factory.mktemp("wide-logs")
    columns = run_columns(WIDTH)
    with open(directory / "impressions.jsonl", "w") as impressions, open(directory / "engagements.jsonl", "w") as events:
        for row in range(120):
            stamp = f"{DAYS[row * 3 // 120]}T{row % 24:02d}:{row % 60:02d}:00Z"
            values = {c["name"]: (float((row * j) % 11) if c["kind"] == "numeric" else f"v{(row + j) % 7}")
                      for j, c in enumerate(columns)}
            impressions.write(json.dumps({"impression_id": f"imp-{row}", "timestamp": stamp, **values}) + "\n")
            if row % 3 == 0:
                events.write(json.dumps({"impression_id": f"imp-{row}", "event_type": "swipe", "timestamp": stamp})
                             + "\n")
    return {"logs": {"source": "files", "format": "jsonl", "impressions": str(directory / "impressions.jsonl"),
                     "engagements": str(directory / "engagements.jsonl"), "max_record_bytes": 4_000_000},
            "features": columns}


def wide_run_config(base: Path, wide_logs: dict, output: Path, **sections) -> Path:
    """`base` on the wide logs: a linear model trained once for one epoch on the CPU, no promotion."""
    raw = yaml.safe_load(base.read_text())
    raw |= wide_logs | {"model": {"kind": "linear", "embedding_dim": 2}, "runs_per_target": 1,
                        "promotion": {"enabled": False}, "retraining": {"target": "cpu"},
                        "tasks": [{"name": "engagement", "event_type": "swipe"}]} | sections
    raw["training"] |= {"epochs": 1, "global_batch_size": 32, "shuffle_buffer": 1000,
                        "input_capacity_seconds": 0.25}
    output.write_text(yaml.safe_dump(raw))
    return output


def adrank(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "ops.cli", *args], cwd=cwd, capture_output=True, text=True,
                            timeout=1500)
    assert result.returncode == 0, f"adrank {args[0]} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.mark.long  # a whole DAG with 5,000 features (tf.Transform alone takes two minutes to build their graph)
@pytest.mark.e2e
def test_5000_features_run_through_adrank_run(wide_logs, tmp_path):
    config = wide_run_config(REPO / "configs" / "local.yaml", wide_logs, tmp_path / "wide.yaml",
                             targets=[{"name": "cpu", "kind": "cpu", "price_per_hour": 0.38}])
    adrank("run", "--config", str(config), "--runs-dir", "runs", "--run-id", "wide", "--quiet", cwd=tmp_path)
    run_dir = tmp_path / "runs" / "wide"
    manifest = json.loads(next(run_dir.glob("artifacts/**/manifest.json")).read_text())
    assert len(manifest["features"]) == WIDTH
    assert math.isfinite(json.loads((run_dir / "summary.json").read_text())["runs"][0]["logloss"])


@pytest.mark.long  # the compiled Vertex spec of a 5,000-feature config, every task run here as Vertex would run it
@pytest.mark.e2e
def test_5000_features_run_through_run_spec_of_the_compiled_vertex_spec(wide_logs, tmp_path):
    config = wide_run_config(REPO / "configs" / "vertex.yaml", wide_logs, tmp_path / "wide-vertex.yaml",
                             targets=[{"name": "cpu", "kind": "cpu", "price_per_hour": 0.76,
                                       "vertex": {"machine": {"machine_type": "n1-standard-16"}}}],
                             report={"baseline_target": "cpu"})
    raw = yaml.safe_load(config.read_text())
    raw["vertex"]["notify_emails"] = []
    config.write_text(yaml.safe_dump(raw))
    adrank("compile", "--config", str(config), "--backend", "vertex", "--output", "spec.yaml", cwd=tmp_path)
    adrank("run-spec", "spec.yaml", "--root", "root", "--pipeline-root", "gs://adrank-wide/root", "--project",
           "adrank-prod", "--create-time", "2026-03-10T03:00:00Z", "--direct-running-mode", "in_memory",
           "--direct-num-workers", "1", cwd=tmp_path)
    (record,) = (tmp_path / "root" / "spec-runs").glob("*/spec_run.json")
    run = json.loads(record.read_text())
    assert run["status"] == "succeeded"
    (manifest,) = (tmp_path / "root").glob("adrank-wide/root/**/manifest.json")
    assert len(json.loads(manifest.read_text())["features"]) == WIDTH
