"""Every KFP component of the DAG: each wrapper parses its artifacts and calls one plain function.

generate logs → preprocess (synthetic source) or preprocess files (files / BigQuery) → train → record run → report
(every run's record through `dsl.Collected`, see `pipelines.fan_in`) → promote; champion before training when
`training.warm_start: champion`.

These functions are shipped as Lightweight Python Components: their source is embedded in the
pipeline spec and run by the KFP executor inside an image that has adrank installed, so every
import happens inside the function body. (No `from __future__ import annotations` here: KFP reads
the annotations as types.)

Each step gets only its slice of the config (`configs.slices`), as canonical JSON (a wide slice bzip2-compressed,
`_Slice.to_parameter`, so that it fits a command line): a step's inputs, and so its cache key on Vertex, change
only when what it reads changes.
"""


from typing import List, NamedTuple

from google_cloud_pipeline_components.types.artifact_types import VertexModel
from kfp.dsl import HTML, Artifact, ClassificationMetrics, Dataset, Input, Markdown, Metrics, Model, Output, OutputPath


def generate_logs_step(preprocess_config_json: str, logs: Output[Dataset]):
    from components.logs.synthetic import generate_logs
    from components.step_logging import configure_step_logging
    from configs.slices import PreprocessStepConfig
    configure_step_logging()

    generated = generate_logs(PreprocessStepConfig.from_parameter(preprocess_config_json), logs.path)
    logs.metadata.update({"impressions": generated.impressions, "engagement_events": generated.engagements})


# `gcp_resources: OutputPath(str)` is KFP's spelling of an output parameter written to a file (mypy reads the call
# as an invalid annotation): the file is written when the Dataflow job starts, not when the step returns, so the
# console links the job while it runs.
def preprocess_step(
    preprocess_config_json: str, logs: Input[Dataset], examples: Output[Dataset],
    gcp_resources: OutputPath(str),  # type: ignore[valid-type]
    window_end: str = "", beam_args_json: str = "", scheduled_time: str = "",
):
    """Preprocess the logs the `generate logs` step wrote (synthetic source). `gcp_resources`: the Dataflow job
    (GCPC's format), which the Vertex console links."""
    from components.step_logging import configure_step_logging
    from pipelines.steps import run_preprocess
    configure_step_logging()

    run_preprocess(preprocess_config_json, logs.path, examples, window_end, beam_args_json, scheduled_time,
                   gcp_resources)


def preprocess_files_step(
    preprocess_config_json: str, examples: Output[Dataset],
    gcp_resources: OutputPath(str),  # type: ignore[valid-type]
    window_end: str = "", beam_args_json: str = "", scheduled_time: str = "",
):
    """Preprocess the logs the config names (files or BigQuery): no upstream step, no `logs` input.

    (An optional artifact input left unconnected is avoided: two components, one per source.)
    """
    from components.step_logging import configure_step_logging
    from pipelines.steps import run_preprocess
    configure_step_logging()

    run_preprocess(preprocess_config_json, None, examples, window_end, beam_args_json, scheduled_time,
                   gcp_resources)


def run_preprocess(preprocess_config_json: str, logs_path, examples, window_end: str, beam_args_json: str,
                   scheduled_time: str = "", gcp_resources_path: str | None = None) -> None:
    """The body both preprocess components share.

    window_end: where the window ends (RFC 3339): the day `adrank retrain` replays locally, the time `adrank submit`
    submitted on Vertex; "" on a scheduled run. scheduled_time: the run's scheduled time on Vertex
    (`{{$.pipeline_job_schedule_time_utc}}`), "" locally. `run_window_end` picks one.
    beam_args_json: the Beam/Dataflow argv compiled into the DAG (components.preprocess.beam_options.
    beam_pipeline_args(config)); "" builds the same options from the config at run time. On Dataflow the job name
    gets a suffix made when the step starts (`launch_suffix`), so two runs never share one.
    gcp_resources_path: the step's `gcp_resources` output file (components.preprocess.dataflow_job).
    """
    import json

    from components.preprocess.beam_options import launch_suffix, run_window_end, with_run_job_name
    from components.preprocess.run import preprocess
    from configs.slices import PreprocessStepConfig

    config = PreprocessStepConfig.from_parameter(preprocess_config_json)
    beam_args = with_run_job_name(json.loads(beam_args_json), config.name, launch_suffix()) if beam_args_json else None
    end = run_window_end(window_end, scheduled_time, vertex=bool(beam_args_json))
    manifest = preprocess(config, logs_path, examples.path, examples.uri, window_end=end or None, beam_args=beam_args,
                          gcp_resources_path=gcp_resources_path)
    examples.metadata.update({split: info.examples for split, info in manifest.splits.items()})


