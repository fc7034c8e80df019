"""How the Beam preprocessing job runs: locally on DirectRunner, at scale on Dataflow."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from configs.base import StrictModel


class PreprocessConfig(StrictModel):
    runner: Literal["DirectRunner", "DataflowRunner"] = "DirectRunner"
    direct_num_workers: int = Field(0, ge=0, description="0 = one worker per core")
    direct_running_mode: Literal["in_memory", "multi_threading", "multi_processing"] = "multi_processing"
    output_shards: int = Field(4, ge=1)
    max_invalid_fraction: float = Field(0.05, ge=0.0, le=1.0)
