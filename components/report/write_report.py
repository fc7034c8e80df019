"""The report step: read every run's `RunSummary`, aggregate, and write HTML, Markdown, JSON and KFP metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.contracts.benchmark_summary import BenchmarkSummary
from components.contracts.manifest import Manifest
from components.contracts.run_summary import RunSummary
from components.evaluate.experiment_keys import target_key
from components.report.aggregation import summarize
from components.report.html import render_html
from components.report.plots import ReportFigure, report_figures
from components.report.summary_markdown import render_markdown
from configs.slices import ReportStepConfig


def build_report(
    config: ReportStepConfig, manifest: Manifest, runs: list[RunSummary]
) -> tuple[BenchmarkSummary, str, str, list[ReportFigure]]:
    """The summary, HTML, Markdown and figures for these runs (plain function; the KFP step only writes them
    out): the HTML embeds the figures, the Markdown links the PNG files of their names."""
    summary = summarize(config, manifest, runs)
    figures = report_figures(summary, runs)
    return summary, render_html(summary, figures), render_markdown(summary, figures), figures


def write_report(
    config: ReportStepConfig,
    examples_dir: str,
    summary_paths: list[str],
    report_html: Any,
    report_markdown: Any,
    summary_json: Any,
    metrics: Any,
    target_metrics: dict[str, Any],
    best_roc: Any = None,
) -> BenchmarkSummary:
    """Write the report into KFP output artifacts (anything with `.path`, `.log_metric`, `.metadata`).

    The skipped targets come from the step's config slice (`ReportStepConfig.skipped_targets`, set when the
    DAG was built)."""
    manifest = Manifest.read(examples_dir)
    runs = [RunSummary.read(path) for path in summary_paths]
    summary, html_text, markdown_text, figures = build_report(config, manifest, runs)
    _write(report_html.path, html_text)
    _write(report_markdown.path, markdown_text)
    for figure in figures:  # beside the Markdown report, which links them by file name
        if figure.png:
            (Path(report_markdown.path).parent / figure.file_name).write_bytes(figure.png)
    _write(summary_json.path, summary.model_dump_json(indent=2))

    metrics.log_metric("best_logloss", summary.best_run.logloss)
    metrics.log_metric("constant_ctr_logloss", summary.constant_ctr_logloss)
    if summary.bayes_logloss is not None:
        metrics.log_metric("bayes_logloss", summary.bayes_logloss)
    metrics.metadata["best_target"] = summary.best_run.target
    for name, artifact in target_metrics.items():
        target = summary.targets.get(name)
        if target is None:
            continue
        # keys unique per target and task (components.evaluate.experiment_keys): the Experiment row merges them
        task = summary.primary_task
        artifact.log_metric(target_key(name, "runs"), target.runs)
        artifact.log_metric(target_key(name, "logloss_mean", task), target.logloss_mean)
        if target.logloss_std is not None:
            artifact.log_metric(target_key(name, "logloss_std", task), target.logloss_std)
        artifact.log_metric(target_key(name, "auc_mean", task), target.auc_mean)
        artifact.log_metric(target_key(name, "calibration_mean", task), target.tasks[task].calibration.mean)
        artifact.log_metric(target_key(name, "examples_per_second_mean"), target.examples_per_second_mean)
        if target.input_stall_mean is not None:
            artifact.log_metric(target_key(name, "input_stall_mean"), target.input_stall_mean)
        if target.cost_per_million_examples_usd is not None:
            artifact.log_metric(target_key(name, "cost_per_million_examples_usd"), target.cost_per_million_examples_usd)
        artifact.metadata[target_key(name, "hardware_seen")] = ", ".join(target.hardware_seen)
    if best_roc is not None:
        best = next(r for r in runs if (r.target, r.run_index) == (summary.best_run.target, summary.best_run.run_index))
        roc = best.metrics[summary.primary_task].roc
        if roc:
            best_roc.log_roc_curve([p[0] for p in roc], [p[1] for p in roc], [p[2] for p in roc])
        best_roc.metadata["run"] = f"{best.target} run {best.run_index + 1}"
    return summary


def _write(path: str, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)
