"""The promotion decision as a report section (Markdown and HTML): champion and challenger on the same examples.

The promotion step runs after the report, so it renders this section itself: on Vertex as its own HTML and
Markdown artifacts; locally `adrank run` also renders the run's report.html again with it at the end
(`components.report.html.render_html`) and appends it to report.md. A champion that
could not be scored opens the section with a warning: the default was kept (or replaced) without a comparison.
"""

from __future__ import annotations

from typing import Any

from components.contracts.promotion_decision import PromotionDecision
from components.display_tables import Table, html_table, markdown_table
from components.report.html_page import render_page, trusted_html


def _signed(value: float | None, digits: int = 6) -> str:
    return "—" if value is None else f"{value:+.{digits}f}"


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:+.3%}"


def promotion_table(decision: PromotionDecision) -> Table:
    def number(value: float | None, digits: int = 6) -> str:
        return "—" if value is None else f"{value:.{digits}f}"

    interval = "—" if decision.difference_ci95 is None else (
        f"{decision.difference_ci95[0]:+.6f} … {decision.difference_ci95[1]:+.6f}")
    relative_interval = "—" if decision.relative_difference_ci95 is None else (
        f"{_share(decision.relative_difference_ci95[0])} … {_share(decision.relative_difference_ci95[1])}")
    champion = decision.champion_version or "—"
    tolerance = number(decision.tolerance) + " nats"
    if decision.tolerance_relative is not None:
        tolerance += f" ({decision.tolerance_relative:.3%} of the champion's log-loss)"
    tolerance += f"; stated {decision.tolerance_form}"
    return Table(["", "value"], [
        ["challenger", f"{decision.challenger_target} run {decision.challenger_run_index + 1}"],
        ["challenger log-loss", number(decision.challenger_logloss)],
        [f"champion (version {champion}) log-loss", number(decision.champion_logloss)],
        ["difference (challenger − champion)",
         f"{_signed(decision.difference)} ({_share(decision.relative_difference)} of the champion's)"
         if decision.relative_difference is not None else _signed(decision.difference)],
        ["95% CI of the difference", interval],
        ["95% CI relative to the champion", relative_interval],
        ["tolerance (promote when the CI's upper end is ≤)", tolerance],
        ["eval examples (positives)", f"{decision.eval_examples:,} ({decision.eval_positives:,})"
         + (f", capped at promotion.max_eval_examples {decision.eval_examples_cap:,}"
            if decision.eval_examples_cap is not None else "")],
        ["champion", decision.champion_status],
        ["promoted", "yes" if decision.promoted else "no"],
        ["registered version", decision.version or "— (not registered)"],
    ])


def unscorable_warning(decision: PromotionDecision) -> str | None:
    """The warning a damaged or incompatible champion deserves, None when it was scored (or absent)."""
    if decision.champion_status != "unscorable":
        return None
    return (f"Warning: {decision.reason}. Repair or replace the default version "
            f"({decision.champion_version or '?'}) in the registry.")


def promotion_markdown(decision: PromotionDecision) -> str:
    table = promotion_table(decision)
    warning = unscorable_warning(decision)
    lines = ["## Promotion", ""] + ([f"> **{warning}**", ""] if warning else []) + [
        f"**{'Promoted' if decision.promoted else 'Not promoted'}**: {decision.reason}", "",
        f"Rule: {decision.rule} (task `{decision.primary_task}`).", "", markdown_table(table)]
    return "\n".join(lines) + "\n"


def promotion_context(decision: PromotionDecision) -> dict[str, Any]:
    """What `templates/promotion_section.html.j2` shows of `decision`."""
    return {"decision": decision, "verdict": "Promoted" if decision.promoted else "Not promoted",
            "warning": unscorable_warning(decision), "table": trusted_html(html_table(promotion_table(decision)))}


def promotion_html(decision: PromotionDecision) -> str:
    """The section alone (an HTML fragment)."""
    return render_page("promotion_section.html.j2", promotion=promotion_context(decision))


def promotion_page(decision: PromotionDecision) -> str:
    """The promotion step's HTML artifact: a page holding the section."""
    return render_page("promotion_page.html.j2", title="adrank promotion", promotion=promotion_context(decision))
