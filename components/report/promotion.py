"""The promotion decision as a report section (Markdown and HTML): champion and challenger on the same examples.

The promotion step runs after the report, so it renders this section itself: on Vertex as its own HTML and
Markdown artifacts, locally `adrank run` also appends it to the run's report.html and report.md.
"""

from __future__ import annotations

import html

from components.registry.promotion import PromotionDecision
from components.report.markdown import markdown_table
from components.report.table import Table

HTML_MARKER = "<!-- adrank:promotion -->"


def promotion_table(decision: PromotionDecision) -> Table:
    def number(value: float | None, digits: int = 6) -> str:
        return "—" if value is None else f"{value:.{digits}f}"

    interval = "—" if decision.difference_ci95 is None else (
        f"{decision.difference_ci95[0]:+.6f} … {decision.difference_ci95[1]:+.6f}")
    champion = decision.champion_version or "—"
    return Table(["", "value"], [
        ["challenger", f"{decision.challenger_target} run {decision.challenger_run_index + 1}"],
        ["challenger log-loss", number(decision.challenger_logloss)],
        [f"champion (version {champion}) log-loss", number(decision.champion_logloss)],
        ["difference (challenger − champion)", "—" if decision.difference is None else f"{decision.difference:+.6f}"],
        ["95% CI of the difference", interval],
        ["eval examples (positives)", f"{decision.eval_examples:,} ({decision.eval_positives:,})"],
        ["champion", decision.champion_status],
        ["promoted", "yes" if decision.promoted else "no"],
        ["registered version", decision.version or "— (not registered)"],
    ])


def promotion_markdown(decision: PromotionDecision) -> str:
    table = promotion_table(decision)
    lines = ["## Promotion", "", f"**{'Promoted' if decision.promoted else 'Not promoted'}**: {decision.reason}", "",
             f"Rule: {decision.rule} (task `{decision.primary_task}`).", "", markdown_table(table)]
    return "\n".join(lines) + "\n"


def promotion_html(decision: PromotionDecision) -> str:
    table = promotion_table(decision)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in table.rows)
    verdict = "Promoted" if decision.promoted else "Not promoted"
    return (f"{HTML_MARKER}<h2>Promotion</h2><p><b>{verdict}</b>: {html.escape(decision.reason)}</p>"
            f"<p class='meta'>Rule: {html.escape(decision.rule)} (task <code>{html.escape(decision.primary_task)}"
            f"</code>).</p><table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in table.header)
            + f"</tr>{rows}</table>")


def with_promotion_section(report_html: str, decision: PromotionDecision) -> str:
    """The report with the promotion section before `</body>` (replacing one added before)."""
    if HTML_MARKER in report_html:
        report_html = report_html[:report_html.index(HTML_MARKER)] + "</body></html>\n"
    return report_html.replace("</body></html>", promotion_html(decision) + "</body></html>", 1)
