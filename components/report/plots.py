"""The report's figures, as PNG bytes: embedded in the HTML as data URIs, and written beside the Markdown report
as the files it links (`ReportFigure.file_name`)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import LogLocator, NullFormatter, PercentFormatter

from components.contracts.benchmark_summary import BenchmarkSummary
from components.contracts.run_summary import RunSummary
from components.report.figure_files import REPORT_FIGURES, ReportFigure

COLORS = [plt.get_cmap("tab10")(i) for i in range(10)]


def report_figures(summary: BenchmarkSummary, runs: list[RunSummary]) -> list[ReportFigure]:
    """Every figure of the run report, in the order it shows them."""
    pngs = [logloss_per_run(summary), throughput(summary), cost(summary), training_curves(summary, runs),
            reliability(summary)]
    return [ReportFigure(title, file_name, png) for (title, file_name), png in zip(REPORT_FIGURES, pngs, strict=True)]


def logloss_per_run(summary: BenchmarkSummary) -> bytes:
    """Every run's eval log-loss per target, its mean and 95% CI, and the floors."""
    names = list(summary.targets)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(names) + 2), 3.6))
    for i, name in enumerate(names):
        values = [r.logloss[summary.primary_task] for r in summary.runs if r.target == name]
        offsets = [i + (j - (len(values) - 1) / 2) * 0.06 for j in range(len(values))]
        ax.scatter(offsets, values, color=COLORS[i % 10], zorder=3, s=22, label=None)
        target = summary.targets[name]
        if target.logloss_ci95:
            low, high = target.logloss_ci95
            ax.errorbar(i + 0.28, target.logloss_mean, yerr=[[target.logloss_mean - low], [high - target.logloss_mean]],
                        fmt="D", color="black", capsize=4, markersize=4)
    ax.axhline(summary.constant_ctr_logloss, color="#b44", linestyle="--", linewidth=1, label="constant CTR")
    if summary.bayes_logloss is not None:
        ax.axhline(summary.bayes_logloss, color="#484", linestyle=":", linewidth=1, label="Bayes floor")
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel(f"eval log-loss ({summary.primary_task})")
    ax.set_title("Log-loss of every run (◆ mean with 95% CI)")
    ax.legend(loc="best", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def throughput(summary: BenchmarkSummary) -> bytes:
    names = list(summary.targets)
    means = [summary.targets[n].examples_per_second_mean for n in names]
    stds = [summary.targets[n].examples_per_second_std or 0.0 for n in names]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(names) + 2), 3.2))
    bars = ax.bar(names, means, yerr=stds, capsize=4, color=[COLORS[i % 10] for i in range(len(names))])
    for bar, value in zip(bars, means):
        ax.annotate(f"{value:,.0f}", (bar.get_x() + bar.get_width() * 0.05, value / 2), ha="left", va="center",
                    fontsize=8, color="white", fontweight="bold")
    ax.set_ylabel("training examples / s")
    ax.set_title("Throughput per target (mean ± std over runs)")
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def cost(summary: BenchmarkSummary) -> bytes:
    """Per target, what one run cost (price per hour × mean wall time) and what a million training examples cost
    (price per hour / throughput), from `components.report.cost`; a target without a throughput shows no bar."""
    names = list(summary.targets)
    colors = [COLORS[i % 10] for i in range(len(names))]
    fig, (per_run, per_million) = plt.subplots(1, 2, figsize=(max(7.0, 2.4 * len(names) + 3), 3.2))
    panels = (
        (per_run, [summary.targets[n].cost_per_run_usd for n in names], "USD per run", "Cost per run", "${:,.4f}"),
        (per_million, [summary.targets[n].cost_per_million_examples_usd for n in names], "USD per million examples",
         "Cost per million training examples", "${:,.4f}"),
    )
    for ax, values, label, title, fmt in panels:
        drawn = [value if value is not None else 0.0 for value in values]
        bars = ax.bar(names, drawn, color=colors)
        for bar, value in zip(bars, values):
            ax.annotate("—" if value is None else fmt.format(value), (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=8)
        ax.set_ylabel(label)
        ax.set_title(title)
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("Cost by target (price per hour from the config)", fontsize=10)
    return _png(fig)


def training_curves(summary: BenchmarkSummary, runs: list[RunSummary]) -> bytes | None:
    if not any(run.curve for run in runs):
        return None
    names = list(summary.targets)
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    for run in runs:
        if not run.curve:
            continue
        color = COLORS[names.index(run.target) % 10] if run.target in names else "gray"
        steps = [p.step for p in run.curve]
        ax.plot(steps, [p.loss for p in run.curve], color=color, alpha=0.7, linewidth=1,
                label=run.target if run.run_index == 0 else None)
        evaluated = [(p.step, p.eval_logloss) for p in run.curve if p.eval_logloss is not None]
        ax.plot([step for step, _ in evaluated], [loss for _, loss in evaluated], color=color, linestyle="--",
                marker="o", markersize=3, linewidth=1, label=f"{run.target} eval" if run.run_index == 0 else None)
    ax.set_xlabel("step")
    ax.set_ylabel("log-loss")
    ax.set_title("Training loss per chunk (—) and eval log-loss per epoch (- - o)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _png(fig)


def reliability(summary: BenchmarkSummary) -> bytes | None:
    """Per task, each target's reliability curve (mean prediction vs observed rate per equal-count bin, mean
    over runs) against the diagonal; log axes, since at low rates the bins span decades."""
    tasks = [task for task in summary.tasks if any(t.tasks[task].reliability for t in summary.targets.values())]
    if not tasks:
        return None
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.8), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        points = []
        for i, target in enumerate(summary.targets.values()):
            curve = [(p, o) for p, o, _ in target.tasks[task].reliability if p > 0 and o > 0]
            if not curve:
                continue
            points += [v for point in curve for v in point]
            ax.plot([p for p, _ in curve], [o for _, o in curve], marker="o", markersize=3, linewidth=1,
                    color=COLORS[i % 10], label=f"{target.name} ({target.tasks[task].calibration.mean:.2f}×)")
        if points:
            low, high = min(points) / 1.5, min(max(points) * 1.5, 1.0)
            ax.plot([low, high], [low, high], color="gray", linestyle="--", linewidth=1, label="calibrated")
            ax.axhline(summary.tasks[task].eval_positive_rate, color="#b44", linestyle=":", linewidth=1,
                       label="eval rate")
            ax.set_xscale("log")
            ax.set_yscale("log")
            for axis in (ax.xaxis, ax.yaxis):
                axis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
                axis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=None))
                axis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("mean predicted probability (bin)")
        ax.set_ylabel("observed rate (bin)")
        ax.set_title(f"Reliability: {task}")
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3, which="both")
    return _png(fig)


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()
