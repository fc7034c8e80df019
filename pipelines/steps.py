"""Every KFP component of the DAG: each wrapper parses its artifacts and calls one plain function.

generate logs → preprocess (synthetic source) or preprocess files (files / BigQuery) → train → report (its
signature generated per config, see `report_function`) → promote; champion before training when
`training.warm_start: champion`.

These functions are shipped as Lightweight Python Components: their source is embedded in the
pipeline spec and run by the KFP executor inside an image that has adrank installed, so every
import happens inside the function body. (No `from __future__ import annotations` here: KFP reads
the annotations as types.)

Each step gets only its slice of the config (`configs.slices`), as canonical JSON: a step's inputs,
and so its cache key on Vertex, change only when what it reads changes.
"""


import hashlib
import linecache
from typing import Callable

from google_cloud_pipeline_components.types.artifact_types import VertexModel
from kfp.dsl import HTML, Artifact, Dataset, Input, Markdown, Metrics, Model, Output, OutputPath

from pipelines.fan_in import summary_input_name, target_metrics_name


def generate_logs_step(preprocess_config_json: str, logs: Output[Dataset]):
    from components.log_records import configure_step_logging
    from components.logs.synthetic import generate_logs
    from configs.slices import PreprocessStepConfig
    configure_step_logging()

    generated = generate_logs(PreprocessStepConfig.model_validate_json(preprocess_config_json), logs.path)
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
    from components.log_records import configure_step_logging
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
    from components.log_records import configure_step_logging
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
    beam_args_json: the Beam/Dataflow argv compiled into the DAG (components.preprocess.options.
    beam_pipeline_args(config)); "" builds the same options from the config at run time. On Dataflow the job name
    gets a suffix made when the step starts (`launch_suffix`), so two runs never share one.
    gcp_resources_path: the step's `gcp_resources` output file (components.preprocess.dataflow_job).
    """
    import json

    from components.preprocess.options import launch_suffix, run_window_end, with_run_job_name
    from components.preprocess.run import preprocess
    from configs.slices import PreprocessStepConfig

    config = PreprocessStepConfig.model_validate_json(preprocess_config_json)
    beam_args = with_run_job_name(json.loads(beam_args_json), config.name, launch_suffix()) if beam_args_json else None
    end = run_window_end(window_end, scheduled_time, vertex=bool(beam_args_json))
    manifest = preprocess(config, logs_path, examples.path, examples.uri, window_end=end or None, beam_args=beam_args,
                          gcp_resources_path=gcp_resources_path)
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
    from components.evaluate.experiment_keys import training_figures, training_key
    from components.log_records import configure_step_logging
    from components.train.training_run import train
    from configs.slices import TrainStepConfig
    configure_step_logging()

    run = train(TrainStepConfig.model_validate_json(train_config_json), target, run_index, examples.path,
                model.path, model.uri, warm_start_from=warm_start_from or None)
    run.write(summary.path)
    # keys unique per target, run and task: a Vertex Experiment row merges every Metrics artifact of the run
    for key, value in training_figures(target, run_index, run).items():
        metrics.log_metric(key, value)
    metrics.metadata[training_key(target, run_index, "device_kind")] = run.hardware.device_kind


def join_experiment_step(experiment: str, pipeline_job_name: str):
    """Put this run, submitted or scheduled, into the Vertex Experiment (components.experiment.join)."""
    from components.experiment.join import join_experiment
    from components.log_records import configure_step_logging
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
                 promotion_markdown: Output[Markdown]):
    from components.log_records import configure_step_logging
    from components.registry.promote_challenger import promote_best_run
    from components.report.promotion_section import promotion_html as render_html
    from components.report.promotion_section import promotion_markdown as render_markdown
    from configs.slices import PromoteStepConfig
    configure_step_logging()

    decision = promote_best_run(PromoteStepConfig.model_validate_json(promote_config_json), backend, summary_json.path,
                                examples.path)
    decision.write(promotion.path)
    promotion.metadata.update({"version": decision.version or "", "promoted": decision.promoted,
                               "reason": decision.reason})
    for name, value in decision.metrics().items():
        promotion_metrics.log_metric(name, value)
    with open(promotion_html.path, "w") as stream:
        stream.write("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
                     + render_html(decision) + "</body></html>\n")
    with open(promotion_markdown.path, "w") as stream:
        stream.write(render_markdown(decision))


def model_version_step(promotion: Input[Artifact], pipeline_job_name: str, create_time_utc: str,
                       model_version: Output[VertexModel]):
    """On Vertex: the version the promotion registered as this run's `google.VertexModel` (lineage), labelled
    with the job and the decision, aliased `champion` and `champion-YYYYMMDD` when promoted."""
    from components.lineage.model_version import record_model_version
    from components.log_records import configure_step_logging
    configure_step_logging()

    record_model_version(promotion.path, pipeline_job_name, create_time_utc, model_version)


def champion_step(promote_config_json: str, backend: str) -> str:
    """The current default model's directory ("" when the registry has none): what training warm-starts from."""
    from components.log_records import configure_step_logging
    from components.registry.champion import champion_model_dir
    from configs.slices import PromoteStepConfig
    configure_step_logging()

    return champion_model_dir(PromoteStepConfig.model_validate_json(promote_config_json), backend)


