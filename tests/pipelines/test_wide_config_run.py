"""A config with 5,000 features runs through `adrank run` (its config slices far past Linux's 131,072 bytes per
command-line argument; `configs.slices` compresses them)."""

from __future__ import annotations

import json
import math

import pytest

from tests.support.cli import adrank
from tests.support.paths import CONFIGS
from tests.support.wide_logs import WIDTH, wide_run_config, write_wide_logs


@pytest.fixture
def wide_logs(tmp_path) -> dict:
    return write_wide_logs(tmp_path)


@pytest.mark.long  # a whole DAG with 5,000 features (tf.Transform alone takes two minutes to build their graph)
@pytest.mark.e2e
def test_5000_features_run_through_adrank_run(wide_logs, tmp_path):
    config = wide_run_config(CONFIGS / "local.yaml", wide_logs, tmp_path / "wide.yaml",
                             targets=[{"name": "cpu", "kind": "cpu", "price_per_hour": 0.38}])
    adrank("run", "--config", str(config), "--runs-dir", "runs", "--run-id", "wide", "--quiet", cwd=tmp_path,
           timeout=1500)
    run_dir = tmp_path / "runs" / "wide"
    manifest = json.loads(next(run_dir.glob("artifacts/**/manifest.json")).read_text())
    assert len(manifest["features"]) == WIDTH
    loglosses = json.loads((run_dir / "summary.json").read_text())["runs"][0]["logloss"]  # task → eval log-loss
    assert loglosses and all(math.isfinite(value) for value in loglosses.values())
