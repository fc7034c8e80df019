from pathlib import Path

import pytest
import yaml

from configs import ConfigError, config_from_json, config_hash, config_to_json, load_config, with_overrides
from configs.loader import embedded_config_path
from configs.slices import TrainStepConfig
from configs.training import effective_batch_size, resolve_target


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def default_dict() -> dict:
    return yaml.safe_load(embedded_config_path().read_text())


def test_embedded_default_loads():
    config = load_config()
    assert config.name == "adrank-local"
    # synchronous on both lanes vs asynchronous on this machine's CPU; a GPU target when there is one; TPU listed as
    # skipped
    assert [(t.kind, t.backend) for t in config.targets] == [("cpu", "tensorflow"), ("cpu", "jax"),
                                                             ("cpu-ps", "tensorflow"), ("gpu", "tensorflow"),
                                                             ("tpu", "tensorflow")]
    assert config.target("cpu-ps").local_cluster_shape().model_dump() == {"workers": 2, "parameter_servers": 1}
    assert any(f.kind == "categorical_list" for f in config.features)


def test_unknown_key_fails_naming_the_field(tmp_path):
    data = default_dict()
    data["training"]["learning_rat"] = 0.1
    with pytest.raises(ConfigError, match=r"training\.learning_rat: unknown key"):
        load_config(write(tmp_path, data))


def test_bad_value_fails_naming_the_field(tmp_path):
    data = default_dict()
    data["features"][0]["hash_buckets"] = -3
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, data))
    assert "features.0.categorical.hash_buckets" in str(error.value)
    assert str(tmp_path / "config.yaml") in str(error.value)


def test_duplicate_names_fail(tmp_path):
    data = default_dict()
    data["targets"] = [{"name": "cpu", "kind": "cpu"}, {"name": "cpu", "kind": "cpu"}]
    with pytest.raises(ConfigError, match="target names must be unique"):
        load_config(write(tmp_path, data))


def test_overrides_keep_types_and_address_list_items():
    config = load_config(overrides=[
        "training.epochs=1", "model.deep_layers=[16, 8]", "targets.0.global_batch_size=1024",
        "runs_per_target=5",
    ])
    assert config.training.epochs == 1
    assert config.model.deep_layers == [16, 8]
    assert config.batch_size(config.targets[0]) == 1024
    assert config.runs_per_target == 5


def test_effective_batch_size_is_the_targets_own_else_the_training_sections():
    config = load_config(overrides=["training.global_batch_size=256", "targets.1.global_batch_size=2048"])
    plain, own = config.targets[0], config.targets[1]
    assert effective_batch_size(config.training, plain) == 256
    assert effective_batch_size(config.training, own) == 2048
    # the config, its train slice and the resolved target all answer with the one rule
    assert config.batch_size(own) == TrainStepConfig.of(config, own.name).batch_size(own) == 2048
    assert resolve_target(config.model, config.training, own).training.global_batch_size == 2048
    assert resolve_target(config.model, config.training, plain).training.global_batch_size == 256


@pytest.mark.parametrize("override, message", [
    ("training.epochs", "expected dotted.key=value"),
    ("targets.7.name=x", "must be an index below 5"),
    ("runs_per_target=0", "runs_per_target: Input should be greater than or equal to 1"),
    ("training.bogus=1", "training.bogus: unknown key"),
])
def test_bad_overrides_fail_clearly(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(overrides=[override])


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_json_round_trip_is_canonical():
    config = load_config()
    text = config_to_json(config)
    assert config_from_json(text) == config
    assert config_hash(config) == config_hash(config_from_json(text))
    assert config_hash(load_config(overrides=["seed=8"])) != config_hash(config)


@pytest.mark.parametrize("path", sorted((embedded_config_path().parent).glob("*.yaml"))
                         + sorted((embedded_config_path().parent / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_overrides_on_a_loaded_config_equal_the_same_overrides_at_load(path):
    overrides = ["promotion.local_registry=/srv/models", "seed=8"]
    assert with_overrides(load_config(path), overrides) == load_config(path, overrides)
    assert with_overrides(load_config(path), []) == load_config(path)
    with pytest.raises(ConfigError, match=r"^the replay: invalid config: seed: "):
        with_overrides(load_config(path), ["seed=-1"], "the replay")
