"""Compile one of the pipelines for a backend into a pipeline-spec YAML file."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from kfp import compiler

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
    devices = local_device_kinds() if backend == "local" else None  # nvidia-smi, not an import of TensorFlow
    compiler.Compiler().compile(create_pipeline(config, backend, devices, pipeline=pipeline), str(output))
    if pinned is not None and not allow_image_tags:
        try:
            refuse_tags_on_cached_steps(output, pinned)
        except ImageTagsOnCachedSteps:
            output.unlink(missing_ok=True)
            raise
    return output
