"""The report's pictures are where people look: the cost chart in the HTML and the Markdown report, every figure
of the HTML also in the Markdown (as PNG files beside it), and both reports in one section order."""

import base64
import re
from pathlib import Path

from components.report import html as html_report
from components.report import summary_markdown as markdown_report
from components.report.sections import REPORT_SECTIONS
from components.report.write_report import write_report
from tests.components.report.test_report import FakeArtifact, config, manifest, run

COST_CHART = "cost per run and per million examples"


def written_report(tmp_path: Path) -> tuple[str, str, Path]:
    """A report as the KFP step writes it: each output artifact a file in the step's directory."""
    examples = tmp_path / "examples"
    examples.mkdir()
    manifest().write(examples)
    paths = [str(run(target, i, 0.33 + i * 0.01, eps, wall=20.0 + i).write(tmp_path / f"{target}-{i}"))
             for target, eps in (("cpu", 1000.0), ("cpu-big", 3000.0)) for i in range(2)]
    step = tmp_path / "report-step"
    outputs = {name: FakeArtifact(step / name) for name in ("report_html", "report_markdown", "summary_json")}
    metrics = [FakeArtifact(step / name) for name in ("metrics", "m1", "m2")]
    write_report(config(), str(examples), paths, outputs["report_html"], outputs["report_markdown"],
                 outputs["summary_json"], metrics[0], {"cpu": metrics[1], "cpu-big": metrics[2]})
    return (step / "report_html").read_text(), (step / "report_markdown").read_text(), step


def html_images(html: str) -> dict[str, bytes]:
    return {alt: base64.b64decode(data)
            for alt, data in re.findall(r"<img alt='([^']+)' src='data:image/png;base64,([^']+)'", html)}


def markdown_images(markdown: str) -> dict[str, str]:
    return dict(re.findall(r"!\[([^\]]+)\]\(([^)]+)\)", markdown))


def test_the_cost_chart_is_a_file_beside_the_markdown_and_in_both_reports(tmp_path):
    html, markdown, step = written_report(tmp_path)
    chart = step / "cost.png"
    assert chart.read_bytes().startswith(b"\x89PNG")
    assert markdown_images(markdown)[COST_CHART] == "cost.png"
    assert html_images(html)[COST_CHART] == chart.read_bytes()


def test_the_markdown_links_every_figure_the_html_shows_as_a_file_beside_it(tmp_path):
    html, markdown, step = written_report(tmp_path)
    shown, linked = html_images(html), markdown_images(markdown)
    assert set(shown) == set(linked) and {"log-loss per run", "throughput", COST_CHART, "training curves"} <= set(shown)
    for title, file_name in linked.items():
        assert "/" not in file_name and (step / file_name).read_bytes() == shown[title]


def test_html_and_markdown_follow_one_section_order(tmp_path):
    html, markdown, _ = written_report(tmp_path)
    html_headings = re.findall(r"<h2>([^<]+)</h2>", html)
    markdown_headings = re.findall(r"^## (.+)$", markdown, flags=re.MULTILINE)
    assert html_headings == markdown_headings
    titles = [section.title for section in REPORT_SECTIONS if section.title]
    assert html_headings == [title for title in titles if title in html_headings]
    assert {"Targets", "Figures", "Every run", "Dead-lettered log records"} <= set(html_headings)


def test_each_renderer_draws_exactly_the_listed_sections():
    keys = {section.key for section in REPORT_SECTIONS}
    assert set(html_report.SECTION_BODIES) == keys == set(markdown_report.SECTION_BODIES)
