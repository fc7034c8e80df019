"""What a finished local run keeps beside its record: the report step's files copied to the top of the run
directory (`report.html`, `report.md`, `summary.json`, the figures), and a promotion step's decision
(`promotion.json`) with its section spliced into the report; the engine's record of the run's last attempt.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from components.contracts.benchmark_summary import BenchmarkSummary
from components.contracts.promotion_decision import DECISION_FILE, PromotionDecision
from components.report.figure_files import saved_figures
from components.report.html import render_html
from components.report.promotion_section import promotion_markdown
from ops.local_run.directories import JOBS_DIR, REPORT_FILES
from ops.spec_executor.job_record import RUN_RECORD, SpecRun, TaskRecord

REPORT_STEP, PROMOTION_STEP = "report", "promote model"  # display names (pipelines.ranking)


def keep_report(run_dir: Path, job: SpecRun) -> None:
    """The report step's files (and the figures report.md links) at the top of `run_dir`; the promotion step's
    decision and section too when the run had one."""
    report = step_outputs(job, REPORT_STEP)
    for output, name in REPORT_FILES.items():
        shutil.copyfile(report[output], run_dir / name)
    for figure in report["report_markdown"].parent.glob("*.png"):
        shutil.copyfile(figure, run_dir / figure.name)  # the figures report.md links
    promotion = step_outputs(job, PROMOTION_STEP).get("promotion") if _has_step(job, PROMOTION_STEP) else None
    attach_promotion(run_dir, promotion)


def step_outputs(job: SpecRun, display_name: str) -> dict[str, Path]:
    """The local paths of a finished step's output artifacts (by output name), from the engine's record."""
    task = next((t for t in job.tasks if t.display_name == display_name and t.state in ("succeeded", "cached")), None)
    if task is None:
        raise FileNotFoundError(f"the run has no finished step '{display_name}'")
    return {name: Path(artifacts[0]["uri"]) for name, artifacts in task.outputs.items()
            if name != "parameters" and artifacts}

def last_job(run_dir: Path) -> SpecRun:
    """The engine's record of the run's latest attempt (`spec-runs/<job>/spec_run.json`)."""
    records = sorted((run_dir / JOBS_DIR).glob(f"*/{RUN_RECORD}"), key=lambda p: p.stat().st_mtime)
    if not records:
        raise FileNotFoundError(f"{run_dir}: no engine record under {JOBS_DIR}/")
    data = json.loads(records[-1].read_text())
    tasks = [TaskRecord(**{k: v for k, v in t.items() if k in TaskRecord.__dataclass_fields__})
             for t in data.get("tasks", [])]
    fields = {k: v for k, v in data.items() if k in SpecRun.__dataclass_fields__ and k != "tasks"}
    return SpecRun(**fields, tasks=tasks)


def attach_promotion(run_dir: Path, source: Path | None) -> None:
    """The promotion step's decision beside the report (`promotion.json`), and its section in report.html (the report
    rendered again from summary.json and the figures beside it, with the section at its end) and report.md; nothing
    when the run had no promotion step (`source` None)."""
    if source is None:
        return
    decision = PromotionDecision.read(source)
    decision.write(run_dir / DECISION_FILE)
    html_path, markdown_path = run_dir / REPORT_FILES["report_html"], run_dir / REPORT_FILES["report_markdown"]
    summary = BenchmarkSummary.read(run_dir / REPORT_FILES["summary_json"])
    html_path.write_text(render_html(summary, saved_figures(run_dir), decision))
    markdown_path.write_text(markdown_path.read_text().rstrip("\n") + "\n\n" + promotion_markdown(decision))

def _has_step(job: SpecRun, display_name: str) -> bool:
    return any(t.display_name == display_name for t in job.tasks)
