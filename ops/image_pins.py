"""Which image reference a compiled Vertex spec runs: the digest `adrank images build` recorded for the config's
tag (`image@sha256:...`, immutable), or the tag itself when none is recorded, said so on the console.

Pinned: `vertex.images.{cpu,gpu,tpu}` (every step and training CustomJob), `preprocess.dataflow.worker_image`
(the Dataflow workers) and `vertex.model_registry.serving_image` (the promoted model's serving container). The
config the user wrote is left as it is (its hash, the job labels and the job id do not change); only the copy
the DAG is built from carries the digests, so a step's inputs, and its cache key, change with the image.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from components.images.digests import ImageDigests
from configs import AdrankConfig


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
        kind: resolve(f"vertex.images.{kind}", getattr(vertex.images, kind)) for kind in ("cpu", "gpu", "tpu")})
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
