"""Load-time validation: unreadable files, unbounded values, embedding memory, impossible labels, names."""

import re
from pathlib import Path

import pytest
import yaml

from configs import ConfigError, load_config
from configs.embedding_memory import estimate_embedding_memory
from configs.loader import embedded_config_path
from configs.training import resolve_target

REPO = Path(__file__).parents[2]


def test_a_directory_or_binary_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)
    binary = tmp_path / "latin1.yaml"
    binary.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_config(binary)


@pytest.mark.parametrize("override, field, message", [
    ("model.deep_layers=[0, -3]", "model.deep_layers.0", "greater than or equal to 1"),
    ("model.ple_tower_layers=[16, 0]", "model.ple_tower_layers.1", "greater than or equal to 1"),
    ("training.learning_rate=.inf", "training.learning_rate", "finite number"),
    ("training.learning_rate=.nan", "training.learning_rate", "finite number"),
    ("training.learning_rate=50", "training.learning_rate", "less than or equal to 10"),
    ("training.gradient_clip_norm=.inf", "training.gradient_clip_norm", "finite number"),
    ("targets.0.training.learning_rate=-.inf", "targets.0.training.learning_rate", "finite number"),
    ("model.embedding_dim=100000000", "model.embedding_dim", "less than or equal to 4096"),
    ("model.embedding_dim=1e8", "model.embedding_dim", "valid integer"),  # YAML reads 1e8 as a string
    ("features.0.hash_buckets=10000000000", "features.0.categorical.hash_buckets", "above the upper bound 2,147,483,647"),
    ("promotion.logloss_tolerance=.inf", "promotion.logloss_tolerance", "finite number"),
])
def test_unbounded_values_fail_naming_the_field(override, field, message):
    with pytest.raises(ConfigError) as error:
        load_config(overrides=[override])
    text = str(error.value)
    assert f"{field}: " in text and message in text
    assert "\n" not in text


def test_embedding_memory_over_the_limit_names_the_largest_table():
    with pytest.raises(ConfigError) as error:
        load_config(overrides=["features.0.hash_buckets=1000000000"])  # user_id: 1e9 rows × 8 × 4 B × 3
    text = str(error.value)
    assert "training.max_embedding_memory_gb: target 'cpu' needs about" in text
    assert "user_id with 1,000,000,000 rows from features.0.hash_buckets" in text
    # the same config loads when the limit is raised explicitly
    config = load_config(overrides=["features.0.hash_buckets=1000000000", "training.max_embedding_memory_gb=100"])
    assert config.features[0].hash_buckets == 10**9


def test_embedding_memory_counts_a_target_override():
    with pytest.raises(ConfigError, match="target 'cpu' needs about"):
        load_config(overrides=["targets.0.model={embedding_dim: 4096}", "features.0.hash_buckets=2000000"])


def test_embedding_memory_estimate_follows_the_formula():
    config = load_config(REPO / "configs" / "vertex.yaml")
    resolved = resolve_target(config.model, config.training, config.targets[0])
    memory = estimate_embedding_memory(config.features, resolved.model, resolved.training)
    rows = {table.feature: table.rows for table in memory.tables}
    assert rows["user_id"] == 2_000_000                      # hash_buckets
    assert rows["ad_id"] == 200_000 + 100                    # top_k + oov_buckets
    assert rows["user_interests"] == 5000 + 1 + 1            # top_k + oov + padding row of a list
    assert rows["country"] == config.training.untruncated_vocabulary_rows + 1  # the stated assumption
    assert "user_age" not in rows and "ad_bid" not in rows   # normalized numbers have no table
    slots = memory.slots_per_value
    assert memory.bytes == sum(rows.values()) * 32 * 4 * (1 + slots)
    # the production example (2M×32 + 200k×32 tables) stays well inside the default limit
    assert memory.gib < config.training.max_embedding_memory_gb / 4


def test_vocabulary_without_top_k_uses_the_configured_assumption():
    small = load_config(overrides=["training.untruncated_vocabulary_rows=10"])
    with pytest.raises(ConfigError, match=r"from training\.untruncated_vocabulary_rows \(no top_k\)"):
        load_config(overrides=["training.untruncated_vocabulary_rows=500000000"])
    assert small.training.untruncated_vocabulary_rows == 10


@pytest.mark.parametrize("override, message", [
    ("tasks.0.event_type=click", "tasks.0.event_type: 'click' never occurs in the logs (the synthetic generator"),
    ("logs.event_types=[view, install]", "tasks.0.event_type: 'swipe' never occurs in the logs"),
])
def test_a_task_whose_event_never_occurs_is_a_config_error(override, message):
    with pytest.raises(ConfigError) as error:
        load_config(overrides=[override])
    assert message in str(error.value)


