"""The local registry's mechanics: versions, the default, concurrent promotions, where it lives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.registry.local import LocalModelRegistry
from components.registry.promote_challenger import promote_best_run
from components.registry.promotion_rule import Candidate, Verdict, read_candidate
from configs import load_config
from configs.slices import PromoteStepConfig

REPO = Path(__file__).parents[3]


def _candidate(logloss: float, model_uri: str = "/nonexistent") -> Candidate:
    return Candidate("adrank-local", "abc", "engagement", "cpu", 0, logloss, model_uri)


def _by_stored_logloss(registry: LocalModelRegistry, model: str, candidate: Candidate, tolerance: float):
    """A judge for registry mechanics only: the candidate's log-loss against the default's stored one."""
    def judge(champion_dir):
        current = registry.default(model)
        if champion_dir is None or current is None:
            return Verdict(True, "no default version yet", "none")
        return Verdict(candidate.logloss <= current["logloss"] + tolerance, "stored log-loss", "scored")
    return judge


def test_local_registry_versions_and_default(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "saved_model.pb").write_bytes(b"model")
    registry = LocalModelRegistry(tmp_path / "registry")

    def register(logloss):
        candidate = _candidate(logloss, str(model_dir))
        return registry.register("ranker", candidate, _by_stored_logloss(registry, "ranker", candidate, 0.001))

    assert register(0.40)[:2] == ("1", Verdict(True, "no default version yet", "none"))
    assert (tmp_path / "registry/ranker/versions/1/model/saved_model.pb").read_bytes() == b"model"
    version, verdict, champion = register(0.41)
    assert (version, verdict.promoted, champion) == ("2", False, "1")
    assert registry.default("ranker")["version"] == "1"
    assert register(0.4005)[0] == "3"
    assert registry.default("ranker") == {"version": "3", "logloss": 0.4005}
    assert registry.versions("ranker") == ["1", "2", "3"]
    assert registry.evaluation("ranker", "2")["logloss"] == 0.41
    assert registry.default_model_dir("ranker") == ("3", str(tmp_path / "registry/ranker/versions/3/model"))


def test_read_candidate_takes_the_best_exported_run(tmp_path):
    from fixture_models import benchmark_summary

    summary = tmp_path / "summary.json"
    summary.write_text(benchmark_summary(str(tmp_path / "m"), logloss=0.42, auc=0.71, run_index=1).model_dump_json())
    candidate = read_candidate(summary)
    assert (candidate.target, candidate.run_index, candidate.logloss, candidate.auc) == ("cpu", 1, 0.42, 0.71)
    assert (candidate.pipeline, candidate.primary_task, candidate.model_uri) == ("adrank-local", "engagement",
                                                                                 str(tmp_path / "m"))


def test_read_candidate_takes_the_best_run_of_a_summary_older_than_best_exported_run(tmp_path):
    from fixture_models import benchmark_summary

    legacy = json.loads(benchmark_summary(str(tmp_path / "m"), logloss=0.42, run_index=1).model_dump_json())
    del legacy["best_exported_run"]
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps(legacy))
    candidate = read_candidate(summary)
    assert (candidate.target, candidate.run_index, candidate.model_uri) == ("cpu", 1, str(tmp_path / "m"))


def test_read_candidate_names_the_file_when_it_is_not_a_benchmark_summary(tmp_path):
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"pipeline": "adrank-local", "best_run": {"target": "cpu"}}))
    with pytest.raises(ValueError, match=r"summary.json: not a report summary: .*primary_task: Field required"):
        read_candidate(summary)


PROMOTER = """
import sys
from components.registry.local import LocalModelRegistry
from components.registry.promotion_rule import Candidate, Verdict

