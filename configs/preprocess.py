"""How the Beam preprocessing job runs: locally on DirectRunner, at scale on Dataflow."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from configs.base import StrictModel
from configs.bounds import at_most

MAX_OUTPUT_SHARDS = 10_000
MAX_DATAFLOW_WORKERS = 4_000
DATAFLOW_WORKERS_REASON = "Dataflow runs at most 4,000 workers per job"
MAX_EXAMPLES = 10**12
EXAMPLES_REASON = "a count of examples above 10^12 is a typo, not a log"


class DataflowConfig(StrictModel):
    """DataflowRunner options (see `components.preprocess.beam_options.beam_pipeline_options`)."""

    project: str = Field(min_length=1)
    region: str = "us-central1"
    temp_location: str = Field(pattern=r"^gs://")
    staging_location: str | None = Field(None, pattern=r"^gs://")
    worker_image: str | None = Field(None, description="sdk_container_image with adrank installed")
    machine_type: str = "n1-standard-4"
    num_workers: Annotated[int | None, at_most(MAX_DATAFLOW_WORKERS, DATAFLOW_WORKERS_REASON)] = Field(None, ge=1)
    max_workers: Annotated[int, at_most(MAX_DATAFLOW_WORKERS, DATAFLOW_WORKERS_REASON)] = Field(10, ge=1)
    service_account: str | None = None
    network: str | None = None
    subnetwork: str | None = None
    use_public_ips: bool = True
    disk_size_gb: Annotated[int | None, at_most(65_536, "a persistent disk holds at most 64 TB")] = Field(None, ge=10)


class PreprocessConfig(StrictModel):
    runner: Literal["DirectRunner", "DataflowRunner"] = "DirectRunner"
    direct_num_workers: Annotated[int, at_most(1024, "each DirectRunner worker is a process on this machine")] = Field(
        0, ge=0, description="0 = one worker per core")
    direct_running_mode: Literal["in_memory", "multi_threading", "multi_processing"] = Field(
        "in_memory", description="in_memory: the job in the step's own process (the fastest and smallest here: the "
        "stages move Arrow record batches, not records; docs/input.md); multi_processing: a worker process per "
        "direct_num_workers")
    output_shards: Annotated[int, at_most(
        MAX_OUTPUT_SHARDS, "each split is written as at least this many block files (and the raw eval examples as "
        "this many TFRecord shards); more shards add file-system load, not parallelism")] = Field(4, ge=1)
    block_examples: int = Field(
        512, ge=1, le=65_536, description="examples per block of the training-ready block files (docs/input.md)"
    )
    force_tf_compat_v1: bool = Field(
        True, description="tf.Transform builds the transform graph in TensorFlow 1 graph mode (its "
        "force_tf_compat_v1): one graph, not the TF2 path's several traces of the preprocessing function and its "
        "pruned tf.function SavedModel, the job's largest fixed cost at width (the whole step 1.56x faster at 10^4 "
        "impressions of 1,000 features, 1.38x at the default features; docs/input.md); the exported serving model "
        "loads either graph. False: tf.Transform's TF2 tracing (its own default), whose z-scores can differ from the "
        "TF1 graph's in the last bit of a float32",
    )
    max_invalid_fraction: float = Field(0.05, ge=0.0, le=1.0)
    min_positives_per_task: Annotated[int, at_most(MAX_EXAMPLES, EXAMPLES_REASON)] = Field(
        1, ge=0, description="preprocess fails when a split has fewer positive labels than this for a task "
        "(a task whose event never occurs would otherwise train on all-negative labels); 0: not checked",
    )
    min_negatives_per_task: Annotated[int, at_most(MAX_EXAMPLES, EXAMPLES_REASON)] = Field(
        1, ge=0, description="preprocess fails when a split has fewer negative labels than this for a task; "
        "0: not checked",
    )
    max_missing_share: float = Field(
        0.5, ge=0.0, le=1.0, description="a feature absent from more than this share of examples is a finding "
        "in the report and a warning on the console (a misspelt column is absent from every example)",
    )
    max_unseen_share: float = Field(
        0.5, ge=0.0, le=1.0, description="an id or time feature whose eval examples carry a value never seen in the "
        "train split more often than this share is a warning and a report finding (e.g. day_of_week over three "
        "train days and a fourth eval day: the model learned nothing for the eval day's value)",
    )
    dataflow: DataflowConfig | None = None

    @model_validator(mode="after")
    def _dataflow_needs_options(self) -> PreprocessConfig:
        if self.runner == "DataflowRunner" and self.dataflow is None:
            raise ValueError("runner DataflowRunner needs a 'dataflow' section (project, region, temp_location, ...)")
        return self
