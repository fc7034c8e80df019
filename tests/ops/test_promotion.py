"""Model promotion: the log-loss tolerance rule, over the local registry directory."""

from __future__ import annotations

import json

import pytest

from components.registry.local import LocalModelRegistry
from components.registry.promotion import Candidate, decide, read_candidate
from components.registry.task import promote_best_run
from configs import load_config


def _candidate(logloss: float, model_uri: str = "/nonexistent") -> Candidate:
    return Candidate("adrank-local", "abc", "engagement", "cpu", 0, logloss, model_uri)


@pytest.mark.parametrize(("new", "current", "tolerance", "promoted"), [
    (0.40, None, 0.0, True),       # first version
    (0.39, 0.40, 0.0, True),       # better
    (0.4009, 0.40, 0.001, True),   # worse, within tolerance
    (0.4011, 0.40, 0.001, False),  # worse beyond tolerance
    (0.4001, 0.40, 0.0, False),
])
def test_decide(new, current, tolerance, promoted):
    assert decide(new, current, tolerance)[0] is promoted


def test_local_registry_versions_and_default(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "saved_model.pb").write_bytes(b"model")
    registry = LocalModelRegistry(tmp_path / "registry")

    first = registry.register("ranker", _candidate(0.40, str(model_dir)), tolerance=0.001)
    assert (first.version, first.is_default) == ("1", True)
    assert (tmp_path / "registry/ranker/versions/1/model/saved_model.pb").read_bytes() == b"model"

    worse = registry.register("ranker", _candidate(0.41, str(model_dir)), tolerance=0.001)
    assert (worse.version, worse.is_default, worse.previous_default_logloss) == ("2", False, 0.40)
    assert registry.default("ranker")["version"] == "1"

    close = registry.register("ranker", _candidate(0.4005, str(model_dir)), tolerance=0.001)
    assert (close.version, close.is_default) == ("3", True)
    assert registry.default("ranker") == {"version": "3", "logloss": 0.4005}
    assert registry.versions("ranker") == ["1", "2", "3"]
    assert registry.evaluation("ranker", "2")["logloss"] == 0.41


def test_promote_best_run_reads_the_report_summary(tmp_path):
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({
        "pipeline": "adrank-local", "config_hash": "abc", "primary_task": "engagement",
        "runs": [{"target": "cpu", "run_index": 1, "auc": {"engagement": 0.71}}],
        "best_run": {"target": "cpu", "run_index": 1, "model_uri": str(tmp_path / "m"), "logloss": 0.42},
    }))
    candidate = read_candidate(summary)
    assert (candidate.target, candidate.run_index, candidate.logloss, candidate.auc) == ("cpu", 1, 0.42, 0.71)

    config = load_config(None, [f"promotion.local_registry={tmp_path / 'registry'}"])
    decision = promote_best_run(config, "local", str(summary))
    assert decision.is_default and decision.model == "adrank-local"
    assert (tmp_path / "registry" / "adrank-local" / "default.json").exists()
