"""The Markdown summary (shown by Vertex's Markdown artifact viewer and readable in a terminal)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from components.contracts.benchmark_summary import BenchmarkSummary
from components.display_tables import Table, markdown_table
from components.report.calibration_finding import reliability_table
from components.report.figure_files import ReportFigure
from components.report.findings import findings
from components.report.report_tables import (
    eval_curve_table,
    per_run_table,
    per_target_table,
    skipped_targets_table,
    statistics_table,
    time_split_table,
)
from components.report.scaling import scaling_table
from components.report.sections import REPORT_SECTIONS


def render_markdown(summary: BenchmarkSummary, figures: Sequence[ReportFigure] = ()) -> str:
    """The report: its title, then every section of `REPORT_SECTIONS` that has something to show; the figures as
    images linking the PNG files written beside this file (`ReportFigure.file_name`)."""
    parts = [
        f"# adrank benchmark — {summary.pipeline}",
        "",
        f"Config `{summary.config_hash}`, generated {summary.generated:%Y-%m-%d %H:%M} UTC. "
        f"Train {summary.train_examples:,} / eval {summary.eval_examples:,} examples.",
        "",
    ]
    for section in REPORT_SECTIONS:
        content = SECTION_BODIES[section.key](summary, figures)
        if content is None:
            continue
        if section.title:
            parts += [f"## {section.title}", ""]
        if section.explanation:
            parts += [section.explanation, ""]
        parts += [content, ""]
    return "\n".join(parts)


def _figures(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> str | None:
    drawn = [figure for figure in figures if figure.png]
    return "\n\n".join(f"![{figure.title}]({figure.file_name})" for figure in drawn) if drawn else None


def _optional(make_table: Callable[[BenchmarkSummary], Table | None]) -> Callable[..., str | None]:
    def body(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> str | None:
        table = make_table(summary)
        return None if table is None else markdown_table(table)

    return body


def _dead_letters(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> str | None:
    if not summary.dead_letter:
        return None
    return "\n".join(f"- {reason}: {count:,}" for reason, count in sorted(summary.dead_letter.items()))


# The body of each section of REPORT_SECTIONS (None: the section has nothing to show for these runs).
SECTION_BODIES: dict[str, Callable[[BenchmarkSummary, Sequence[ReportFigure]], str | None]] = {
    "findings": lambda summary, figures: "\n".join(f"- {line}" for line in findings(summary)),
    "targets": lambda summary, figures: markdown_table(per_target_table(summary)),
    "scaling": _optional(lambda summary: scaling_table(summary.scaling)),
    "skipped_targets": _optional(skipped_targets_table),
    "time_split": _optional(time_split_table),
    "figures": _figures,
    "statistics": lambda summary, figures: markdown_table(statistics_table(summary)),
    "eval_curve": _optional(eval_curve_table),
    "reliability": _optional(reliability_table),
    "every_run": lambda summary, figures: markdown_table(per_run_table(summary)),
    "dead_letters": _dead_letters,
}

