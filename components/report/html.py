"""The self-contained HTML report: one file, figures embedded, readable in Vertex's HTML viewer."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet

from components.contracts.benchmark_summary import BenchmarkSummary
from components.display_tables import Table, html_table
from components.report.calibration_finding import reliability_table
from components.report.findings import findings
from components.report.html_page import html_page
from components.report.plots import ReportFigure
from components.report.scaling import scaling_table
from components.report.sections import REPORT_SECTIONS
from components.report.table import (
    eval_curve_table,
    per_run_table,
    per_target_table,
    skipped_targets_table,
    statistics_table,
    time_split_table,
)

STYLE = """
body { font-family: -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif; margin: 24px auto;
       max-width: 1200px; color: #1f2328; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
.meta { color: #57606a; font-size: 13px; }
ul.findings { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: 12px 28px; }
ul.findings li { margin: 4px 0; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: right; white-space: nowrap; }
th { background: #f6f8fa; } td:first-child, th:first-child { text-align: left; }
td.text { text-align: left; white-space: normal; }
.scroll { overflow-x: auto; }
figure { display: inline-block; margin: 8px 16px 8px 0; } img { max-width: 100%; }
"""


def render_html(summary: BenchmarkSummary, figures: Sequence[ReportFigure] = ()) -> str:
    """The report: its title line, then every section of `REPORT_SECTIONS` that has something to show."""
    body = [
        f"<h1>adrank benchmark — {_e(summary.pipeline)}</h1>",
        f"<p class='meta'>config <code>{_e(summary.config_hash)}</code> · generated "
        f"{summary.generated:%Y-%m-%d %H:%M} UTC · train {summary.train_examples:,} / eval "
        f"{summary.eval_examples:,} examples · primary task <b>{_e(summary.primary_task)}</b></p>",
    ]
    for section in REPORT_SECTIONS:
        content = SECTION_BODIES[section.key](summary, figures)
        if content is None:
            continue
        if section.title:
            body.append(f"<h2>{_e(section.title)}</h2>")
        if section.explanation:
            body.append(f"<p class='meta'>{_e(section.explanation)}</p>")
        body.append(content)
    return html_page(f"adrank benchmark — {summary.pipeline}", STYLE, "\n".join(body))


def _findings(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> str:
    return "<ul class='findings'>" + "".join(f"<li>{_e(line)}</li>" for line in findings(summary)) + "</ul>"


def _figures(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> str | None:
    images = [f"<figure><img alt='{_e(figure.title)}' src='data:image/png;base64,{base64.b64encode(figure.png).decode()}'/>"
              "</figure>" for figure in figures if figure.png is not None]
    return "".join(images) if images else None


def _statistics(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> str:
    table = statistics_table(summary)
    return _table(table, text_columns={len(table.header) - 1})


def _skipped(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> str | None:
    table = skipped_targets_table(summary)
    return None if table is None else _table(table, text_columns={2})


def _optional(make_table: Callable[[BenchmarkSummary], Table | None]) -> Callable[..., str | None]:
    def body(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> str | None:
        table = make_table(summary)
        return None if table is None else _table(table)

    return body


def _dead_letters(summary: BenchmarkSummary, figures: Sequence[ReportFigure]) -> str | None:
    if not summary.dead_letter:
        return None
    return _table(Table(["reason", "records"], [[k, f"{v:,}"] for k, v in sorted(summary.dead_letter.items())]))


# The body of each section of REPORT_SECTIONS (None: the section has nothing to show for these runs).
SECTION_BODIES: dict[str, Callable[[BenchmarkSummary, Sequence[ReportFigure]], str | None]] = {
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


def _table(table: Table, text_columns: AbstractSet[int] = frozenset()) -> str:
    return f"<div class='scroll'>{html_table(table, text_columns)}</div>"


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)
