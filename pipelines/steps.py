"""The KFP component wrappers: each parses its artifacts and calls one plain function.

These functions are shipped as Lightweight Python Components: their source is embedded in the
pipeline spec and run by the KFP executor inside an image that has adrank installed, so every
import happens inside the function body. (No `from __future__ import annotations` here: KFP reads
the annotations as types.)
"""


from kfp.dsl import Artifact, Dataset, Input, Metrics, Model, Output


def generate_logs_step(config_json: str, logs: Output[Dataset]):
    from components.logs.synthetic import generate_logs
    from configs import config_from_json

    generated = generate_logs(config_from_json(config_json), logs.path)
    logs.metadata.update({"impressions": generated.impressions, "engagement_events": generated.engagements})


def preprocess_step(
    config_json: str, logs: Input[Dataset], examples: Output[Dataset], window_end: str = "", beam_args_json: str = "",
):
    """Preprocess the logs the `generate logs` step wrote (synthetic source)."""
    from pipelines.steps import run_preprocess

    run_preprocess(config_json, logs.path, examples, window_end, beam_args_json)


def preprocess_files_step(config_json: str, examples: Output[Dataset], window_end: str = "", beam_args_json: str = ""):
    """Preprocess the logs the config names (files or BigQuery): no upstream step, no `logs` input.

    (kfp.local cannot run an optional artifact input left unconnected, hence two components.)
    """
    from pipelines.steps import run_preprocess

    run_preprocess(config_json, None, examples, window_end, beam_args_json)


def run_preprocess(config_json: str, logs_path, examples, window_end: str, beam_args_json: str) -> None:
    """The body both preprocess components share.

    window_end: the pipeline job's create time on Vertex (a scheduled run's own time), "" locally.
    beam_args_json: the Beam/Dataflow argv compiled into the DAG (components.preprocess.options.
    beam_pipeline_args(config)); "" builds the same options from config_json at run time.
    """
    import json

    from components.preprocess.run import preprocess
    from configs import config_from_json

    manifest = preprocess(
        config_from_json(config_json), logs_path, examples.path, examples.uri,
        window_end=window_end or None, beam_args=json.loads(beam_args_json) if beam_args_json else None,
    )
    examples.metadata.update({split: info.examples for split, info in manifest.splits.items()})


def train_step(
    config_json: str,
    target: str,
    run_index: int,
    examples: Input[Dataset],
    model: Output[Model],
    summary: Output[Artifact],
    metrics: Output[Metrics],
):
    from components.train.task import train
    from configs import config_from_json

    run = train(config_from_json(config_json), target, run_index, examples.path, model.path, model.uri)
    run.write(summary.path)
    for task, values in run.metrics.items():
        metrics.log_metric(f"{task}_logloss", values.logloss)
        metrics.log_metric(f"{task}_auc", values.auc)
    metrics.log_metric("examples_per_second", run.examples_per_second)
    metrics.log_metric("devices", run.hardware.device_count)
    metrics.metadata["device_kind"] = run.hardware.device_kind
