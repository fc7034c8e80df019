import pytest

from configs.embedding_memory import estimated_table
from configs.features import (
    CategoricalFeature,
    CategoricalListFeature,
    HistoryFeature,
    NumericFeature,
    TimeFeature,
    configured_table_rows,
    table_rows,
)


def test_each_kind_of_feature_gets_its_rows_by_one_rule():
    assert table_rows(CategoricalFeature(name="u", encoding="hash", hash_buckets=4000)) == 4000
    assert table_rows(CategoricalFeature(name="u", encoding="learned_hash", hash_buckets=100)) == 100
    assert table_rows(CategoricalListFeature(name="l", encoding="hash", hash_buckets=50)) == 51  # + padding id 0
    assert table_rows(CategoricalFeature(name="a", oov_buckets=4), vocabulary_entries=30) == 34
    assert table_rows(CategoricalListFeature(name="l", oov_buckets=1), vocabulary_entries=3) == 5
    assert table_rows(NumericFeature(name="b", normalization="quantile_buckets", buckets=12)) == 12
    assert table_rows(NumericFeature(name="b", normalization="zscore")) is None
    assert table_rows(TimeFeature(name="h", part="hour_of_day")) == 24
    assert table_rows(TimeFeature(name="d", part="day_of_week")) == 7
    assert table_rows(HistoryFeature(name="h", ids=["u"])) is None
    with pytest.raises(ValueError, match="feature 'a': a vocabulary's table rows need its number of entries"):
        table_rows(CategoricalFeature(name="a"))


def test_the_config_decides_every_figure_but_a_vocabularys():
    assert configured_table_rows(CategoricalFeature(name="u", encoding="hash", hash_buckets=4000)) == 4000
    assert configured_table_rows(CategoricalFeature(name="a", encoding="vocabulary", top_k=10)) is None
    assert configured_table_rows(TimeFeature(name="h", part="hour_of_day")) == 24


def test_the_memory_estimate_uses_the_same_rule():
    vocabulary = CategoricalListFeature(name="l", top_k=100, oov_buckets=2)
    assert estimated_table(3, vocabulary, 5000).rows == table_rows(vocabulary, 100) == 103
    assert estimated_table(3, vocabulary, 5000).size_field == "features.3.top_k"
    untruncated = CategoricalFeature(name="c")
    assert estimated_table(0, untruncated, 5000).rows == table_rows(untruncated, 5000)
    hashed = CategoricalFeature(name="u", encoding="hash", hash_buckets=64)
    assert (estimated_table(1, hashed, 5000).rows, estimated_table(1, hashed, 5000).size_field) == (
        64, "features.1.hash_buckets")
    assert estimated_table(2, NumericFeature(name="b"), 5000) is None
