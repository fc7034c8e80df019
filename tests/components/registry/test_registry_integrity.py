"""A damaged registry fails loudly: a champion that cannot be loaded is a warning on the console,
in the log and in the report, and the default is kept unless `promotion.on_unscorable_champion: promote`; a registry
file that is not valid names the file and the repair; versions resolve only inside the registry; a staging
directory left by a killed promotion is removed by the next one."""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

import pytest
from fixture_models import day_of_examples, save_model, summary_naming, write_eval_examples

from components.registry.champion import champion_model_dir
from components.registry.local import LocalModelRegistry, RegistryFileInvalid
from components.registry.promote_challenger import promote_best_run
from components.registry.promotion_rule import Candidate, Verdict
from components.report.promotion_section import promotion_html, promotion_markdown
from configs import load_config
from configs.slices import PromoteStepConfig

GOOD, BAD = (2.0, -2.0), (0.5, -1.0)
MODEL = "adrank-local"


@pytest.fixture
def registry_with_champion(tmp_path):
    """A registry whose default is version 1, and today's eval examples."""
    x, y = day_of_examples(seed=6, n=400)
    examples = write_eval_examples(tmp_path / "examples", x, y)
    config = _config(tmp_path)
    first = _promote(tmp_path, config, examples, GOOD, "day1")
    assert (first.version, first.promoted) == ("1", True)
    return examples, tmp_path / "registry" / MODEL


def _config(tmp_path, *overrides) -> PromoteStepConfig:
    return PromoteStepConfig.of(load_config(None, [f"promotion.local_registry={tmp_path / 'registry'}", *overrides]))


def _promote(tmp_path, config, examples, slope_bias, name):
    model = save_model(tmp_path / name, *slope_bias)
    return promote_best_run(config, "local", str(summary_naming(tmp_path / f"{name}.json", model)), str(examples))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _xor(path: Path) -> None:
    path.write_bytes(bytes(byte ^ 0x5A for byte in path.read_bytes()))


DAMAGE = {
    "default.json names an absent version": lambda model: (model / "default.json").write_text('{"version": "7"}'),
    "truncated saved_model.pb": lambda model: _truncate(model / "versions/1/model/saved_model.pb"),
    "XOR-ed variables": lambda model: _xor(model / "versions/1/model/variables/variables.data-00000-of-00001"),
    "truncated variables": lambda model: _truncate(model / "versions/1/model/variables/variables.data-00000-of-00001"),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_an_unscorable_champion_is_loud_and_the_default_is_kept(tmp_path, registry_with_champion, damage, caplog):
    examples, model = registry_with_champion
    DAMAGE[damage](model)
    default_before = (model / "default.json").read_text()
    with caplog.at_level(logging.WARNING, logger="components.registry.promote_challenger"):
        decision = _promote(tmp_path, _config(tmp_path), examples, BAD, "day2")

    assert decision.champion_status == "unscorable" and not decision.promoted
    assert "cannot load the model" in decision.reason and "on_unscorable_champion: keep" in decision.reason
    assert (model / "default.json").read_text() == default_before  # the registry's default is unchanged
    assert LocalModelRegistry(model.parent).versions(MODEL) == ["1", "2"]  # today's model kept as a version
    assert any(record.levelno == logging.WARNING and record.getMessage().startswith(
        f"model {MODEL}, champion version {decision.champion_version}: champion could not be scored (cannot load the "
        "model") for record in caplog.records)
    for section in (promotion_markdown(decision), promotion_html(decision)):
        assert "Warning: champion could not be scored (cannot load the model" in section
        assert f"Repair or replace the default version ({decision.champion_version}) in the registry" in section


def test_promoting_past_an_unscorable_champion_is_an_explicit_choice(tmp_path, registry_with_champion):
    examples, model = registry_with_champion
    _truncate(model / "versions/1/model/saved_model.pb")
    decision = _promote(tmp_path, _config(tmp_path, "promotion.on_unscorable_champion=promote"), examples, BAD, "day2")
    assert decision.champion_status == "unscorable" and decision.promoted
    assert "challenger promoted without a comparison" in decision.reason
    assert json.loads((model / "default.json").read_text())["version"] == "2"


@pytest.mark.parametrize(("content", "problem"), [
    ('{"version": "1", ', "not valid JSON"),
    ("\x00\x01garbage", "not valid JSON"),
    ('{"ver": "1"}', "not a registry default (version: Field required)"),
    ('["1"]', "not a registry default"),
    ('{"version": "../../../elsewhere"}', "version '../../../elsewhere' is not a version number of this registry"),
    ('{"version": "01"}', "version '01' is not a version number"),
])
def test_a_damaged_default_json_is_an_error_naming_the_file_and_the_fix(tmp_path, registry_with_champion, content,
                                                                         problem):
    examples, model = registry_with_champion
    (model / "default.json").write_text(content)
    with pytest.raises(RegistryFileInvalid) as error:
        _promote(tmp_path, _config(tmp_path), examples, BAD, "day2")
    message = str(error.value)
    assert message.startswith(f"{model / 'default.json'}: ") and problem in message
    assert "fix: write {\"version\": \"<n>\"}" in message and "remove the file" in message
    assert not any(p.name.startswith(".staging-") for p in (model / "versions").iterdir())  # nothing left staged
    with pytest.raises(RegistryFileInvalid):  # warm start reads the same pointer
        champion_model_dir(_config(tmp_path), "local")


def test_a_version_outside_the_registry_is_never_loaded(tmp_path, registry_with_champion):
    examples, model = registry_with_champion
    elsewhere = tmp_path / "elsewhere"
    save_model(elsewhere / "model", *GOOD)  # a model someone planted outside the registry
    (model / "default.json").write_text(json.dumps({"version": os.path.relpath(elsewhere, model / "versions")}))
    registry = LocalModelRegistry(model.parent)
    with pytest.raises(RegistryFileInvalid, match="is not a version number of this registry"):
        registry.default_model_dir(MODEL)
    with pytest.raises(RegistryFileInvalid, match="is not a version number"):
        registry.evaluation(MODEL, "../../elsewhere")


def test_a_damaged_version_record_names_its_file(tmp_path, registry_with_champion):
    _, model = registry_with_champion
    (model / "versions/1/promotion.json").write_text("{truncated")
    with pytest.raises(RegistryFileInvalid, match=r"versions/1/promotion.json: not valid JSON .*fix: "):
        LocalModelRegistry(model.parent).history(MODEL)


def _register(registry: LocalModelRegistry, model_dir: Path):
    candidate = Candidate("p", "h", "engagement", "cpu", 0, 0.3, str(model_dir))
    return registry.register("ranker", candidate, lambda champion: Verdict(True, "test", "none"))


def _staged(registry: LocalModelRegistry, model_dir: Path):
    """A promotion stopped after copying its model into staging: (staging directory, its owner lock)."""
    staging, owner = registry._claim_staging("ranker")
    registry._stage("ranker", Candidate("p", "h", "engagement", "cpu", 0, 0.3, str(model_dir)), staging)
    return staging, owner


def test_staging_left_by_a_killed_promotion_is_removed_by_the_next_and_a_live_one_is_kept(tmp_path):
    """A kill -9 closes every descriptor of the process, which releases its owner flock and nothing else: closing
    the owner file without any cleanup is exactly what the next promotion finds after a kill."""
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "saved_model.pb").write_bytes(b"model" * 100)
    registry = LocalModelRegistry(tmp_path / "registry")
    versions = tmp_path / "registry/ranker/versions"

    killed, killed_owner = _staged(registry, model_dir)
    killed_owner.close()  # the process died here
    live, live_owner = _staged(registry, model_dir)  # another promotion, still copying
    (versions / ".staging-from-an-older-adrank").mkdir()  # staged before owner files existed
    assert (killed / "model/saved_model.pb").exists() and (versions / (killed.name + ".owner")).exists()

    assert _register(registry, model_dir)[0] == "1"
    assert sorted(p.name for p in versions.iterdir()) == sorted(["1", live.name, live.name + ".owner"])
    assert (live / "model/saved_model.pb").exists()  # a live promotion's copy is never touched

    live_owner.close()  # that one is killed too
    assert _register(registry, model_dir)[0] == "2"
    assert sorted(p.name for p in versions.iterdir()) == ["1", "2"]


