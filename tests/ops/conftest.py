"""Fixtures for the ops tests: the vertex config; the Vertex double (`fake_vertex`) is in tests/conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent
REPO = HERE.parents[1]
VERTEX_CONFIG = REPO / "configs" / "vertex.yaml"


@pytest.fixture
def vertex_args():
    """CLI arguments that load the production example with one run per target (fast to compile)."""
    return ["--config", str(VERTEX_CONFIG), "--set", "runs_per_target=1"]
