"""The few sentences a person reads first: what won, by how much, and whether it is real."""

from __future__ import annotations

from components.report.benchmark import BenchmarkSummary


def findings(summary: BenchmarkSummary) -> list[str]:
    task = summary.primary_task
    best = summary.best_run
    lines = []
    gap = summary.constant_ctr_logloss - (summary.bayes_logloss if summary.bayes_logloss is not None else 0.0)
    quality = (
        f"Best eval log-loss ({task}): {best.logloss:.5f} — {best.target} run {best.run_index + 1}; "
        f"constant-CTR baseline {summary.constant_ctr_logloss:.5f}"
    )
    if summary.bayes_logloss is not None:
        closed = (summary.constant_ctr_logloss - best.logloss) / gap if gap > 0 else float("nan")
        quality += f", Bayes floor {summary.bayes_logloss:.5f} (closes {closed:.0%} of the gap)"
    lines.append(quality + ".")

    targets = list(summary.targets.values())
    fastest = max(targets, key=lambda t: t.examples_per_second_mean)
    line = f"Fastest: {fastest.name} at {fastest.examples_per_second_mean:,.0f} examples/s"
    if len(targets) > 1 and fastest.relative_throughput is not None:
        line += f" ({fastest.relative_throughput:.2f}× {summary.baseline_target})"
    lines.append(line + ".")
    priced = [t for t in targets if t.cost_per_million_examples_usd]
    if priced:
        cheapest = min(priced, key=lambda t: t.cost_per_million_examples_usd)
        lines.append(f"Cheapest: {cheapest.name} at ${cheapest.cost_per_million_examples_usd:.4f} per million examples.")
    for target in targets:
        comparison = target.tasks[task].vs_baseline
        if comparison is not None:
            lines.append(f"{target.name} vs {summary.baseline_target}: {comparison.verdict}.")
    for target in targets:
        std = f" ± {target.logloss_std:.5f}" if target.logloss_std is not None else ""
        lines.append(
            f"{target.name}: {target.runs} run(s) on {', '.join(target.hardware_seen)}; "
            f"log-loss {target.logloss_mean:.5f}{std}."
        )
    return lines
