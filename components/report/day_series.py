"""The day-series report of a daily-retraining replay: per day the challenger and the champion on the same
examples, the interval of their difference, the decision, warm or cold, and the time taken.

`DaySeries` is the replay's JSON record (`replay.json`); `render_*` write it as Markdown, HTML and a figure.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

from pydantic import Field

from components.contracts.base import Contract
from components.contracts.promotion_decision import PromotionDecision
from components.display_tables import Table, html_table, markdown_table
from components.report.html_page import render_page, trusted_html

SERIES_FILE = "replay.json"


class ReplayDay(Contract):
    day: int = Field(ge=1)
    window_end: str
    window_start: str | None
    run_id: str
    seconds: float
    eval_examples: int
    eval_positive_rate: float
    bayes_logloss: float | None = Field(None, description="the eval window's floor (synthetic logs only)")
    warm_start: bool
    rows_copied: int | None = None
    rows_new: int | None = None
    decision: PromotionDecision


class DaySeries(Contract):
    replay_id: str
    config_name: str
    config_hash: str
    lookback_days: int
    registry: str
    days: list[ReplayDay]

    def write(self, directory: Path) -> Path:
        path = directory / SERIES_FILE
        path.write_text(self.model_dump_json(indent=2))
        return path

    @classmethod
    def read(cls, directory: Path) -> DaySeries:
        return cls.model_validate_json((directory / SERIES_FILE).read_text())


def series_table(series: DaySeries) -> Table:
    def number(value: float | None) -> str:
        return "—" if value is None else f"{value:.5f}"

    rows = []
    for day in series.days:
        d = day.decision
        interval = "—" if d.difference_ci95 is None else f"{d.difference_ci95[0]:+.5f} … {d.difference_ci95[1]:+.5f}"
        start = "warm" if day.warm_start else "cold"
        if day.warm_start and day.rows_copied is not None:
            start += f" ({day.rows_copied:,} rows kept, {day.rows_new:,} new)"
        rows.append([
            str(day.day), day.window_end[:10], f"{day.eval_examples:,}", f"{day.eval_positive_rate:.4f}",
            number(day.bayes_logloss), number(d.challenger_logloss), number(d.champion_logloss),
            "—" if d.difference is None else f"{d.difference:+.5f}" + (
                f" ({d.relative_difference:+.2%})" if d.relative_difference is not None else ""),
            interval, "—" if d.tolerance is None else f"{d.tolerance:.5f}" + (
                f" ({d.tolerance_relative:.2%})" if d.tolerance_relative is not None else ""),
            ("promoted" if d.promoted else "kept champion") + f" (v{d.version})" if d.version else "not registered",
            start, f"{day.seconds:.0f} s",
        ])
    return Table(["day", "window end", "eval examples", "eval rate", "Bayes floor", "challenger", "champion",
                  "difference (share of champion)", "95% CI", "tolerance", "decision", "start", "time"], rows)


def series_figure(series: DaySeries) -> bytes:
    """Challenger and champion log-loss per day (same examples), and the difference with its 95% CI."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    days = [d.day for d in series.days]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.2), sharex=True)
    top.plot(days, [d.decision.challenger_logloss for d in series.days], "o-", label="challenger")
    champion = [(d.day, d.decision.champion_logloss) for d in series.days if d.decision.champion_logloss is not None]
    if champion:
        top.plot(*zip(*champion), "s--", label="champion (same examples)")
    floors = [(d.day, d.bayes_logloss) for d in series.days if d.bayes_logloss is not None]
    if floors:
        top.plot(*zip(*floors), ":", color="#484", label="Bayes floor")
    top.set_ylabel("eval log-loss")
    top.legend(fontsize=8)
    top.grid(alpha=0.3)
    for d in series.days:
        if d.decision.difference is None or d.decision.difference_ci95 is None:
            continue
        low, high = d.decision.difference_ci95
        color = "#2a7" if d.decision.promoted else "#c44"
        bottom.errorbar(d.day, d.decision.difference, yerr=[[d.decision.difference - low], [high - d.decision.difference]],
                        fmt="o", color=color, capsize=4)
    tolerances = [(d.day, d.decision.tolerance) for d in series.days if d.decision.tolerance is not None]
    if tolerances:  # a relative tolerance moves with the champion's log-loss: one mark per day
        bottom.plot(*zip(*tolerances), "_", color="#888", markersize=18, markeredgewidth=2,
                    label="tolerance (promote when the CI's top is below)")
    bottom.axhline(0.0, color="black", linewidth=0.6)
    bottom.set_ylabel("challenger − champion")
    bottom.set_xlabel("replayed day")
    bottom.set_xticks(days)
    bottom.legend(fontsize=8)
    bottom.grid(alpha=0.3)
    fig.suptitle(f"Daily retraining replay — {series.config_name}")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()


def _intro(series: DaySeries) -> str:
    promoted = sum(d.decision.promoted for d in series.days)
    return (f"{len(series.days)} days replayed, each reading the {series.lookback_days} days of logs before its "
            f"window end; {promoted} promoted. Champion and challenger are scored on the same eval examples each "
            f"day. Registry: {series.registry}")


def render_markdown(series: DaySeries, figure_name: str | None = None) -> str:
    lines = [f"# Daily retraining replay — {series.config_name}", "", _intro(series), "",
             markdown_table(series_table(series)), ""]
    if figure_name:
        lines += [f"![challenger and champion per day]({figure_name})", ""]
    lines += ["## Decisions", ""] + [f"- day {d.day}: {d.decision.reason}" for d in series.days]
    return "\n".join(lines) + "\n"


def render_html(series: DaySeries, figure: bytes | None) -> str:
    """The day series page (`templates/replay.html.j2`): the table, the figure, each day's decision."""
    return render_page("replay.html.j2", title="adrank replay", series=series, intro=_intro(series),
                       table=trusted_html(html_table(series_table(series))),
                       figure_base64=base64.b64encode(figure).decode() if figure else None)


def write_reports(series: DaySeries, directory: Path) -> dict[str, Path]:
    figure = series_figure(series) if series.days else None
    paths = {"json": series.write(directory), "png": directory / "replay.png",
             "md": directory / "replay.md", "html": directory / "replay.html"}
    if figure:
        paths["png"].write_bytes(figure)
    paths["md"].write_text(render_markdown(series, "replay.png" if figure else None))
    paths["html"].write_text(render_html(series, figure))
    return paths
