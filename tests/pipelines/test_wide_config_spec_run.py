"""A config with 5,000 features runs through `adrank run-spec` of its compiled Vertex spec, every task started as
Vertex would start it (its config slices far past Linux's 131,072 bytes per command-line argument; `configs.slices`
compresses them)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.support.cli import adrank
from tests.support.paths import CONFIGS
from tests.support.wide_logs import WIDTH, wide_run_config, write_wide_logs


@pytest.fixture
def wide_logs(tmp_path) -> dict:
    return write_wide_logs(tmp_path)


@pytest.mark.long  # the compiled Vertex spec of a 5,000-feature config, every task run here as Vertex would run it
@pytest.mark.e2e
def test_5000_features_run_through_run_spec_of_the_compiled_vertex_spec(wide_logs, tmp_path):
    config = wide_run_config(CONFIGS / "vertex.yaml", wide_logs, tmp_path / "wide-vertex.yaml",
                             targets=[{"name": "cpu", "kind": "cpu", "price_per_hour": 0.76,
                                       "vertex": {"machine": {"machine_type": "n1-standard-16"}}}],
                             report={"baseline_target": "cpu"})
    raw = yaml.safe_load(config.read_text())
    raw["vertex"]["notify_emails"] = []
    config.write_text(yaml.safe_dump(raw))
    adrank("compile", "--config", str(config), "--backend", "vertex", "--output", "spec.yaml",
           "--allow-image-tags", cwd=tmp_path, timeout=1500)
    adrank("run-spec", "spec.yaml", "--root", "root", "--pipeline-root", "gs://adrank-wide/root", "--project",
           "adrank-prod", "--create-time", "2026-03-10T03:00:00Z", "--direct-running-mode", "in_memory",
           "--direct-num-workers", "1", cwd=tmp_path, timeout=1500)
    (record,) = (tmp_path / "root" / "spec-runs").glob("*/spec_run.json")
    run = json.loads(record.read_text())
    assert run["status"] == "succeeded"
    (manifest,) = (tmp_path / "root").glob("adrank-wide/root/**/manifest.json")
    assert len(json.loads(manifest.read_text())["features"]) == WIDTH
