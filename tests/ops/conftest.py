"""Fixtures for the ops tests: the vertex config, each spec compiled once for the Vertex command tests; the Vertex
double (`fake_vertex`) is in tests/conftest.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.paths import REPO, VERTEX_CONFIG

__all__ = ["REPO", "VERTEX_CONFIG"]  # what the ops tests import from here (tests.ops.conftest)


@pytest.fixture
def vertex_args():
    """CLI arguments that load the production example with one run per target (fast to compile)."""
    return ["--config", str(VERTEX_CONFIG), "--set", "runs_per_target=1"]


_COMPILED: dict[tuple[str, str, str], Path] = {}


@pytest.fixture(autouse=True)
def compiled_once(request, monkeypatch, tmp_path_factory):
    """In the Vertex command tests (`test_vertex_*.py`), `submit` and `schedule` compile the same few configs again
    and again; a spec's bytes depend only on the config (images pinned), the backend and the pipeline
    (tests/pipelines/test_vertex_compile.py compiles in two processes and compares), so each is compiled once per
    session here and copied to where the command asked for it. The compile tests themselves compile every time."""
    if not request.module.__name__.rsplit(".", 1)[-1].startswith("test_vertex_"):
        yield
        return
    from ops import pipeline_compiler

    compile_spec = pipeline_compiler.compile_spec

    def once(config, backend, pipeline, output: Path) -> None:
        key = (config.model_dump_json(), backend, pipeline)
        if key not in _COMPILED:
            compiled = tmp_path_factory.mktemp("compiled-once") / "pipeline.yaml"
            compile_spec(config, backend, pipeline, compiled)
            _COMPILED[key] = compiled
        shutil.copyfile(_COMPILED[key], output)

    monkeypatch.setattr(pipeline_compiler, "compile_spec", once)
    yield
