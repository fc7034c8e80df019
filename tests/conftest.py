"""Fixtures shared across the test tree: the recording Vertex REST double on 127.0.0.1 (`fake_vertex`), used by the
ops tests (submit, schedule, runs) and the registry tests (promotion into the Vertex Model Registry); the session
fixtures of tests/support/fixtures.py (`shared_runs`, `three_target_run`); the order whole-DAG files run in."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from unittest import mock

import pytest

from ops.vertex.api_calls import Backoff

VERTEX_FAKE = Path(__file__).parent / "ops" / "vertex_fake.py"


def _load_fake_module():
    spec = importlib.util.spec_from_file_location("adrank_tests_vertex_fake", VERTEX_FAKE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


vertex_fake = _load_fake_module()

pytest_plugins = ["tests.support.fixtures"]  # session fixtures any test file may use: shared whole-DAG runs


# The test files that run whole DAGs (or minutes of Beam), longest first: seconds of `make test` / `make test-long`
# from a clean clone on the shared 2-core host (2026-11-27, byte-code compiled, two workers). Both targets run two
# workers, one file per worker at a time (`--dist loadfile`), in this order (`--no-loadscope-reorder`): the longest
# files start first, so no worker is left alone with a long file at the end (xdist's own order puts the files with
# most tests first). `test_local_dag.py` is the longest of `make test` (its session run, `three_target_run`), so it
# comes before every file `make test` runs. A new file that runs a whole DAG belongs here, by its measured time.
LONGEST_FIRST = (
    "tests/pipelines/test_wide_config_spec_run.py",  # long 385 s: a 5,000-feature config's compiled Vertex spec
    "tests/pipelines/test_wide_config_run.py",  # long 335 s: a 5,000-feature config through adrank run
    "tests/e2e/test_resume.py",  # long 417 s: runs killed and resumed (training, preprocess, moved, tampered)
    "tests/e2e/test_replay.py",  # long 369 s: a 3-day replay; a 2-day replay killed and resumed
    "tests/e2e/test_local_dag.py",  # make test 220 s: three_target_run (3 targets x 2 runs); long 39 s: a failed run
    "tests/components/preprocess/test_wide_and_windowed.py",  # long 164 s: 1,000 features through preprocess
    "tests/pipelines/test_retraining_spec_run.py",  # long 131 s: the retraining spec twice, a failing day
    "tests/e2e/test_scaling_sweep.py",  # long 121 s: a sweep of 1, 2, 4 simulated devices on each lane
    "tests/e2e/test_run_interruption.py",  # long 120 s: runs killed in preprocess and training, a code edit
    "tests/pipelines/test_compiled_spec_run.py",  # long 113 s: the compiled Vertex spec; make test 14 s
    "tests/e2e/test_csv_records_run.py",  # long 45 s, make test 12 s
    "tests/e2e/test_file_source_run.py",  # long 34 s, make test 11 s: the click-log example
    "tests/components/train/test_distributed.py",  # long 22 s, make test 18 s: cpu-ps clusters, mirrored CPUs
)


JAX_LANE_TESTS = Path(__file__).parent / "jax_lane"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/jax_lane runs in a process of its own (Keras on JAX, no TensorFlow: its conftest says why), so a run that
    does not name it leaves it out; tests/components/train/test_jax_lane_suite.py runs it."""
    if collection_path == JAX_LANE_TESTS and not any(
            Path(arg.split("::")[0]).resolve().is_relative_to(JAX_LANE_TESTS) for arg in config.args):
        return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of `LONGEST_FIRST` first, in its order, then the rest as collected."""
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}

    def order(item: pytest.Item) -> int:
        return rank.get(item.nodeid.split("::", 1)[0], len(rank))

    items.sort(key=order)


@pytest.fixture
def fake_vertex():
    """(fake, endpoint): the double serving on 127.0.0.1 for this test; GCS bucket creation is patched out, the
    waits between polls of a job are recorded instead of slept (`fake.pauses`), and retries back off for
    milliseconds, not seconds."""
    fake = vertex_fake.FakeVertex(project="adrank-prod", region="us-central1")
    with vertex_fake.FakeVertexServer(fake) as endpoint, mock.patch(
        "google.cloud.aiplatform.utils.gcs_utils.create_gcs_bucket_for_pipeline_artifacts_if_it_does_not_exist"
    ) as create_bucket, mock.patch("ops.vertex.jobs.pause") as pause, mock.patch(
        "ops.vertex.api_calls.BACKOFF", Backoff(initial_seconds=0.001, maximum_seconds=0.002)
    ):
        fake.create_bucket = create_bucket
        fake.pauses = pause
        yield fake, endpoint