def test_file_logs_check_event_types_against_logs_event_types():
    vertex = REPO / "configs" / "vertex.yaml"
    with pytest.raises(ConfigError, match=r"tasks\.1\.event_type: 'install' never occurs .*logs\.event_types is"):
        load_config(vertex, ["logs.event_types=[swipe, view]"])
    config = load_config(vertex, ["logs.event_types=[swipe, install, add_to_cart]", "tasks.1.event_type=add_to_cart"])
    assert config.tasks[1].event_type == "add_to_cart"


def test_label_source_must_match_the_label_mode():
    click_log = REPO / "configs" / "examples" / "click_log.yaml"
    with pytest.raises(ConfigError, match=r"tasks\.0\.label_column: task 'download' needs a label_column"):
        load_config(click_log, ["tasks.0={name: download, event_type: install}"])
    with pytest.raises(ConfigError, match=r"tasks\.0\.event_type: task 'engagement' needs an event_type"):
        load_config(overrides=["tasks.0={name: engagement, label_column: clicked}"])


@pytest.mark.parametrize("name, message", [
    ("a" * 64, "name: 64 characters, over 63 (the Vertex label value limit)"),
    ("ranker-", "is not a pipeline name"),
    ("Ranker", "is not a pipeline name"),
    ("9ranker", "is not a pipeline name"),
])
def test_the_config_name_must_be_a_vertex_label_value(name, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(overrides=[f"name={name}"])
    assert load_config(overrides=["name=" + "a" * 63]).name == "a" * 63


def test_every_shipped_config_still_loads():
    for path in [embedded_config_path(), *sorted((REPO / "configs").rglob("*.yaml"))]:
        data = yaml.safe_load(Path(path).read_text())
        assert load_config(path).name == data["name"]


@pytest.mark.parametrize("overrides, field, message", [
    (["features.0.encoding=learned_hash", "features.0.hash_buckets=100", "features.0.dedicated_rows=100"],
     "features.0.categorical.dedicated_rows", "must be less than hash_buckets (100)"),
    (["features.0.encoding=hash", "features.0.dedicated_rows=10"],
     "features.0.categorical.dedicated_rows", "applies to encoding learned_hash only, not hash"),
    (["features.0.encoding=learned_hash", "features.0.dedicated_rows=-1"],
     "features.0.categorical.dedicated_rows", "greater than or equal to 0"),
    (["features=[{name: tags, kind: categorical_list, encoding: learned_hash}]"],
     "features.0.categorical_list.encoding", "'hash' or 'vocabulary'"),
    (["training.calibration=isotonic"], "training.calibration", "'none', 'intercept' or 'platt'"),
    (["training.calibration=platt", "training.calibration_holdout_fraction=0.9"],
     "training.calibration_holdout_fraction", "less than or equal to 0.5"),
    (["training.calibration=intercept", "training.calibration_data=latest_train_days"],
     "training.calibration_data", "needs split.calibration_days ≥ 1"),
    (["training.calibration=intercept", "targets.0.training={calibration_data: latest_train_days}"],
     "targets.0.training.calibration_data", "needs split.calibration_days ≥ 1"),
    (["training.calibration=intercept", "training.calibration_data=latest_train_days", "split.calibration_days=4"],
     "split.calibration_days", "the synthetic logs leave 3 train days"),
    (["training.calibration_data=last_day"], "training.calibration_data", "'holdout' or 'latest_train_days'"),
    (["training.calibration_backtest=always"], "training.calibration_backtest", "'report' or 'enforce'"),
    (["targets.0.training={calibration_backtest: off}"], "targets.0.training.calibration_backtest",
     "'report' or 'enforce'"),
])
def test_learned_hash_and_calibration_settings_fail_naming_the_field(overrides, field, message):
    with pytest.raises(ConfigError) as error:
        load_config(overrides=overrides)
    assert f"{field}: " in str(error.value) and message in str(error.value)


def test_a_learned_hash_table_counts_its_rows_in_the_memory_estimate():
    config = load_config(overrides=["features.0.encoding=learned_hash", "features.0.hash_buckets=12345"])
    estimate = estimate_embedding_memory(config.features, config.model, config.training)
    (table,) = [t for t in estimate.tables if t.feature == config.features[0].name]
    assert table.rows == 12345 and table.size_field == "features.0.hash_buckets"


@pytest.mark.parametrize("overrides, message", [
    (["targets.2.backend=jax"], r"targets\.2: backend: jax has no parameter servers"),  # cpu-ps
    (["targets.0.kind=tpu", "targets.0.vertex={machine: {machine_type: ct6e-standard-4t, tpu_topology: 2x2}}"],
     r"targets\.0: vertex\.machine\.machine_type ct6e-standard-4t is TPU v6e .* JAX and PyTorch only.*backend: jax"),
    (["training.eval_every_epochs=5"], r"training\.eval_every_epochs: 5 is beyond the run's 3 epochs"),
    (["training.eval_every_epochs=0"], r"training\.eval_every_epochs: Input should be greater than or equal to 1"),
    (["training.checkpoint_every_minutes=0"], r"training\.checkpoint_every_minutes: Input should be greater than 0"),
    (["training.eval_sample_examples=0"], r"training\.eval_sample_examples: Input should be greater than or equal"),
])
def test_a_lane_or_cadence_that_cannot_run_fails_at_load_naming_the_field(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(overrides=overrides)
    if overrides == ["targets.2.backend=jax"]:  # the same target on the JAX lane as a synchronous CPU target loads
        assert load_config(overrides=["targets.2.backend=jax", "targets.2.kind=cpu", "targets.2.local_cluster=null"])


def test_an_upper_case_column_as_a_feature_name_fails_naming_the_fix_and_the_fix_loads():
    """A log whose columns are `C1`, `C14`: the error says the rule, the corrected name and the mapping that keeps
    the column; the config written as it says loads and reads the column `C14`."""
    click_log = REPO / "configs" / "examples" / "click_log.yaml"
    with pytest.raises(ConfigError) as error:
        load_config(click_log, ["features.0={name: C14, kind: categorical}"])
    assert ("features.0.categorical.name: 'C14' is not a valid feature name (lower-case letters, digits and '_', "
            "starting with a letter); name the feature 'c14', and if 'C14' is the log's column, map it: "
            "logs.impression_fields: {c14: C14}") in str(error.value)
    fixed = load_config(click_log, ["features.0={name: c14, kind: categorical}",
                                    "logs.impression_fields={timestamp: click_time, c14: C14}"])
    assert fixed.logs.impression_column(fixed.features[0].name) == "C14"


@pytest.mark.parametrize("name, suggestion", [
    ("Site-ID", "site_id"), ("app id", "app_id"), ("1st_seen", "f_1st_seen"), ("__x", "x"), ("Ünit", "unit"), ("%%", "f"),
])
def test_an_invalid_feature_name_gets_a_valid_suggestion(name, suggestion):
    with pytest.raises(ConfigError, match=re.escape(f"name the feature '{suggestion}'")):
        load_config(overrides=[f"features.0={{name: '{name}', kind: categorical}}"])


def test_an_invalid_task_name_is_named_with_its_fix():
    with pytest.raises(ConfigError, match=re.escape(
            "tasks.0.name: 'Click-Rate' is not a valid task name (lower-case letters, digits and '_', starting with "
            "a letter); name the task 'click_rate'")):
        load_config(overrides=["tasks.0.name=Click-Rate"])


@pytest.mark.parametrize("overrides, message", [
    (["logs.csv_header=none"], "logs.csv_header: none needs logs.csv_columns: the file's column names, one per "
                               "column, in file order"),
    (["logs.csv_columns=[ip, app]"], "logs.csv_columns names the columns of CSV files without a header: set "
                                     "logs.csv_header: none, or drop logs.csv_columns"),
    (["logs.csv_header=none", "logs.csv_columns=[ip, ip, click_time]"], "logs.csv_columns: 'ip' named twice"),
    (["logs.csv_header=none", "logs.csv_columns=[ip]", "logs.format=parquet"],
     "logs.csv_header: none applies to CSV files; format is parquet"),
    (["logs.csv_header=none", "logs.csv_columns=[ip]", "logs.engagement_csv_columns=[ip]"],
     "logs.engagement_csv_columns names an engagement stream's columns; label_mode outcome reads one table"),
])
def test_a_headerless_csv_needs_its_columns_named_once_each(overrides, message):
    click_log = REPO / "configs" / "examples" / "click_log.yaml"
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(click_log, overrides)
    named = load_config(click_log, ["logs.csv_header=none",
                                    "logs.csv_columns=[ip, app, device, os, channel, click_time, attributed_time]"])
    assert named.logs.csv_columns[0] == "ip"
