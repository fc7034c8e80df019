"""How the Beam preprocessing job runs: locally on DirectRunner, at scale on Dataflow."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from configs.base import StrictModel


class DataflowConfig(StrictModel):
    """DataflowRunner options (see `components.preprocess.options.beam_pipeline_options`)."""

    project: str = Field(min_length=1)
    region: str = "us-central1"
    temp_location: str = Field(pattern=r"^gs://")
    staging_location: str | None = Field(None, pattern=r"^gs://")
    worker_image: str | None = Field(None, description="sdk_container_image with adrank installed")
    machine_type: str = "n1-standard-4"
    num_workers: int | None = Field(None, ge=1)
    max_workers: int = Field(10, ge=1)
    service_account: str | None = None
    network: str | None = None
    subnetwork: str | None = None
    use_public_ips: bool = True
    disk_size_gb: int | None = Field(None, ge=10)


class PreprocessConfig(StrictModel):
    runner: Literal["DirectRunner", "DataflowRunner"] = "DirectRunner"
    direct_num_workers: int = Field(0, ge=0, description="0 = one worker per core")
    direct_running_mode: Literal["in_memory", "multi_threading", "multi_processing"] = "multi_processing"
    output_shards: int = Field(4, ge=1)
    shuffle_buckets_per_shard: int = Field(
        64, ge=1, le=1_000_000,
        description="the train split is written in a seeded hash order, grouped in output_shards x this many buckets",
    )
    block_examples: int = Field(
        512, ge=1, le=65_536, description="examples per block of the training-ready block files (docs/input.md)"
    )
    max_invalid_fraction: float = Field(0.05, ge=0.0, le=1.0)
    min_positives_per_task: int = Field(
        1, ge=0, description="preprocess fails when a split has fewer positive labels than this for a task "
        "(a task whose event never occurs would otherwise train on all-negative labels); 0: not checked",
    )
    min_negatives_per_task: int = Field(
        1, ge=0, description="preprocess fails when a split has fewer negative labels than this for a task; "
        "0: not checked",
    )
    max_missing_share: float = Field(
        0.5, ge=0.0, le=1.0, description="a feature absent from more than this share of examples is a finding "
        "in the report and a warning on the console (a misspelt column is absent from every example)",
    )
    dataflow: DataflowConfig | None = None

    @model_validator(mode="after")
    def _dataflow_needs_options(self) -> PreprocessConfig:
        if self.runner == "DataflowRunner" and self.dataflow is None:
            raise ValueError("runner DataflowRunner needs a 'dataflow' section (project, region, temp_location, ...)")
        return self