# --- the report: fan-in with one input per training run (see pipelines/fan_in.py) ----------------------------
# The signature depends on the config, so `report_component_source` writes it as text: deterministic (same
# targets and runs → same source), reviewable in the compiled spec, where KFP embeds it verbatim, and the same for
# the local engine and Vertex. It is compiled in memory and registered with `linecache` under a pseudo file name (KFP
# reads a lightweight component's source with `inspect.getsource`); nothing is written to disk. The body only
# calls `components.report.write_report.write_report`.

_HEADER = (
    "from kfp.dsl import HTML, Artifact, ClassificationMetrics, Dataset, Input, Markdown, Metrics, Output\n\n\n"
)


def report_component_source(runs: list[tuple[str, int]], targets: list[str]) -> str:
    """The report step's source for the training runs `(target, run_index)`, in DAG order."""
    summaries = [summary_input_name(target, run_index) for target, run_index in runs]
    if len(set(summaries)) != len(summaries):
        raise ValueError(f"two training runs map to one report input: {summaries}")
    per_target = [target_metrics_name(t) for t in targets]
    parameters = (
        ["report_config_json: str", "examples: Input[Dataset]"]
        + [f"{name}: Input[Artifact]" for name in summaries]
        + ["report_html: Output[HTML]", "report_markdown: Output[Markdown]",
           "summary_json: Output[Artifact]", "metrics: Output[Metrics]",
           "best_roc: Output[ClassificationMetrics]"]
        + [f"{name}: Output[Metrics]" for name in per_target]
    )
    target_pairs = ", ".join(f"({t!r}, {n})" for t, n in zip(targets, per_target))
    return (
        _HEADER
        + "def report(\n" + "".join(f"    {p},\n" for p in parameters) + "):\n"
        + "    from components.report.write_report import write_report\n"
        + "    from configs.slices import ReportStepConfig\n\n"
        + "    write_report(\n"
        + "        ReportStepConfig.model_validate_json(report_config_json),\n"
        + "        examples.path,\n"
        + f"        [{', '.join(s + '.path' for s in summaries)}],\n"
        + "        report_html=report_html,\n"
        + "        report_markdown=report_markdown,\n"
        + "        summary_json=summary_json,\n"
        + "        metrics=metrics,\n"
        + "        best_roc=best_roc,\n"
        + f"        target_metrics=dict([{target_pairs}]),\n"
        + "    )\n"
    )


def report_function(runs: list[tuple[str, int]], targets: list[str]) -> Callable:
    """The report step's Python function (see `report_component_source`)."""
    return _define_function(report_component_source(runs, targets), "report")


def _define_function(source: str, name: str) -> Callable:
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    filename = f"<adrank generated component {name} {digest}>"
    # mtime None: linecache.checkcache keeps the entry (there is no file to compare with)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace: dict = {"__name__": f"adrank_generated_{name}_{digest}"}
    # dont_inherit: not this module's `from __future__ import annotations`; KFP needs real annotation types
    code = compile(source, filename, "exec", dont_inherit=True)
    exec(code, namespace)  # noqa: S102 - source built above from target names the config schema restricts
    return namespace[name]
