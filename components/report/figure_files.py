"""The report's figures by name: each one's title (the image's alt text) and the PNG file the report step writes
beside the Markdown report, in the order the report shows them. Drawing them is `components.report.plots`; a local
run reads them back from its run directory (`saved_figures`) to render its report again with the promotion section."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ReportFigure:
    """One figure of the report: its title (the image's alt text), the PNG file the Markdown report links, and
    the PNG itself (None: nothing to draw for these runs, e.g. no training curve)."""

    title: str
    file_name: str
    png: bytes | None


# (title, file name) of every figure of the run report, in the order it shows them
REPORT_FIGURES: tuple[tuple[str, str], ...] = (
    ("log-loss per run", "logloss_per_run.png"),
    ("throughput", "throughput.png"),
    ("cost per run and per million examples", "cost.png"),
    ("training curves", "training_curves.png"),
    ("reliability", "reliability.png"),
)


def saved_figures(directory: Path) -> list[ReportFigure]:
    """The report's figures as written in `directory` (a figure with nothing to draw has no file: its PNG is None)."""
    return [ReportFigure(title, name, (directory / name).read_bytes() if (directory / name).is_file() else None)
            for title, name in REPORT_FIGURES]
