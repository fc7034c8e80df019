"""The KFP component wrappers: each parses its artifacts and calls one plain function.

These functions are shipped as Lightweight Python Components: their source is embedded in the
pipeline spec and run by the KFP executor inside an image that has adrank installed, so every
import happens inside the function body. (No `from __future__ import annotations` here: KFP reads
the annotations as types.)

Each step gets only its slice of the config (`configs.slices`), as canonical JSON: a step's inputs,
and so its cache key on Vertex, change only when what it reads changes.
"""


from kfp.dsl import Artifact, Dataset, Input, Metrics, Model, Output


def generate_logs_step(preprocess_config_json: str, logs: Output[Dataset]):
    from components.logs.synthetic import generate_logs
    from configs.slices import PreprocessStepConfig

    generated = generate_logs(PreprocessStepConfig.model_validate_json(preprocess_config_json), logs.path)
    logs.metadata.update({"impressions": generated.impressions, "engagement_events": generated.engagements})


def preprocess_step(
    preprocess_config_json: str, logs: Input[Dataset], examples: Output[Dataset], window_end: str = "",
    beam_args_json: str = "", pipeline_job_id: str = "",
):
    """Preprocess the logs the `generate logs` step wrote (synthetic source)."""
    from pipelines.steps import run_preprocess

    run_preprocess(preprocess_config_json, logs.path, examples, window_end, beam_args_json, pipeline_job_id)


def preprocess_files_step(
    preprocess_config_json: str, examples: Output[Dataset], window_end: str = "", beam_args_json: str = "",
    pipeline_job_id: str = "",
):
    """Preprocess the logs the config names (files or BigQuery): no upstream step, no `logs` input.

    (kfp.local cannot run an optional artifact input left unconnected, hence two components.)
    """
    from pipelines.steps import run_preprocess

    run_preprocess(preprocess_config_json, None, examples, window_end, beam_args_json, pipeline_job_id)


def run_preprocess(preprocess_config_json: str, logs_path, examples, window_end: str, beam_args_json: str,
                   pipeline_job_id: str = "") -> None:
    """The body both preprocess components share.

    window_end: the pipeline job's create time on Vertex (a scheduled run's own time), "" locally.
    beam_args_json: the Beam/Dataflow argv compiled into the DAG (components.preprocess.options.
    beam_pipeline_args(config)); "" builds the same options from the config at run time.
    pipeline_job_id: the Vertex pipeline job's id, which makes the Dataflow job name unique per run.
    """
    import json

    from components.preprocess.options import with_run_job_name
    from components.preprocess.run import preprocess
    from configs.slices import PreprocessStepConfig

    config = PreprocessStepConfig.model_validate_json(preprocess_config_json)
    beam_args = with_run_job_name(json.loads(beam_args_json), config.name, pipeline_job_id) if beam_args_json else None
    manifest = preprocess(config, logs_path, examples.path, examples.uri, window_end=window_end or None,
                          beam_args=beam_args)
    examples.metadata.update({split: info.examples for split, info in manifest.splits.items()})


def train_step(
    train_config_json: str,
    target: str,
    run_index: int,
    examples: Input[Dataset],
    model: Output[Model],
    summary: Output[Artifact],
    metrics: Output[Metrics],
    warm_start_from: str = "",
):
    """`warm_start_from`: the champion's model directory (`training.warm_start: champion`), "" to start cold."""
    from components.train.task import train
    from configs.slices import TrainStepConfig

    run = train(TrainStepConfig.model_validate_json(train_config_json), target, run_index, examples.path,
                model.path, model.uri, warm_start_from=warm_start_from or None)
    run.write(summary.path)
    for task, values in run.metrics.items():
        metrics.log_metric(f"{task}_logloss", values.logloss)
        metrics.log_metric(f"{task}_auc", values.auc)
    metrics.log_metric("examples_per_second", run.examples_per_second)
    metrics.log_metric("devices", run.hardware.device_count)
    metrics.metadata["device_kind"] = run.hardware.device_kind
