"""Compile one of the pipelines for a backend into a pipeline-spec YAML file."""

from __future__ import annotations

from pathlib import Path

from kfp import compiler

from configs import AdrankConfig
from pipelines.placement import Backend
from pipelines.ranking import PipelineKind, create_pipeline


def compile_pipeline(config: AdrankConfig, backend: Backend, output: Path,
                     pipeline: PipelineKind = "benchmark") -> Path:
    output.parent.mkdir(parents=True, exist_ok=True)
    compiler.Compiler().compile(create_pipeline(config, backend, pipeline=pipeline), str(output))
    return output