root, model_dir, worker = sys.argv[1], sys.argv[2], int(sys.argv[3])
registry = LocalModelRegistry(root)
for index in range({promotions}):
    logloss = 0.4 + ((worker * 7 + index * 3) % 11) / 1000
    candidate = Candidate("adrank-local", f"w{{worker}}", "engagement", "cpu", index, logloss, model_dir)

    def judge(champion_dir):  # under the registry's lock: the default it reads is the one it replaces
        current = registry.default("ranker")
        return Verdict(current is None or logloss <= current["logloss"], "stored log-loss", "scored")

    registry.register("ranker", candidate, judge)
"""


def test_concurrent_promotions_lose_nothing(tmp_path):
    """8 processes × 10 promotions at once: every one succeeds, 80 distinct versions, valid JSON throughout."""
    processes, promotions = 8, 10
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "saved_model.pb").write_bytes(b"model" * 1000)
    script = PROMOTER.format(promotions=promotions)
    workers = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "registry"), str(model_dir), str(worker)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        for worker in range(processes)
    ]
    results = [(worker.wait(timeout=120), worker.stderr.read()) for worker in workers]
    for worker in workers:
        worker.stdout.close()
        worker.stderr.close()
    assert [code for code, _ in results] == [0] * processes, [err for _, err in results if err]

    registry = LocalModelRegistry(tmp_path / "registry")
    versions = registry.versions("ranker")
    assert versions == [str(n) for n in range(1, processes * promotions + 1)]
    evaluations = [registry.evaluation("ranker", version) for version in versions]
    assert sorted((e["config_hash"], e["run_index"]) for e in evaluations) == sorted(
        (f"w{worker}", index) for worker in range(processes) for index in range(promotions)
    )
    for version in versions:
        assert (tmp_path / "registry/ranker/versions" / version / "model/saved_model.pb").stat().st_size == 5000
    default = registry.default("ranker")
    assert default["logloss"] == registry.evaluation("ranker", default["version"])["logloss"]
    # tolerance 0: the default has the lowest log-loss seen (ties go to the later version)
    best = min(evaluations, key=lambda e: e["logloss"])["logloss"]
    assert default["logloss"] == best
    leftovers = [p.name for p in (tmp_path / "registry/ranker/versions").iterdir() if not p.name.isdigit()]
    assert leftovers == []


def test_the_local_registry_follows_runs_dir(tmp_path):
    from ops.cli import build_parser
    from ops.commands.options import config_for_local_run

    parser = build_parser()
    runs = tmp_path / "my runs: #1"
    moved = config_for_local_run(parser.parse_args(["run", "--runs-dir", str(runs)]))
    assert moved.promotion.local_registry == str(runs / "registry")
    assert config_for_local_run(parser.parse_args(["run"])).promotion.local_registry == "runs/registry"
    explicit = parser.parse_args(["run", "--runs-dir", str(runs), "--set", "promotion.local_registry=/srv/models"])
    assert config_for_local_run(explicit).promotion.local_registry == "/srv/models"


def test_vertex_promotion_labels_carry_the_whole_config_hash(tmp_path, monkeypatch):
    from fixture_models import day_of_examples, save_model, summary_naming, write_eval_examples

    from components.registry import vertex
    from configs import config_hash

    x, y = day_of_examples(seed=3, n=200)
    examples = write_eval_examples(tmp_path / "examples", x, y)
    summary = summary_naming(tmp_path / "summary.json", save_model(tmp_path / "model", 2.0, -2.0))
    seen = []

    def register_for_day(config, candidate, labels, judge, day, decide):
        seen.append(labels)
        return decide("1", judge(None), None)

    monkeypatch.setattr(vertex, "register_for_day", register_for_day)
    config = load_config(REPO / "configs" / "vertex.yaml")
    promote_best_run(PromoteStepConfig.of(config), "vertex", str(summary), str(examples))
    relabelled = PromoteStepConfig.of(config).model_copy(update={"config_hash": "0123456789ab"})
    promote_best_run(relabelled, "vertex", str(summary), str(examples))
    assert [labels["adrank-config"] for labels in seen] == [config_hash(config), "0123456789ab"]
    assert seen[0]["adrank-target"] == "cpu"
