"""The HTML pages (jinja2 templates, one page wrapper): text from configs, logs and records reaches them escaped, and
a local run's report rendered again with the promotion section is the report step's page with that section at its
end, however often it is rendered."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from components.contracts.benchmark_summary import BenchmarkSummary
from components.contracts.promotion_decision import PromotionDecision
from components.report.aggregation import summarize
from components.report.day_series import DaySeries
from components.report.day_series import render_html as render_replay
from components.report.figure_files import saved_figures
from components.report.html import render_html
from components.report.promotion_section import promotion_html, promotion_page
from tests.components.report.test_figures_and_sections import written_report
from tests.components.report.test_promotion_section import LEGACY_RECORD
from tests.components.report.test_report import config, manifest, run

HOSTILE = "<script>alert('x')</script>"
ESCAPED = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
PAGE_START = "<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
PAGE_END = "</body></html>\n"


def hostile_decision() -> PromotionDecision:
    return PromotionDecision.model_validate({**LEGACY_RECORD, "reason": HOSTILE, "rule": HOSTILE})


def test_names_from_logs_configs_and_records_are_escaped_on_every_page():
    hostile_manifest = manifest().model_copy(update={"dead_letter": {HOSTILE: 3}})  # a dead-letter reason from a log
    summary = summarize(config(), hostile_manifest, [run(t, i, 0.33 + i * 0.01, 1000.0) for t in ("cpu", "cpu-big")
                                                     for i in range(2)])
    summary = summary.model_copy(update={"pipeline": HOSTILE})
    pages = {
        "report": render_html(summary, (), hostile_decision()),
        "promotion": promotion_page(hostile_decision()),
        "replay": render_replay(DaySeries(replay_id="r", config_name=HOSTILE, config_hash="h", lookback_days=3,
                                          registry=HOSTILE, days=[]), None),
    }
    for name, page in pages.items():
        assert page.startswith(PAGE_START) and page.endswith(PAGE_END), name
        assert "<script" not in page and ESCAPED in page, name
    # title, heading, promotion reason and rule by the templates; the dead-letter table by `html_table` (as &#x27;)
    assert pages["report"].count(ESCAPED) == 4 and pages["report"].count("&lt;script&gt;") == 5


def test_the_report_rendered_again_with_the_promotion_is_the_step_s_page_with_the_section_at_its_end(tmp_path):
    page, _, step = written_report(tmp_path)
    summary, figures = BenchmarkSummary.read(step / "summary_json"), saved_figures(step)
    assert render_html(summary, figures) == page  # from summary.json and the figure files: the same page
    decision = PromotionDecision.model_validate(LEGACY_RECORD)
    promoted = render_html(summary, figures, decision)
    assert promoted == render_html(BenchmarkSummary.model_validate_json(summary.model_dump_json()), figures, decision)
    assert promoted == page.removesuffix(PAGE_END) + promotion_html(decision) + PAGE_END
    assert promoted.count("<h2>Promotion</h2>") == 1


def test_a_figure_with_nothing_drawn_has_no_file_and_no_image(tmp_path):
    (tmp_path / "cost.png").write_bytes(b"\x89PNG")
    figures = saved_figures(Path(tmp_path))
    assert [f.file_name for f in figures if f.png is not None] == ["cost.png"]
    assert len(figures) == 5


def test_every_template_ships_in_the_package():
    # the images install adrank from its wheel (`uv pip install .`): a template outside package-data would be missing
    root = Path(__file__).resolve().parents[3]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["components"]
    templates = [str(path.relative_to(root / "components")) for path in (root / "components/report/templates").iterdir()]
    assert len(templates) == 5
    assert [name for name in templates if not any(fnmatch.fnmatch(name, pattern) for pattern in patterns)] == []
