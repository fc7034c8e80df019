"""Promotion into the Vertex Model Registry, against the Vertex double: the champion (the default version) is
read from the registry and scored on the same eval examples as the challenger; the new version is uploaded as
the default only when the rule allows, and its evaluation carries the decision record's challenger log-loss.

Model artifacts are gs:// URIs; `foundation.gcs_mount` maps them under tmp_path as it maps them under
/gcs/ in a Vertex container, so both models are real SavedModels scored by the real promotion code."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import fixture_models
import numpy as np
import pytest
from google.cloud.aiplatform import initializer

from components.registry.champion import champion_model_dir
from components.registry.promote_challenger import promote_best_run
from components.registry.scoring import per_example_logloss
from configs import config_hash, load_config
from configs.slices import PromoteStepConfig
from foundation import gcs_mount
from ops.vertex.session import VertexSession

VERTEX_CONFIG = Path(__file__).parents[3] / "configs" / "vertex.yaml"
GOOD, BAD = (2.0, -2.0), (0.5, -1.0)  # (slope, bias): the truth of `day_of_examples`, and a blurred model
LOCATION = "projects/adrank-prod/locations/us-central1"
ROOT = "gs://adrank-prod-pipelines/root"
SUMMARY_LOGLOSS = 0.987  # the training run's own figure: never the one the registry records


@pytest.fixture
def registry(fake_vertex, tmp_path, monkeypatch):
    """The double, with the aiplatform client pointed at it (a fresh global config, the previous one restored
    after the test: `aiplatform.init` is bound to that one object) and gs:// mapped under tmp_path/gcs."""
    fake, endpoint = fake_vertex
    client_config = vars(initializer.global_config)
    before = dict(client_config)
    initializer.global_config.__init__()
    VertexSession("adrank-prod", "us-central1", endpoint).init()
    monkeypatch.setattr(gcs_mount, "GCS_MOUNT_ROOT", str(tmp_path / "gcs"))
    yield fake
    client_config.clear()
    client_config.update(before)


@pytest.fixture
def day(tmp_path):
    x, y = fixture_models.day_of_examples(seed=3)
    return fixture_models.write_eval_examples(tmp_path / "examples", x, y), x, y


def _config(*overrides) -> PromoteStepConfig:
    """What the promote and champion steps receive: the slice of configs/vertex.yaml, through its JSON."""
    whole = load_config(VERTEX_CONFIG, ["runs_per_target=1", *overrides])
    config = PromoteStepConfig.model_validate_json(PromoteStepConfig.of(whole).to_json())
    assert config.config_hash == config_hash(whole)
    return config


def _promote(tmp_path, config, examples_dir, slope_bias, day_name, required=None):
    """Train-step output for `day_name`: a SavedModel at a gs:// URI, the report's summary naming it."""
    uri = f"{ROOT}/{day_name}/train-cpu/model/saved_model"
    fixture_models.save_model(Path(gcs_mount.container_path(uri)), *slope_bias, required_feature=required)
    summary = fixture_models.summary_naming(tmp_path / f"{day_name}.json", uri, SUMMARY_LOGLOSS, "adrank-daily",
                                           auc=0.71)
    return promote_best_run(config, "vertex", str(summary), str(examples_dir)), uri


def _expected_logloss(x, y, slope, bias) -> float:
    return float(per_example_logloss(y, 1 / (1 + np.exp(-(slope * x + bias)))).mean())


def _upload(fake, index: int) -> dict:
    return fake.calls("POST", r"/models:upload$")[index].body


def _imported(fake, index: int):
    call = fake.calls("POST", r"/evaluations:import$")[index]
    return unquote(call.path), call.body["modelEvaluation"]


