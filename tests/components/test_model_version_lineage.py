"""The registered model version as the run's `google.VertexModel`, labelled with the job and the decision, and
aliased `champion` + `champion-YYYYMMDD` (the day the run read) when promoted: against the Vertex double, which
holds an alias on one version only, through the real SDK. (The day-by-day cases, with the promotion step before
it, are tests/components/registry/test_vertex_days.py.)"""

from __future__ import annotations

import json
from unittest import mock

import pytest
from google.cloud.aiplatform import initializer
from google_cloud_pipeline_components.types.artifact_types import VertexModel

from components.lineage.model_version import record_model_version
from ops.vertex.api_calls import Backoff
from ops.vertex.session import VertexSession
from tests.conftest import vertex_fake

LOCATION = "projects/adrank-prod/locations/us-central1"
JOB = f"{LOCATION}/pipelineJobs/adrank-daily-e351a349-20260304-030000"


@pytest.fixture
def registry(tmp_path):
    fake = vertex_fake.FakeVertex(project="adrank-prod", region="us-central1")
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
            mock.patch("ops.vertex.api_calls.BACKOFF", Backoff(initial_seconds=0.001, maximum_seconds=0.002)):
        initializer.global_config.__init__()
        VertexSession("adrank-prod", "us-central1", endpoint).init()
        yield fake
    client_config.clear()
    client_config.update(before)


def _decision(tmp_path, **fields) -> str:
    decision = {"model": "adrank-ranker", "version": "2", "registered": True, "promoted": True,
                "reason": "no worse than the champion", "champion_version": "1", "day": "2026-03-03",
                "model_resource_name": f"{LOCATION}/models/4001", **fields}
    path = tmp_path / "promotion.json"
    path.write_text(json.dumps(decision))
    return str(path)


def test_a_promoted_version_is_the_runs_vertex_model_with_aliases_and_labels(registry, tmp_path):
    artifact = VertexModel(name="model_version", uri="gs://bucket/root/model_version", metadata={})
    versioned = record_model_version(_decision(tmp_path), JOB, artifact)
    assert versioned == f"{LOCATION}/models/4001@2"
    assert artifact.metadata["resourceName"] == versioned and artifact.metadata["decision"] == "promoted"
    assert artifact.uri == f"https://us-central1-aiplatform.googleapis.com/v1/{versioned}"
    old, new = registry.models["4001"]
    assert new["versionAliases"] == ["default", "champion", "champion-20260303"]  # the day read
    assert "champion" not in old["versionAliases"]  # an alias names one version: moved, not duplicated
    assert new["labels"] == {"adrank-pipeline": "adrank-daily", "adrank-target": "cpu",
                             "adrank-job": "adrank-daily-e351a349-20260304-030000", "adrank-decision": "promoted"}
    assert old["labels"] == {"adrank-pipeline": "adrank-daily"}
    assert registry.rejected == []


def test_a_kept_version_is_labelled_but_not_aliased(registry, tmp_path):
    old, new = registry.models["4001"]
    old["versionAliases"], new["versionAliases"] = ["default", "champion"], []  # kept: version 1 stays the default
    artifact = VertexModel(name="model_version", uri="gs://bucket/root/model_version", metadata={})
    record_model_version(_decision(tmp_path, promoted=False), JOB, artifact)
    assert old["versionAliases"] == ["default", "champion"] and new["versionAliases"] == []
    assert new["labels"]["adrank-decision"] == "kept"
    assert artifact.metadata["resourceName"] == f"{LOCATION}/models/4001@2"


def test_a_run_that_registered_nothing_says_why(registry, tmp_path):
    artifact = VertexModel(name="model_version", uri="gs://bucket/root/model_version", metadata={})
    path = _decision(tmp_path, version=None, registered=False, promoted=False, reason="the eval split has no positives")
    assert record_model_version(path, JOB, artifact) is None
    assert "resourceName" not in artifact.metadata
    assert artifact.metadata["reason"] == "no version registered: the eval split has no positives"
    assert registry.requests == []
