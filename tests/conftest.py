"""Fixtures shared across the test tree: the recording Vertex REST double on 127.0.0.1 (`fake_vertex`), used by the
ops tests (submit, schedule, runs) and the registry tests (promotion into the Vertex Model Registry)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from unittest import mock

import pytest

from ops.vertex.retry import Backoff

VERTEX_FAKE = Path(__file__).parent / "ops" / "vertex_fake.py"


def _load_fake_module():
    spec = importlib.util.spec_from_file_location("adrank_tests_vertex_fake", VERTEX_FAKE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


vertex_fake = _load_fake_module()


JAX_LANE_TESTS = Path(__file__).parent / "jax_lane"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/jax_lane runs in a process of its own (Keras on JAX, no TensorFlow: its conftest says why), so a run that
    does not name it leaves it out; tests/components/train/test_jax_lane_suite.py runs it."""
    if collection_path == JAX_LANE_TESTS and not any(
            Path(arg.split("::")[0]).resolve().is_relative_to(JAX_LANE_TESTS) for arg in config.args):
        return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whole-DAG test files (marked e2e) first, the rest in their order. `make test` runs two workers, one file
    per worker at a time, in this order (`--dist loadfile --no-loadscope-reorder`; xdist would otherwise put the
    files with most tests first), and the file whose fixture runs the whole DAG takes minutes: started last, it
    would leave the other core idle while it ran."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is None)


@pytest.fixture
def fake_vertex():
    """(fake, endpoint): the double serving on 127.0.0.1 for this test; GCS bucket creation is patched out, the
    waits between polls of a job are recorded instead of slept (`fake.pauses`), and retries back off for
    milliseconds, not seconds."""
    fake = vertex_fake.FakeVertex(project="adrank-prod", region="us-central1")
    with vertex_fake.FakeVertexServer(fake) as endpoint, mock.patch(
        "google.cloud.aiplatform.utils.gcs_utils.create_gcs_bucket_for_pipeline_artifacts_if_it_does_not_exist"
    ) as create_bucket, mock.patch("ops.vertex.jobs.pause") as pause, mock.patch(
        "ops.vertex.retry.BACKOFF", Backoff(initial_seconds=0.001, maximum_seconds=0.002)
    ):
        fake.create_bucket = create_bucket
        fake.pauses = pause
        yield fake, endpoint
