"""The Markdown summary (shown by Vertex's Markdown artifact viewer and readable in a terminal)."""

from __future__ import annotations

from components.report.benchmark import BenchmarkSummary
from components.report.calibration import reliability_table
from components.report.findings import findings
from components.report.table import (
    Table, eval_curve_table, per_run_table, per_target_table, skipped_targets_table, statistics_table,
)


def render_markdown(summary: BenchmarkSummary) -> str:
    parts = [
        f"# adrank benchmark — {summary.pipeline}",
        "",
        f"Config `{summary.config_hash}`, generated {summary.generated:%Y-%m-%d %H:%M} UTC. "
        f"Train {summary.train_examples:,} / eval {summary.eval_examples:,} examples.",
        "",
        *[f"- {line}" for line in findings(summary)],
        "",
        "## Targets",
        "",
        markdown_table(per_target_table(summary)),
        "",
        *_skipped_section(summary),
        "## Log-loss statistics per task",
        "",
        markdown_table(statistics_table(summary)),
        "",
        *_eval_curve_section(summary),
        *_reliability_section(summary),
        "## Every run",
        "",
        markdown_table(per_run_table(summary)),
        "",
    ]
    if summary.dead_letter:
        parts += ["## Dead-lettered log records", ""]
        parts += [f"- {reason}: {count:,}" for reason, count in sorted(summary.dead_letter.items())]
        parts.append("")
    return "\n".join(parts)


def _skipped_section(summary: BenchmarkSummary) -> list[str]:
    table = skipped_targets_table(summary)
    if table is None:
        return []
    return ["## Skipped targets", "", markdown_table(table), ""]


def _eval_curve_section(summary: BenchmarkSummary) -> list[str]:
    table = eval_curve_table(summary)
    if table is None:
        return []
    return ["## Eval log-loss per epoch (mean over runs)", "", markdown_table(table), ""]


def _reliability_section(summary: BenchmarkSummary) -> list[str]:
    table = reliability_table(summary)
    if table is None:
        return []
    return ["## Calibration: reliability per bin (mean over runs)", "",
            "Eval examples in bins of equal count by predicted probability; a calibrated model predicts each bin's "
            "observed rate.", "", markdown_table(table), ""]


def markdown_table(table: Table) -> str:
    lines = ["| " + " | ".join(table.header) + " |", "|" + "|".join("---" for _ in table.header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in table.rows]
    return "\n".join(lines)
