"""Every record passed between steps derives from `components.contracts.base.Contract`: unknown keys are errors, and
the rule `extra="forbid"` is written in two places only (this base and the config sections' `configs.base.StrictModel`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from components.contracts.base import Contract
from components.contracts.manifest import BlockColumn, SplitBlocks
from ops.local_run.record import RunRecord

ROOT = Path(__file__).resolve().parents[2]


def test_a_record_rejects_a_key_it_does_not_know() -> None:
    with pytest.raises(ValidationError, match="surprise"):
        SplitBlocks.model_validate({"files": {"a": 3}, "block_examples": 2, "surprise": 1})


def test_a_frozen_record_keeps_the_base_rule_and_stays_hashable() -> None:
    assert BlockColumn.model_config["extra"] == "forbid" and BlockColumn.model_config["frozen"] is True
    assert hash(BlockColumn(name="x", dtype="int64")) == hash(BlockColumn(name="x", dtype="int64"))
    assert issubclass(RunRecord, Contract)


def test_the_rule_is_written_once_per_base() -> None:
    written = sorted(str(path.relative_to(ROOT)) for package in ("foundation", "configs", "components", "pipelines", "ops")
                     for path in (ROOT / package).rglob("*.py")
                     if re.search(r"extra\s*=\s*[\"']forbid[\"']", path.read_text()))
    assert written == ["components/contracts/base.py", "configs/base.py"]