def train_step(
    train_config_json: str,
    target: str,
    run_index: str,
    examples: Input[Dataset],
    model: Output[Model],
    summary: Output[Artifact],
    metrics: Output[Metrics],
    warm_start_from: str = "",
):
    """`run_index`: the run's index from 0, as decimal text (a field of the training-runs loop's item, which KFP
    types as a string). `warm_start_from`: the champion's model directory (`training.warm_start: champion`), ""
    to start cold."""
    from components.step_logging import configure_step_logging
    from components.train.lanes import train
    from configs.slices import TrainStepConfig
    from pipelines.steps import record_training_metrics
    configure_step_logging()

    index = int(run_index)
    run = train(TrainStepConfig.from_parameter(train_config_json), target, index, examples.path,
                model.path, model.uri, warm_start_from=warm_start_from or None)
    if run is None:  # another replica of a run over several machines: the chief writes the outputs
        raise SystemExit(0)
    run.write(summary.path)
    record_training_metrics(target, index, run, metrics)


def export_step(
    target: str,
    run_index: str,
    examples: Input[Dataset],
    trained: Input[Model],
    trained_summary: Input[Artifact],
    model: Output[Model],
    summary: Output[Artifact],
    metrics: Output[Metrics],
):
    """A run trained without TensorFlow (a JAX target): its serving SavedModel written by this TensorFlow step from
    the trained weights (`components.train.export_trained`), and its summary completed with it."""
    from components.contracts.run_summary import RunSummary
    from components.step_logging import configure_step_logging
    from components.train.export_trained import export_trained_run
    from components.train.trained_weights import TRAINED_WEIGHTS_DIR
    from pipelines.steps import record_training_metrics
    configure_step_logging()

    index = int(run_index)
    run = export_trained_run(RunSummary.read(trained_summary.path), f"{trained.path}/{TRAINED_WEIGHTS_DIR}",
                             examples.path, model.path, model.uri)
    run.write(summary.path)
    record_training_metrics(target, index, run, metrics)


def record_training_metrics(target: str, index: int, run, metrics) -> None:
    """A training run's figures as a Metrics artifact, keys unique per target, run and task: a Vertex Experiment row
    merges every Metrics artifact of the run."""
    from components.evaluate.experiment_keys import training_figures, training_key

    for key, value in training_figures(target, index, run).items():
        metrics.log_metric(key, value)
    metrics.metadata[training_key(target, index, "device_kind")] = run.hardware.device_kind


def record_run_step(target: str, run_index: str, summary: Input[Artifact], run: Output[Artifact]):
    """One training run's record for the report (components.report.collected_run): the summary of the branch
    that trained it, checked to be this run's, with its headline figures as metadata."""
    from components.report.collected_run import record_training_run
    from components.step_logging import configure_step_logging
    configure_step_logging()

    run.metadata.update(record_training_run(summary.path, target, int(run_index), run.path))


def join_experiment_step(experiment: str, pipeline_job_name: str):
    """Put this run, submitted or scheduled, into the Vertex Experiment (components.experiment.membership)."""
    from components.experiment.membership import join_experiment
    from components.step_logging import configure_step_logging
    configure_step_logging()

    join_experiment(pipeline_job_name, experiment)


# --- the registry around training: the champion before it, promotion after the report -----------------------
# `champion_step` finds the current default model in the registry. `promote_step` scores the challenger (the
# report's best exported run) and the champion on this run's eval examples, registers the challenger and applies
# the promotion rule (`components.registry.promotion_rule`), locally into `promotion.local_registry`, on Vertex into
# the Model Registry. Its decision record is an artifact, its figures a Metrics artifact (a Vertex Experiment
# charts them across days) and its report section HTML and Markdown artifacts.


