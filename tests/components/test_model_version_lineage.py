"""The registered model version as the run's `google.VertexModel`, labelled with the job and the decision, and
aliased `champion` + `champion-YYYYMMDD` when promoted: against the Vertex double, through the real SDK."""

from __future__ import annotations

import copy
import json
from unittest import mock
from urllib.parse import unquote

import pytest
from google.cloud import aiplatform_v1
from google.cloud.aiplatform import initializer
from google_cloud_pipeline_components.types.artifact_types import VertexModel

from components.lineage.model_version import record_model_version
from ops.vertex.retry import Backoff
from ops.vertex.session import VertexSession
from tests.conftest import vertex_fake

LOCATION = "projects/adrank-prod/locations/us-central1"
JOB = f"{LOCATION}/pipelineJobs/adrank-daily-e351a349-20260304-030000"


class RegistryVertex(vertex_fake.FakeVertex):
    """The double plus UpdateModel on a version and MergeVersionAliases (an alias names one version: adding one
    another version holds is refused, `-alias` removes it)."""

    def _routes(self):
        loc = r"projects/([^/]+)/locations/([^/]+)"
        return [
            ("PATCH", loc + r"/models/([^/:]+)", self._update_model, aiplatform_v1.Model),
            ("POST", loc + r"/models/([^/:]+):mergeVersionAliases", self._merge_aliases,
             aiplatform_v1.MergeVersionAliasesRequest),
        ] + super()._routes()

    def _update_model(self, project, region, model_ref, query, body):
        status, version = self._model_version(project, region, model_ref)
        if status != 200:
            return status, version
        for path in query["updateMask"][0].split(","):
            version[path] = copy.deepcopy(body[path])
        return 200, version

    def _merge_aliases(self, project, region, model_ref, query, body):
        status, version = self._model_version(project, region, model_ref)
        if status != 200:
            return status, version
        model_id = unquote(model_ref).split("@")[0]
        for alias in body["versionAliases"]:
            if alias.startswith("-"):
                version["versionAliases"] = [a for a in version["versionAliases"] if a != alias[1:]]
                continue
            holders = [v["versionId"] for v in self.models[model_id] if alias in v.get("versionAliases", [])]
            if holders and holders != [version["versionId"]]:
                return 400, vertex_fake._error(400, f"alias {alias} is already used by version {holders[0]}")
            if alias not in version["versionAliases"]:
                version["versionAliases"].append(alias)
        return 200, version


@pytest.fixture
def registry(tmp_path):
    fake = RegistryVertex(project="adrank-prod", region="us-central1")
    name = f"{LOCATION}/models/4001"
    fake.models["4001"] = [
        {"name": name, "displayName": "adrank-ranker", "versionId": "1", "versionAliases": ["champion"],
         "labels": {"adrank-pipeline": "adrank-daily"}},
        {"name": name, "displayName": "adrank-ranker", "versionId": "2", "versionAliases": ["default"],
         "labels": {"adrank-pipeline": "adrank-daily", "adrank-target": "cpu"}},
    ]
    client_config = vars(initializer.global_config)
    before = dict(client_config)
    with vertex_fake.FakeVertexServer(fake) as endpoint, \
            mock.patch("ops.vertex.retry.BACKOFF", Backoff(initial_seconds=0.001, maximum_seconds=0.002)):
        initializer.global_config.__init__()
        VertexSession("adrank-prod", "us-central1", endpoint).init()
        yield fake
    client_config.clear()
    client_config.update(before)


def _decision(tmp_path, **fields) -> str:
    decision = {"model": "adrank-ranker", "version": "2", "registered": True, "promoted": True,
                "reason": "no worse than the champion", "champion_version": "1", **fields}
    path = tmp_path / "promotion.json"
    path.write_text(json.dumps(decision))
    return str(path)


def test_a_promoted_version_is_the_runs_vertex_model_with_aliases_and_labels(registry, tmp_path):
    artifact = VertexModel(name="model_version", uri="gs://bucket/root/model_version", metadata={})
    versioned = record_model_version(_decision(tmp_path), JOB, "2026-03-04T03:00:00Z", artifact)
    assert versioned == f"{LOCATION}/models/4001@2"
    assert artifact.metadata["resourceName"] == versioned and artifact.metadata["decision"] == "promoted"
    assert artifact.uri == f"https://us-central1-aiplatform.googleapis.com/v1/{versioned}"
    old, new = registry.models["4001"]
    assert new["versionAliases"] == ["default", "champion", "champion-20260304"]
    assert "champion" not in old["versionAliases"]  # an alias names one version: moved, not duplicated
    assert new["labels"] == {"adrank-pipeline": "adrank-daily", "adrank-target": "cpu",
                             "adrank-job": "adrank-daily-e351a349-20260304-030000", "adrank-decision": "promoted"}
    assert old["labels"] == {"adrank-pipeline": "adrank-daily"}
    assert registry.rejected == []


def test_a_kept_version_is_labelled_but_not_aliased(registry, tmp_path):
    artifact = VertexModel(name="model_version", uri="gs://bucket/root/model_version", metadata={})
    record_model_version(_decision(tmp_path, promoted=False), JOB, "2026-03-04T03:00:00Z", artifact)
    old, new = registry.models["4001"]
    assert old["versionAliases"] == ["champion"] and new["versionAliases"] == ["default"]
    assert new["labels"]["adrank-decision"] == "kept"
    assert artifact.metadata["resourceName"] == f"{LOCATION}/models/4001@2"


def test_a_run_that_registered_nothing_says_why(registry, tmp_path):
    artifact = VertexModel(name="model_version", uri="gs://bucket/root/model_version", metadata={})
    path = _decision(tmp_path, version=None, registered=False, promoted=False, reason="the eval split has no positives")
    assert record_model_version(path, JOB, "2026-03-04T03:00:00Z", artifact) is None
    assert "resourceName" not in artifact.metadata
    assert artifact.metadata["reason"] == "no version registered: the eval split has no positives"
    assert registry.requests == []
