"""Fixtures for the ops tests: the vertex config; the Vertex double (`fake_vertex`) is in tests/conftest.py."""

from __future__ import annotations

import pytest

from tests.support.paths import REPO, VERTEX_CONFIG

__all__ = ["REPO", "VERTEX_CONFIG"]  # what the ops tests import from here (tests.ops.conftest)


@pytest.fixture
def vertex_args():
    """CLI arguments that load the production example with one run per target (fast to compile)."""
    return ["--config", str(VERTEX_CONFIG), "--set", "runs_per_target=1"]
