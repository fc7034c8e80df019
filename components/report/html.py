"""The self-contained HTML report: one file, figures embedded, readable in Vertex's HTML viewer."""

from __future__ import annotations

import base64
import html
from collections.abc import Set as AbstractSet

from components.report.benchmark import BenchmarkSummary
from components.report.calibration import reliability_table
from components.report.findings import findings
from components.report.table import (
    Table, eval_curve_table, per_run_table, per_target_table, skipped_targets_table, statistics_table,
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


def render_html(summary: BenchmarkSummary, figures: dict[str, bytes | None]) -> str:
    body = [
        f"<h1>adrank benchmark — {_e(summary.pipeline)}</h1>",
        f"<p class='meta'>config <code>{_e(summary.config_hash)}</code> · generated "
        f"{summary.generated:%Y-%m-%d %H:%M} UTC · train {summary.train_examples:,} / eval "
        f"{summary.eval_examples:,} examples · primary task <b>{_e(summary.primary_task)}</b></p>",
        "<ul class='findings'>" + "".join(f"<li>{_e(line)}</li>" for line in findings(summary)) + "</ul>",
        "<h2>Targets</h2>",
        _table(per_target_table(summary)),
        *_skipped_section(summary),
        "<h2>Figures</h2>",
        "".join(
            f"<figure><img alt='{_e(name)}' src='data:image/png;base64,{base64.b64encode(png).decode()}'/></figure>"
            for name, png in figures.items() if png
        ),
        "<h2>Log-loss statistics per task</h2>",
        "<p class='meta'>Standard deviation over repeated identical runs (different seeds); 95% CI of the mean "
        "from Student's t; the baseline comparison is Welch's t-test.</p>",
        _table(statistics_table(summary), text_columns={len(statistics_table(summary).header) - 1}),
        *_eval_curve_section(summary),
        *_reliability_section(summary),
        "<h2>Every run</h2>",
        "<p class='meta'>Hardware as reported by the runtime of each run, not as requested.</p>",
        _table(per_run_table(summary)),
    ]
    if summary.dead_letter:
        body += ["<h2>Dead-lettered log records</h2>",
                 _table(Table(["reason", "records"], [[k, f"{v:,}"] for k, v in sorted(summary.dead_letter.items())]))]
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>adrank benchmark — {_e(summary.pipeline)}</title><style>{STYLE}</style></head><body>"
        + "\n".join(body) + "</body></html>\n"
    )


def _skipped_section(summary: BenchmarkSummary) -> list[str]:
    table = skipped_targets_table(summary)
    if table is None:
        return []
    return ["<h2>Skipped targets</h2>",
            "<p class='meta'>Configured targets this DAG did not train on this backend or machine.</p>",
            _table(table, text_columns={2})]


def _eval_curve_section(summary: BenchmarkSummary) -> list[str]:
    table = eval_curve_table(summary)
    if table is None:
        return []
    return ["<h2>Eval log-loss per epoch</h2>",
            "<p class='meta'>Mean over each target's runs, measured after every epoch: rising values mean "
            "over-fitting, values still falling at the end mean more epochs would help.</p>", _table(table)]


def _reliability_section(summary: BenchmarkSummary) -> list[str]:
    table = reliability_table(summary)
    if table is None:
        return []
    return ["<h2>Calibration: reliability per bin</h2>",
            "<p class='meta'>Eval examples in bins of equal count by predicted probability, mean over each "
            "target's runs (the reliability figure above plots them); a calibrated model predicts each bin's observed "
            "rate.</p>", _table(table)]


def _table(table: Table, text_columns: AbstractSet[int] = frozenset()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in table.header)
    rows = "".join(
        "<tr>" + "".join(
            f"<td class='text'>{_e(cell)}</td>" if i in text_columns else f"<td>{_e(cell)}</td>"
            for i, cell in enumerate(row)
        ) + "</tr>"
        for row in table.rows
    )
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>"


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)
