"""Compile one of the pipelines for a backend into a pipeline-spec YAML file, byte for byte the same in every process.

KFP writes the spec itself with sorted keys, but the comment header it puts above it prints each input's default
value from the protobuf `Struct` the spec holds, whose map order changes from process to process (the training
runs' items printed their keys in a different order in two processes, whatever PYTHONHASHSEED). The header is
written again here from the spec as written (KFP's own `extract_comments_from_pipeline_spec` over the sorted YAML),
so two compiles of one config in two processes are byte-identical.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

import yaml
from kfp import compiler
from kfp.compiler.pipeline_spec_builder import extract_comments_from_pipeline_spec

from components.images.digests import ImageDigests
from configs import AdrankConfig
from ops.image_pins import ImageTagsOnCachedSteps, pin_images, refuse_tags_on_cached_steps
from ops.spec_executor.machines import local_device_kinds
from pipelines.placement import Backend
from pipelines.ranking import PipelineKind, create_pipeline

log = logging.getLogger(__name__)


def _to_log(line: str) -> None:
    log.info(line)


def compile_pipeline(config: AdrankConfig, backend: Backend, output: Path, pipeline: PipelineKind = "benchmark", *,
                     digests: ImageDigests | None = None, echo: Callable[[str], None] = _to_log,
                     allow_image_tags: bool = True) -> Path:
    """For Vertex, images run by the digest `adrank images build` recorded (`digests`, default the checkout's
    components/images/digests.json); `echo` (an INFO record) gets one line per image saying which reference the spec
    uses. Without `allow_image_tags`, a spec whose cached steps would run an image by tag is refused
    (`ops.image_pins.ImageTagsOnCachedSteps`) and not written."""
    output.parent.mkdir(parents=True, exist_ok=True)
    pinned = None
    if backend == "vertex":
        pinned = pin_images(config, digests if digests is not None else ImageDigests.load())
        for line in pinned.notes():
            echo(line)
        config = pinned.config
    compile_spec(config, backend, pipeline, output)
    if pinned is not None and not allow_image_tags:
        try:
            refuse_tags_on_cached_steps(output, pinned)
        except ImageTagsOnCachedSteps:
            output.unlink(missing_ok=True)
            raise
    return output


def compile_spec(config: AdrankConfig, backend: Backend, pipeline: PipelineKind, output: Path) -> None:
    """Write the spec of `config` (images already pinned) to `output`: bytes that depend only on the arguments."""
    devices = local_device_kinds() if backend == "local" else None  # nvidia-smi, not an import of TensorFlow
    compiler.Compiler().compile(create_pipeline(config, backend, devices, pipeline=pipeline), str(output))
    write_stable_header(output)


def write_stable_header(path: Path) -> None:
    """Rewrite the comment header above the compiled spec from the spec's sorted YAML (see the module docstring)."""
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    body_start = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    body = "".join(lines[body_start:])
    spec = next(yaml.load_all(body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))  # libyaml: 10x faster
    header = extract_comments_from_pipeline_spec(spec, spec.get("pipelineInfo", {}).get("description", ""))
    path.write_text(header + body)
