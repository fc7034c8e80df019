"""One decision per day read, against the Vertex double, which holds an alias on one version of a model only (as
Vertex does): a day run twice, a three-day catch-up and a promotion retried after its upload each end with both
steps done (the run SUCCEEDED) and exactly one registered version per day, labelled with it, the promoted days
aliased `champion-YYYYMMDD` by the day read and `champion` on the default. The model is found by the resource name
adrank gave it, never by display name; the model-version step says what the registry holds when it fails.

A "run" here is what the retraining pipeline's last two steps do: `promote_best_run` (the promote step) and
`record_model_version` (the model version step), through the real aiplatform client."""

from __future__ import annotations

from pathlib import Path

import fixture_models
import pytest
from google.cloud.aiplatform import initializer
from google_cloud_pipeline_components.types.artifact_types import VertexModel

from components.lineage.model_version import RegistryStateError, record_model_version
from components.registry.promote_challenger import promote_best_run
from components.registry.vertex import RegistryModelNotFound
from configs import load_config
from configs.slices import PromoteStepConfig
from foundation import gcs_mount
from ops.vertex.session import VertexSession

VERTEX_CONFIG = Path(__file__).parents[3] / "configs" / "vertex.yaml"
GOOD, BAD = (2.0, -2.0), (0.5, -1.0)
LOCATION = "projects/adrank-prod/locations/us-central1"
MODEL = f"{LOCATION}/models/adrank-ranker"
ROOT = "gs://adrank-prod-pipelines/root"


@pytest.fixture
def registry(fake_vertex, tmp_path, monkeypatch):
    fake, endpoint = fake_vertex
    client_config = vars(initializer.global_config)
    before = dict(client_config)
    initializer.global_config.__init__()
    VertexSession("adrank-prod", "us-central1", endpoint).init()
    monkeypatch.setattr(gcs_mount, "GCS_MOUNT_ROOT", str(tmp_path / "gcs"))
    yield fake
    client_config.clear()
    client_config.update(before)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """The two SavedModels every day's challenger is copied from (saving one costs a second)."""
    directory = tmp_path_factory.mktemp("models")
    return {"good": fixture_models.save_model(directory / "good", *GOOD),
            "bad": fixture_models.save_model(directory / "bad", *BAD)}


def _config(*overrides) -> PromoteStepConfig:
    whole = load_config(VERTEX_CONFIG, ["runs_per_target=1", "promotion.min_eval_positives=10", *overrides])
    return PromoteStepConfig.model_validate_json(PromoteStepConfig.of(whole).to_json())


class Days:
    """Each day's eval examples (one window per day) and its challengers, under the test's gs:// mount."""

    def __init__(self, tmp_path: Path, models: dict[str, Path]):
        self.tmp_path, self.models = tmp_path, models
        self.x, self.y = fixture_models.day_of_examples(seed=3, n=1000)

    def examples(self, window_end: str) -> Path:
        directory = self.tmp_path / "examples" / window_end[:10]
        if not directory.exists():
            fixture_models.write_eval_examples(directory, self.x, self.y, window_end=window_end)
        return directory

    def summary(self, window_end: str, model: str, job: str) -> Path:
        import shutil

        uri = f"{ROOT}/{job}/train/model"
        shutil.copytree(self.models[model], gcs_mount.container_path(uri), dirs_exist_ok=True)
        return fixture_models.summary_naming(self.tmp_path / f"{job}.json", uri, 0.5, "adrank-daily")

    def run(self, config: PromoteStepConfig, window_end: str, model: str, job: str):
        """The promote step, then the model version step, of pipeline job `job` reading the window ending there."""
        name = f"{LOCATION}/pipelineJobs/{job}"
        decision = promote_best_run(config, "vertex", str(self.summary(window_end, model, job)),
                                    str(self.examples(window_end)), name)
        path = self.tmp_path / f"{job}-promotion.json"
        decision.write(path)
        artifact = VertexModel(name="model_version", uri="gs://bucket/root/model_version", metadata={})
        record_model_version(str(path), name, artifact)
        return decision, artifact


@pytest.fixture
def days(tmp_path, models):
    return Days(tmp_path, models)


def _versions(fake) -> list[tuple[str, str, list[str]]]:
    (versions,) = fake.models.values()
    return [(v["versionId"], v["labels"].get("adrank-day", ""), v["versionAliases"]) for v in versions]


def test_a_day_run_twice_registers_one_version_and_the_second_run_reports_its_decision(registry, days):
    fake, config = registry, _config()
    first, artifact = days.run(config, "2026-03-04T00:00:00Z", "good", "adrank-daily-a")
    assert (first.version, first.promoted, first.day, first.reused) == ("1", True, "2026-03-03", False)
    assert first.model_resource_name == MODEL and artifact.metadata["resourceName"] == f"{MODEL}@1"
    # the same day again: a manual re-run, a schedule's retry, another create time; the challenger it trained is
    # another model, and the day's decision stands
    again, artifact = days.run(config, "2026-03-04T00:00:00Z", "bad", "adrank-daily-b")
    assert (again.version, again.promoted, again.reused, again.decided_by) == ("1", True, True, "adrank-daily-a")
    assert again.reason == first.reason and again.difference == first.difference
    assert artifact.metadata["resourceName"] == f"{MODEL}@1"
    assert len(fake.calls("POST", r"/models:upload$")) == 1
    assert len(fake.calls("POST", r"/evaluations:import$")) == 1
    assert _versions(fake) == [("1", "20260303", ["default", "champion", "champion-20260303"])]
    (version,) = fake.models["adrank-ranker"]
    assert version["labels"]["adrank-job"] == "adrank-daily-a" and version["labels"]["adrank-decision"] == "promoted"
    assert fake.rejected == []


