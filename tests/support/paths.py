"""Where things are in the checkout, for tests that name files of it."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
VERTEX_CONFIG = CONFIGS / "vertex.yaml"
EXAMPLES = CONFIGS / "examples"
