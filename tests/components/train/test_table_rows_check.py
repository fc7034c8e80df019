import pytest
from config_fixture import small_config

from components.contracts.manifest import FeatureInfo, Manifest, SplitInfo
from components.train.table_rows_check import TableRowsMismatch, check_table_rows
from components.train.training_run import train
from configs import AdrankConfig
from configs.features import CategoricalFeature, NumericFeature, TimeFeature
from configs.slices import TrainStepConfig

SPLIT = SplitInfo(examples=64, label_rates={"click": 0.3}, file_pattern="unused")
MANIFEST = Manifest(tasks=["click"], splits={"train": SPLIT, "eval": SPLIT}, features=[
    FeatureInfo(name="user_id", kind="categorical", dtype="int64", table_rows=4000),
    FeatureInfo(name="ad_id", kind="categorical", dtype="int64", table_rows=37),
    FeatureInfo(name="bid", kind="categorical", dtype="int64", table_rows=10),
    FeatureInfo(name="hour", kind="categorical", dtype="int64", table_rows=24),
])
CONFIG = [CategoricalFeature(name="user_id", encoding="hash", hash_buckets=4000),
          CategoricalFeature(name="ad_id"),  # a vocabulary: its rows come from the data
          NumericFeature(name="bid", normalization="quantile_buckets", buckets=10),
          TimeFeature(name="hour", part="hour_of_day")]


def test_a_manifest_that_agrees_with_the_config_passes():
    check_table_rows(MANIFEST, CONFIG)


def test_a_figure_that_differs_fails_naming_the_feature():
    other = [CONFIG[0].model_copy(update={"hash_buckets": 1000}), *CONFIG[1:2],
             CONFIG[2].model_copy(update={"buckets": 12}), CONFIG[3]]
    with pytest.raises(TableRowsMismatch) as raised:
        check_table_rows(MANIFEST, other)
    assert "feature 'user_id': the examples' manifest gives 4000 table rows, the config 1000" in str(raised.value)
    assert "feature 'bid': the examples' manifest gives 10 table rows, the config 12" in str(raised.value)
    assert "ad_id" not in str(raised.value) and "hour" not in str(raised.value)


def test_train_refuses_examples_made_with_another_feature_config(single_task_examples_dir, tmp_path):
    values = small_config(epochs=1).model_dump()
    values["features"][0]["hash_buckets"] = 4000  # the fixture's examples give user_id 50 rows
    config = TrainStepConfig.of(AdrankConfig.model_validate(values), "cpu")
    with pytest.raises(TableRowsMismatch, match="feature 'user_id': the examples' manifest gives 50 table rows"):
        train(config, "cpu", 0, str(single_task_examples_dir), str(tmp_path / "model"))
    assert not (tmp_path / "model").exists() or not any((tmp_path / "model").iterdir())