def test_a_three_day_catch_up_registers_one_version_per_day_aliased_by_the_day_read(registry, days):
    """`schedule resume --catch-up` creates the missed days' runs at once; each reads its own day. Day 2's run
    is caught up twice (it had run before the pause too): still one version for it."""
    fake, config = registry, _config()
    outcomes = {}
    for window_end, model, job in (("2026-03-04T00:00:00Z", "bad", "adrank-daily-20260310030000"),
                                   ("2026-03-05T00:00:00Z", "good", "adrank-daily-20260310030001"),
                                   ("2026-03-05T00:00:00Z", "bad", "adrank-daily-20260310030002"),
                                   ("2026-03-06T00:00:00Z", "bad", "adrank-daily-20260310030003")):
        decision, _ = days.run(config, window_end, model, job)
        outcomes.setdefault(decision.day, []).append((decision.version, decision.promoted, decision.reused))
    assert outcomes == {"2026-03-03": [("1", True, False)],
                        "2026-03-04": [("2", True, False), ("2", True, True)],
                        "2026-03-05": [("3", False, False)]}
    assert _versions(fake) == [("1", "20260303", ["champion-20260303"]),
                               ("2", "20260304", ["default", "champion", "champion-20260304"]),
                               ("3", "20260305", [])]
    assert len(fake.calls("POST", r"/models:upload$")) == 3 and fake.rejected == []


def test_a_promotion_that_fails_after_its_upload_is_retried_without_a_second_version(registry, days):
    fake, config = registry, _config()
    days.run(config, "2026-03-04T00:00:00Z", "bad", "adrank-daily-1")
    fake.failures.append(("POST", r"/evaluations:import$", 500))  # the upload went through, the evaluation not
    with pytest.raises(Exception, match="500"):
        days.run(config, "2026-03-05T00:00:00Z", "good", "adrank-daily-2")
    assert [v for v, _, _ in _versions(fake)] == ["1", "2"]
    # the step's retry policy runs it again: version 2 is found, judged again against the champion its label
    # names (version 1), and its evaluation imported; the model version step then aliases it
    retried, artifact = days.run(config, "2026-03-05T00:00:00Z", "good", "adrank-daily-2")
    assert (retried.version, retried.promoted, retried.champion_version, retried.reused) == ("2", True, "1", False)
    assert retried.champion_status == "scored" and retried.difference < 0
    assert len(fake.calls("POST", r"/models:upload$")) == 2  # one per day
    assert _versions(fake) == [("1", "20260303", ["champion-20260303"]),
                               ("2", "20260304", ["default", "champion", "champion-20260304"])]
    (evaluation,) = fake.evaluations["adrank-ranker@2"]
    assert evaluation["metadata"]["adrank_decision"]["difference"] == pytest.approx(retried.difference)
    assert artifact.metadata["resourceName"] == f"{MODEL}@2"


def test_the_dated_alias_moves_like_champion(registry, days):
    """A version from before day labels holds the day's dated alias (then: the create day's): it moves."""
    fake, config = registry, _config()
    days.run(config, "2026-03-04T00:00:00Z", "bad", "adrank-daily-1")
    fake.models["adrank-ranker"][0]["versionAliases"].append("champion-20260304")
    days.run(config, "2026-03-05T00:00:00Z", "good", "adrank-daily-2")
    assert _versions(fake) == [("1", "20260303", ["champion-20260303"]),
                               ("2", "20260304", ["default", "champion", "champion-20260304"])]
    assert fake.rejected == []


def test_a_failing_alias_move_says_what_the_registry_holds(registry, days):
    fake, config = registry, _config()
    days.run(config, "2026-03-04T00:00:00Z", "bad", "adrank-daily-1")
    fake.failures.append(("POST", r":mergeVersionAliases$", 403))
    with pytest.raises(RegistryStateError) as raised:
        days.run(config, "2026-03-05T00:00:00Z", "good", "adrank-daily-2")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"model version {MODEL}@2 (day 2026-03-04, promoted): moving champion failed (")
    assert message.endswith("the registry holds: version 2 is registered and is the default (the default is "
                            "version 2); champion is on version 1; champion-20260304 is on no version")
    # the step's retry completes it
    days.run(config, "2026-03-05T00:00:00Z", "good", "adrank-daily-2")
    assert _versions(fake)[1] == ("2", "20260304", ["default", "champion", "champion-20260304"])


def test_the_model_is_found_by_the_resource_name_adrank_set_never_by_display_name(registry, days):
    fake = registry
    fake.models["4001"] = [{"name": f"{LOCATION}/models/4001", "displayName": "adrank-ranker", "versionId": "1",
                            "versionAliases": ["default"], "artifactUri": "gs://elsewhere/model", "labels": {}}]
    with pytest.raises(RegistryModelNotFound) as raised:
        days.run(_config(), "2026-03-04T00:00:00Z", "good", "adrank-daily-1")
    assert "has a model named 'adrank-ranker' (projects/adrank-prod/locations/us-central1/models/4001)" in \
        str(raised.value)
    assert "set vertex.model_registry.model_id to its id (4001)" in str(raised.value)
    assert not fake.calls("POST", r"/models:upload$")
    # named by its id, the existing model is promoted into
    decision, _ = days.run(_config("vertex.model_registry.model_id='4001'"), "2026-03-04T00:00:00Z", "good",
                           "adrank-daily-2")
    assert decision.model_resource_name == f"{LOCATION}/models/4001" and decision.version == "2"
    assert fake.calls("POST", r"/models:upload$")[0].body["parentModel"] == f"{LOCATION}/models/4001"