def test_day1_day2_day3_the_champion_is_scored_on_the_same_examples(registry, tmp_path, day):
    fake = registry
    examples_dir, x, y = day
    config = _config()
    assert champion_model_dir(config, "vertex") == ""  # before day 1: training starts cold

    # day 1: no model yet → version 1, the default
    first, first_uri = _promote(tmp_path, config, examples_dir, BAD, "day1")
    assert (first.model, first.version, first.promoted, first.champion_status) == ("adrank-ranker", "1", True, "none")
    assert first.champion_version is None and first.champion_logloss is None
    assert first.challenger_logloss == pytest.approx(_expected_logloss(x, y, *BAD), rel=1e-5)
    (model_id,) = fake.models
    body = _upload(fake, 0)
    assert "parentModel" not in body
    assert fake.calls("POST", r"/models:upload$")[0].path == f"/v1/{LOCATION}/models:upload"
    assert body["model"]["displayName"] == "adrank-ranker"
    assert body["model"]["artifactUri"] == first_uri
    assert body["model"]["versionAliases"] == ["default"]
    assert body["model"]["containerSpec"]["imageUri"] == config.vertex.model_registry.serving_image
    assert body["model"]["encryptionSpec"]["kmsKeyName"] == config.vertex.encryption_spec_key_name
    assert body["model"]["labels"] == {"adrank-pipeline": "adrank-daily", "adrank-config": config.config_hash,
                                       "adrank-target": "cpu", "adrank-champion": "none", "adrank-decision": "promoted"}
    assert body["modelId"] == "adrank-ranker"  # the resource name adrank finds it by, never the display name
    assert model_id == "adrank-ranker" and first.model_resource_name == f"{LOCATION}/models/adrank-ranker"
    path, evaluation = _imported(fake, 0)
    assert path.endswith(f"/models/{model_id}@1/evaluations:import")
    assert evaluation["metrics"]["logLoss"] == pytest.approx(first.challenger_logloss)  # not the summary's figure
    assert evaluation["metrics"]["auRoc"] == pytest.approx(0.71)
    assert evaluation["metricsSchemaUri"].endswith("classification_metrics_1.0.0.yaml")
    assert champion_model_dir(config, "vertex") == gcs_mount.container_path(first_uri)

    # day 2: a better challenger → version 2, the default; version 1 scored on the same examples
    better, better_uri = _promote(tmp_path, config, examples_dir, GOOD, "day2")
    assert (better.version, better.promoted, better.champion_version, better.champion_status) == (
        "2", True, "1", "scored")
    assert better.champion_logloss == pytest.approx(_expected_logloss(x, y, *BAD), rel=1e-5)
    assert better.challenger_logloss == pytest.approx(_expected_logloss(x, y, *GOOD), rel=1e-5)
    assert better.difference == pytest.approx(better.challenger_logloss - better.champion_logloss, abs=1e-9)
    assert better.difference_ci95[1] <= better.tolerance
    assert better.eval_examples == len(y) and better.eval_positives == int(y.sum())
    body = _upload(fake, 1)
    assert body["parentModel"] == f"{LOCATION}/models/{model_id}"
    assert body["model"]["versionAliases"] == ["default"]
    assert body["model"]["artifactUri"] == better_uri
    path, evaluation = _imported(fake, 1)
    assert path.endswith(f"/models/{model_id}@2/evaluations:import")
    assert evaluation["metrics"]["logLoss"] == pytest.approx(better.challenger_logloss)
    assert champion_model_dir(config, "vertex") == gcs_mount.container_path(better_uri)

    # day 3: a worse challenger → version 3 registered, NOT the default; version 2 stays the default
    worse, worse_uri = _promote(tmp_path, config, examples_dir, BAD, "day3")
    assert (worse.version, worse.promoted, worse.champion_version) == ("3", False, "2")
    assert worse.champion_logloss == pytest.approx(better.challenger_logloss, rel=1e-6)
    assert worse.difference_ci95[1] > worse.tolerance
    assert "upper bound > tolerance" in worse.reason
    body = _upload(fake, 2)
    assert body["parentModel"] == f"{LOCATION}/models/{model_id}"
    assert "versionAliases" not in body["model"]
    assert body["model"]["versionDescription"].startswith("cpu run 1; ")
    path, evaluation = _imported(fake, 2)
    assert path.endswith(f"/models/{model_id}@3/evaluations:import")
    assert evaluation["metrics"]["logLoss"] == pytest.approx(worse.challenger_logloss)

    versions = fake.model_versions(model_id)
    assert [(v["versionId"], v["artifactUri"], v["versionAliases"]) for v in versions] == [
        ("1", first_uri, []), ("2", better_uri, ["default"]), ("3", worse_uri, [])]
    assert fake.default_version(model_id)["versionId"] == "2"
    assert champion_model_dir(config, "vertex") == gcs_mount.container_path(better_uri)
    # the champion was read from the registry as its default version, every day it existed, by resource name
    assert [call.path.rsplit("/", 1)[1] for call in fake.calls("GET", r"/models/[^/]+$")].count(model_id) >= 2
    # a display-name list only once, before day 1, to refuse a namesake model under another id
    assert [call.query["filter"] for call in fake.calls("GET", r"/models$")] == [['display_name="adrank-ranker"']] * 2
    assert _upload(fake, 2)["model"]["labels"]["adrank-champion"] == worse.champion_version == "2"
    # the upload is a long-running operation the client polled until done
    assert len(fake.calls("GET", r"/models/[^/]+/operations/[^/]+$")) == 3  # one poll each: done
    assert fake.rejected == []