def test_an_owner_file_without_its_directory_is_left_while_young_and_removed_when_old(tmp_path):
    versions = tmp_path / "registry/ranker/versions"
    versions.mkdir(parents=True)
    young, old = versions / ".staging-young.owner", versions / ".staging-old.owner"
    young.touch()
    old.touch()
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    assert LocalModelRegistry(tmp_path / "registry").remove_abandoned_staging("ranker") == []
    assert young.exists() and not old.exists()
    shutil.rmtree(versions)



class _FinishesAfterTheFirstLook(type(Path())):  # type: ignore[misc]
    """An owner file whose promotion finishes (removing it) right after the scan first looks at it."""

    def stat(self, **kwargs):  # type: ignore[no-untyped-def]
        result = super().stat(**kwargs)
        self.unlink()
        return result


def test_a_promotion_finishing_while_another_scans_for_abandoned_staging_is_passed_over(tmp_path, monkeypatch):
    """A finished promotion renames its staging directory under the lock but removes its owner file after it, so
    the scan of the next promotion can list a staging directory or an owner file that is gone a moment later
    (CI once failed here with FileNotFoundError on the owner file)."""
    versions = tmp_path / "registry/ranker/versions"
    versions.mkdir(parents=True)
    kept = versions / ".staging-old.owner"
    kept.touch()
    an_hour_ago = time.time() - 3600
    os.utime(kept, (an_hour_ago, an_hour_ago))
    finishing = versions / ".staging-finishing.owner"
    finishing.touch()
    finished = [versions / ".staging-finished", versions / ".staging-finished.owner"]  # listed, then gone
    real_iterdir = Path.iterdir

    def listing(self):  # type: ignore[no-untyped-def]
        entries = [_FinishesAfterTheFirstLook(p) if p == finishing else p for p in real_iterdir(self)]
        return [*entries, *finished]

    monkeypatch.setattr(Path, "iterdir", listing)
    assert LocalModelRegistry(tmp_path / "registry").remove_abandoned_staging("ranker") == []
    assert not kept.exists()  # the scan went on past the vanished ones