def promote_step(promote_config_json: str, backend: str, summary_json: Input[Artifact], examples: Input[Dataset],
                 promotion: Output[Artifact], promotion_metrics: Output[Metrics], promotion_html: Output[HTML],
                 promotion_markdown: Output[Markdown], pipeline_job_name: str = ""):
    from components.registry.promote_challenger import promote_best_run
    from components.report.promotion_section import promotion_markdown as render_markdown
    from components.report.promotion_section import promotion_page
    from components.step_logging import configure_step_logging
    from configs.slices import PromoteStepConfig
    configure_step_logging()

    decision = promote_best_run(PromoteStepConfig.model_validate_json(promote_config_json), backend, summary_json.path,
                                examples.path, pipeline_job_name)
    decision.write(promotion.path)
    promotion.metadata.update({"version": decision.version or "", "promoted": decision.promoted,
                               "reason": decision.reason, "day": decision.day or "", "reused": decision.reused})
    for name, value in decision.metrics().items():
        promotion_metrics.log_metric(name, value)
    with open(promotion_html.path, "w") as stream:
        stream.write(promotion_page(decision))
    with open(promotion_markdown.path, "w") as stream:
        stream.write(render_markdown(decision))


def model_version_step(promotion: Input[Artifact], pipeline_job_name: str, model_version: Output[VertexModel]):
    """On Vertex: the version the promotion registered as this run's `google.VertexModel` (lineage), labelled
    with the job and the decision, aliased `champion` and `champion-YYYYMMDD` (the day read) when promoted."""
    from components.lineage.model_version import record_model_version
    from components.step_logging import configure_step_logging
    configure_step_logging()

    record_model_version(promotion.path, pipeline_job_name, model_version)


def run_directory_step(custom_jobs_dir: str, target: str, run_index: str, day: str) -> str:
    """On Vertex, before each training run: its CustomJob's output directory, one per target, run and day, where
    Vertex puts its TensorBoard logs and checkpoints (pipelines.placement.run_output_directory)."""
    from components.step_logging import configure_step_logging
    from pipelines.placement import run_output_directory
    configure_step_logging()

    return run_output_directory(custom_jobs_dir, target, run_index, day)


# `NamedTuple("RunWindow", [...])`: KFP's spelling of a step with several output parameters (the function's source is
# shipped alone, so the type cannot be a class defined beside it; mypy reads the call as an invalid annotation).
def resolve_window_step(window_end: str, scheduled_time: str) -> NamedTuple(  # type: ignore[valid-type]
        "RunWindow", [("window_end", str), ("day", str)]):
    """On Vertex, first: the run's window end, a UTC midnight, from its `window_end` parameter, else its scheduled
    time, else now, and its day, the last day it reads as `20260303` (components.lineage.run_day). Preprocess gets
    only the window end, so every run of one day has the same inputs whatever its create time."""
    import datetime as dt

    from components.lineage.run_day import day_stamp, resolved_window_end, window_day
    from components.step_logging import configure_step_logging
    configure_step_logging()

    end = resolved_window_end(window_end, scheduled_time, dt.datetime.now(dt.timezone.utc))
    return end, day_stamp(window_day(end))  # in the order of the outputs


def champion_step(promote_config_json: str, backend: str) -> str:
    """The current default model's directory ("" when the registry has none): what training warm-starts from."""
    from components.registry.champion import champion_model_dir
    from components.step_logging import configure_step_logging
    from configs.slices import PromoteStepConfig
    configure_step_logging()

    return champion_model_dir(PromoteStepConfig.model_validate_json(promote_config_json), backend)


# --- the report: every run's record, collected from the training-runs loop (pipelines/fan_in.py) -----------------


def report_step(
    report_config_json: str,
    examples: Input[Dataset],
    runs: Input[List[Artifact]],
    report_html: Output[HTML],
    report_markdown: Output[Markdown],
    summary_json: Output[Artifact],
    metrics: Output[Metrics],
    target_metrics: Output[Metrics],
    best_roc: Output[ClassificationMetrics],
):
    """The report over `runs` (`dsl.Collected`: one record per training run, in the loop's order). `metrics`: the
    run's headline figures; `target_metrics`: each target's aggregates under keys that name the target
    (`cpu/engagement/logloss_mean`, components.evaluate.experiment_keys), one artifact whatever the targets."""
    from components.report.write_report import write_report
    from components.step_logging import configure_step_logging
    from configs.slices import ReportStepConfig
    configure_step_logging()

    config = ReportStepConfig.model_validate_json(report_config_json)
    write_report(config, examples.path, [run.path for run in runs], report_html=report_html,
                 report_markdown=report_markdown, summary_json=summary_json, metrics=metrics,
                 target_metrics={target.name: target_metrics for target in config.targets}, best_roc=best_roc)
