"""Where the pipeline runs on Google Cloud. Only the vertex backend reads this section."""

from __future__ import annotations

from pydantic import Field

from configs.base import StrictModel


class ImagesConfig(StrictModel):
    cpu: str = "python:3.11-slim"
    gpu: str | None = None
    tpu: str | None = None


class VertexConfig(StrictModel):
    project: str = Field(pattern=r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
    region: str = "us-central1"
    pipeline_root: str = Field(pattern=r"^gs://")
    service_account: str | None = None
    images: ImagesConfig = ImagesConfig()
