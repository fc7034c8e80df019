"""Config strictness at load time: a key written twice, and counts or sizes past their upper bound."""

from pathlib import Path

import pytest

from configs import ConfigError, load_config
from configs.duplicate_keys import duplicate_keys
from configs.loader import embedded_config_path


def test_a_second_top_level_block_is_an_error_naming_the_key_and_both_lines(tmp_path):
    text = embedded_config_path().read_text()
    first_line = text.splitlines().index("training:") + 1
    path = tmp_path / "twice.yaml"
    path.write_text(text + "training:\n  epochs: 1\n")
    second_line = len(text.splitlines()) + 1
    with pytest.raises(ConfigError) as error:
        load_config(path)
    message = str(error.value)
    assert message.startswith(f"{path}: duplicate key 'training' at line {second_line} (first at line {first_line})")
    assert "\n" not in message


def test_duplicates_are_found_at_any_depth_with_their_path():
    text = (
        "name: a\n"               # 1
        "training:\n"             # 2
        "  epochs: 1\n"           # 3
        "  learning_rate: 0.1\n"  # 4
        "  epochs: 2\n"           # 5
        "targets:\n"              # 6
        "  - name: cpu\n"         # 7
        "    kind: cpu\n"         # 8
        "    name: gpu\n"         # 9
    )
    assert [(d.path, d.first_line, d.second_line) for d in duplicate_keys(text)] == [
        ("training.epochs", 3, 5), ("targets.0.name", 7, 9),
    ]


def test_the_same_key_in_different_mappings_and_merge_keys_are_not_duplicates():
    text = (
        "base: &base {epochs: 1}\n"
        "a: {<<: *base, epochs: 2}\n"
        "b: {<<: *base, epochs: 3}\n"
        "c: [{x: 1}, {x: 2}]\n"
    )
    assert duplicate_keys(text) == []


def test_every_duplicate_is_listed(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("name: a\nseed: 1\nseed: 2\nname: b\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'seed' at line 3 \(first at line 2\).*"
                                          r"duplicate key 'name' at line 4 \(first at line 1\)"):
        load_config(path)


@pytest.mark.parametrize("override, field, limit", [
    ("preprocess.output_shards=1000000000", "preprocess.output_shards", "10,000"),
    ("training.epochs=100000000000000000000000000000", "training.epochs", "10,000"),
    ("targets.0.training={epochs: 100000000000000000000000000000}", "targets.0.training.epochs", "10,000"),
    ("training.global_batch_size=1000000000", "training.global_batch_size", "16,777,216"),
    ("targets.0.global_batch_size=1000000000", "targets.0.global_batch_size", "16,777,216"),
    ("training.shuffle_buffer=10000000000", "training.shuffle_buffer", "100,000,000"),
    ("features.0.hash_buckets=10000000000", "features.0.categorical.hash_buckets", "2,147,483,647"),
    ("features.0.top_k=10000000000", "features.0.categorical.top_k", "2,147,483,647"),
    ("logs.lookback_days=100000", "logs.lookback_days", "3,660"),
    ("tasks.0.attribution_window_seconds=100000000", "tasks.0.attribution_window_seconds", "31,622,400"),
    ("split.eval_days=1000", "split.eval_days", "366"),
    ("runs_per_target=1000", "runs_per_target", "100"),
    ("logs.synthetic.impressions_per_day=1000000000", "logs.synthetic.impressions_per_day", "100,000,000"),
    ("seed=10000000000", "seed", "2,147,483,647"),
])
def test_counts_and_sizes_above_their_bound_fail_at_load_naming_the_field_and_why(override, field, limit):
    with pytest.raises(ConfigError) as error:
        load_config(overrides=[override])
    message = str(error.value)
    assert f"{field}: " in message and f"is above the upper bound {limit}: " in message
    assert "\n" not in message


def test_values_at_the_bound_load():
    config = load_config(overrides=["preprocess.output_shards=10000", "training.epochs=10000", "runs_per_target=100"])
    assert (config.preprocess.output_shards, config.training.epochs, config.runs_per_target) == (10_000, 10_000, 100)


@pytest.mark.parametrize("name", ["local.yaml", "vertex.yaml", "examples/click_log.yaml", "examples/daily.yaml",
                                  "examples/low_rate.yaml", "examples/history_low_rate.yaml",
                                  "examples/click_log_history.yaml"])
def test_every_shipped_config_is_within_the_bounds_and_has_no_duplicate_key(name):
    path = Path(embedded_config_path().parent, name)
    assert duplicate_keys(path.read_text()) == []
    load_config(path)
