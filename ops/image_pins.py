"""Which image reference a compiled Vertex spec runs: the digest `adrank images build` recorded for the config's
tag (`image@sha256:...`, immutable), or the tag itself when none is recorded, said so on the console.

Pinned: `vertex.images.{cpu,gpu,tpu}` (every step and training CustomJob), `preprocess.dataflow.worker_image`
(the Dataflow workers) and `vertex.model_registry.serving_image` (the promoted model's serving container). The
config the user wrote is left as it is (its hash, the job labels and the job id do not change); only the copy
the DAG is built from carries the digests, so a step's inputs, and its cache key, change with the image.

A step Vertex may take from its cache must run an image by digest (`cached_steps_on_tags`): Vertex keys a cached
execution by the image reference as compiled, so with a tag a re-pushed image (new code, same tag) would get the
results of the old one. `adrank compile --backend vertex` refuses such a spec, naming the image, its tag and the
cached steps that run it, unless asked (`--allow-image-tags`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from components.images.digests import ImageDigests
from configs import AdrankConfig
from configs.vertex import IMAGE_KINDS
from ops.spec_executor.pipeline_spec import Dag, load_pipeline_spec


@dataclass
class PinnedImages:
    config: AdrankConfig  # the config with every recorded image replaced by its digest reference
    pinned: dict[str, str] = field(default_factory=dict)  # field → digest reference used
    unpinned: dict[str, str] = field(default_factory=dict)  # field → tag used, no digest recorded

    def notes(self) -> list[str]:
        """One line per pinned image, one for those left on their tags."""
        lines = [f"image {name}: {reference} (digest recorded by adrank images build)"
                 for name, reference in self.pinned.items()]
        if self.unpinned:
            lines.append("images by tag, no digest recorded (a later run may get another image; `adrank images "
                         "build` records digests): " + ", ".join(f"{name} {tag}" for name, tag in self.unpinned.items()))
        return lines


def pin_images(config: AdrankConfig, digests: ImageDigests) -> PinnedImages:
    """`config` with its images resolved through `digests` (a config without a vertex section is returned as is)."""
    vertex = config.vertex
    if vertex is None:
        return PinnedImages(config)
    result = PinnedImages(config)

    def resolve(name: str, image: str | None) -> str | None:
        if not image:
            return image
        reference = digests.resolve(image)
        if reference is None:
            result.unpinned[name] = image
            return image
        result.pinned[name] = reference
        return reference

    images = vertex.images.model_copy(update={
        kind: resolve(f"vertex.images.{kind}", getattr(vertex.images, kind)) for kind in IMAGE_KINDS})
    registry = vertex.model_registry.model_copy(update={
        "serving_image": resolve("vertex.model_registry.serving_image", vertex.model_registry.serving_image)})
    update: dict = {"vertex": vertex.model_copy(update={"images": images, "model_registry": registry})}
    flow = config.preprocess.dataflow
    if flow is not None and config.preprocess.runner == "DataflowRunner":
        worker_image = resolve("preprocess.dataflow.worker_image", flow.worker_image)
        update["preprocess"] = config.preprocess.model_copy(
            update={"dataflow": flow.model_copy(update={"worker_image": worker_image})})
    result.config = config.model_copy(update=update)
    return result


class ImageTagsOnCachedSteps(ValueError):
    """A compiled Vertex spec whose cached steps run images by tag (see the module docstring)."""


def cached_steps_on_tags(spec_path: Path, unpinned: dict[str, str]) -> dict[str, list[str]]:
    """Tag → the display names of the steps with caching on whose container, inputs or component (a custom job's
    worker pools, a Dataflow worker image in the step's config) name it; `unpinned` is field → tag."""
    spec = load_pipeline_spec(spec_path)
    patterns = {tag: re.compile(rf"(?<![\w./:@-]){re.escape(tag)}(?![\w.-])") for tag in set(unpinned.values())}
    found: dict[str, list[str]] = {}

    def walk(dag: Dag) -> None:
        for task in dag.order():
            if task.dag is not None:
                walk(task.dag)
            elif task.enable_cache:
                text = json.dumps([task.container, task.inputs, task.component])
                for tag, pattern in patterns.items():
                    if pattern.search(text) and task.display_name not in found.setdefault(tag, []):
                        found[tag].append(task.display_name)

    walk(spec.root)
    return {tag: steps for tag, steps in sorted(found.items()) if steps}


def refuse_tags_on_cached_steps(spec_path: Path, pinned: PinnedImages) -> None:
    """`ImageTagsOnCachedSteps` naming each image left on its tag that a cached step of the spec runs: the tag, the
    config fields that give it, the steps."""
    on_tags = cached_steps_on_tags(spec_path, pinned.unpinned)
    if not on_tags:
        return
    images = "; ".join(
        f"{tag} ({', '.join(name for name, t in pinned.unpinned.items() if t == tag)}; run by {', '.join(steps)})"
        for tag, steps in on_tags.items())
    raise ImageTagsOnCachedSteps(
        f"cached steps would run images by tag, with no digest recorded: {images}. Vertex keys a cached step by its "
        "image reference, so after a tag is pushed again these steps would reuse results of the old image's code. "
        "Record digests with `adrank images build`, or compile with --allow-image-tags to accept that")
