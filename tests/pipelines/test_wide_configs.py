"""A config of any width reaches its steps: each step's slice travels as one parameter that stays far below Linux's
131,072 bytes per command-line argument (the executor input is one argument on Vertex and here), compressed when
wide (`configs.slices`), and decodes to the very slice the config cuts. With 5,000 features the whole DAG runs
through `adrank run` (test_wide_config_run.py) and the compiled Vertex spec through `adrank run-spec`
(test_wide_config_spec_run.py)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from configs import load_config
from configs.slices import COMPRESSED_PREFIX, PreprocessStepConfig, TrainStepConfig
from ops.cli import main
from tests.support.paths import CONFIGS

MAX_ARG_STRLEN = 131_072  # Linux: the longest single argument execve accepts


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
    config_path = wide_config(CONFIGS / "vertex.yaml", tmp_path / "wide.yaml", 5000)
    config = load_config(config_path)
    output = tmp_path / "wide-vertex.yaml"
    assert main(["compile", "--config", str(config_path), "--backend", "vertex", "--output", str(output),
                 "--allow-image-tags"]) == 0
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
