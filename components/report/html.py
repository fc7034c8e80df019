"""The self-contained HTML report: one file, figures embedded, readable in Vertex's HTML viewer; its page is the
template `templates/report.html.j2`, this module gathers what each section shows."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from markupsafe import Markup

from components.contracts.benchmark_summary import BenchmarkSummary
from components.contracts.promotion_decision import PromotionDecision
from components.display_tables import Table, html_table
from components.report.calibration_finding import reliability_table
from components.report.figure_files import ReportFigure
from components.report.findings import findings
from components.report.html_page import render_page, trusted_html
from components.report.promotion_section import promotion_context
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


def render_html(summary: BenchmarkSummary, figures: Sequence[ReportFigure] = (),
                promotion: PromotionDecision | None = None) -> str:
    """The report (`templates/report.html.j2`): its title line, then every section of `REPORT_SECTIONS` that has
    something to show, then the promotion section when `promotion` is given (a local run's report after its
    promotion step)."""
    sections = []
    for section in REPORT_SECTIONS:
        content = SECTION_BODIES[section.key](summary, figures)
        if content is not None:
            sections.append({"key": section.key, "title": section.title, "explanation": section.explanation,
                             "content": content})
    return render_page(
        "report.html.j2", title=f"adrank benchmark — {summary.pipeline}", summary=summary, sections=sections,
        generated=f"{summary.generated:%Y-%m-%d %H:%M}", train_examples=f"{summary.train_examples:,}",
        eval_examples=f"{summary.eval_examples:,}",
        promotion=None if promotion is None else promotion_context(promotion))


def _findings(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> list[str]:
    return findings(summary)


def _figures(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> list[dict[str, str]] | None:
    images = [{"title": figure.title, "png_base64": base64.b64encode(figure.png).decode()}
              for figure in figures if figure.png is not None]
    return images or None


def _statistics(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> Markup:
    table = statistics_table(summary)
    return _table(table, text_columns={len(table.header) - 1})


def _skipped(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> Markup | None:
    table = skipped_targets_table(summary)
    return None if table is None else _table(table, text_columns={2})


def _optional(make_table: Callable[[BenchmarkSummary], Table | None]) -> Callable[..., Markup | None]:
    def body(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> Markup | None:
        table = make_table(summary)
        return None if table is None else _table(table)

    return body


def _dead_letters(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> Markup | None:
    if not summary.dead_letter:
        return None
    return _table(Table(["reason", "records"], [[k, f"{v:,}"] for k, v in sorted(summary.dead_letter.items())]))


# The content of each section of REPORT_SECTIONS, which report.html.j2 lays out by the section's key: the findings'
# lines, the figures, else a table (None: the section has nothing to show for these runs).
SECTION_BODIES: dict[str, Callable[[BenchmarkSummary, Sequence[ReportFigure]], Any]] = {
    "findings": _findings,
    "targets": lambda summary, figures: _table(per_target_table(summary)),
    "scaling": _optional(lambda summary: scaling_table(summary.scaling)),
    "skipped_targets": _skipped,
    "time_split": _optional(time_split_table),
    "figures": _figures,
    "statistics": _statistics,
    "eval_curve": _optional(eval_curve_table),
    "reliability": _optional(reliability_table),
    "every_run": lambda summary, figures: _table(per_run_table(summary)),
    "dead_letters": _dead_letters,
}


def _table(table: Table, text_columns: AbstractSet[int] = frozenset()) -> Markup:
    return trusted_html(html_table(table, text_columns))