@pytest.mark.parametrize("policy", ["promote", "keep"])
def test_a_champion_that_cannot_be_loaded_has_a_defined_outcome(registry, tmp_path, day, policy):
    fake = registry
    examples_dir, _, _ = day
    config = _config(f"promotion.on_unscorable_champion={policy}")
    _, first_uri = _promote(tmp_path, config, examples_dir, GOOD, "day1")
    (Path(gcs_mount.container_path(first_uri)) / "saved_model.pb").unlink()  # a broken champion artifact

    decision, second_uri = _promote(tmp_path, config, examples_dir, BAD, "day2")
    assert decision.champion_status == "unscorable" and decision.champion_logloss is None
    assert decision.champion_version == "1"
    assert "cannot load the model" in decision.reason
    assert decision.promoted is (policy == "promote")
    assert decision.version == "2"  # registered either way: nothing in the registry is lost
    (model_id,) = fake.models
    body = _upload(fake, 1)
    assert body["parentModel"] == f"{LOCATION}/models/{model_id}"
    assert body["model"].get("versionAliases", []) == (["default"] if policy == "promote" else [])
    _, evaluation = _imported(fake, 1)
    assert evaluation["metrics"]["logLoss"] == pytest.approx(decision.challenger_logloss)
    assert [v["versionId"] for v in fake.model_versions(model_id)] == ["1", "2"]
    assert fake.default_version(model_id)["versionId"] == ("2" if policy == "promote" else "1")
    expected_champion = second_uri if policy == "promote" else first_uri
    assert champion_model_dir(config, "vertex") == gcs_mount.container_path(expected_champion)
    assert fake.rejected == []


def test_the_double_rejects_what_vertex_rejects(registry):
    """Strict parsing reaches the registry routes too: a field UploadModelRequest lacks is a 400."""
    fake = registry
    status, payload = fake.handle("POST", f"/v1/{LOCATION}/models:upload", {},
                                  {"parent": LOCATION, "model": {"displayName": "m", "isDefaultVersion": True}})
    assert status == 400 and "isDefaultVersion" in payload["error"]["message"]
    status, _ = fake.handle("GET", f"/v1/{LOCATION}/models", {"filter": ['labels.team="ads"']}, None)
    assert status == 400
    status, _ = fake.handle("GET", f"/v1/{LOCATION}/models/missing", {}, None)
    assert status == 404


def test_a_gcs_uri_is_read_under_the_container_mount():
    assert gcs_mount.container_path("gs://adrank-prod-pipelines/root/1/model") == "/gcs/adrank-prod-pipelines/root/1/model"
    assert gcs_mount.container_path("/tmp/runs/model") == "/tmp/runs/model"  # a local run's path is its own
