"""A manifest feature's embedding-table rows are `table_rows`; manifests written before the rename
(`vocabulary_size`) still load, and a manifest is always written with the new name."""

from __future__ import annotations

import json

from components.contracts.manifest import FeatureInfo


def test_an_old_manifest_feature_loads_and_is_written_back_as_table_rows() -> None:
    old = '{"name": "user_id", "kind": "categorical", "dtype": "int64", "vocabulary_size": 4000}'
    info = FeatureInfo.model_validate_json(old)
    assert info.table_rows == 4000
    written = json.loads(info.model_dump_json())
    assert written["table_rows"] == 4000 and "vocabulary_size" not in written
    assert FeatureInfo.model_validate_json(info.model_dump_json()) == info


def test_a_new_manifest_feature_reads_table_rows() -> None:
    info = FeatureInfo(name="hour", kind="categorical", dtype="int64", table_rows=24)
    assert info.model_dump()["table_rows"] == 24
