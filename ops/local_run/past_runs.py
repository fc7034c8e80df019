"""Review local runs: the index under `runs/`, one run's details, and two runs side by side."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from components.contracts.benchmark_summary import BenchmarkSummary
from components.contracts.promotion_decision import DECISION_FILE, PromotionDecision
from components.display_tables import Table, text_table
from components.report.report_tables import time_split_table
from ops.local_run.record import RUN_FILE, RunRecord, RunRecordError


class RunNotFound(LookupError):
    pass


@dataclass(frozen=True)
class ListedRun:
    """One run directory as `runs list` shows it: its record, as much of it as this adrank can read, and what is
    wrong with its `run.json` (`problem`: truncated, damaged, written by a newer adrank), so no run is hidden."""

    id: str
    record: RunRecord | None
    problem: str | None = None

    @property
    def status(self) -> str:
        return self.record.status if self.record is not None else "unreadable"

    @property
    def started(self) -> dt.datetime | None:
        return self.record.started if self.record is not None else None


def listed_run(run_dir: Path) -> ListedRun:
    """The run in `run_dir`; a `run.json` that cannot be read is a row with its problem, never an exception."""
    try:
        return ListedRun(run_dir.name, RunRecord.read(run_dir))
    except RunRecordError as error:
        problem = str(error)
        try:
            record = RunRecord.read_known_fields(run_dir) if error.unknown_fields else None
        except RunRecordError:
            record = None
        return ListedRun(run_dir.name, record, problem)


def list_runs(runs_dir: Path) -> list[ListedRun]:
    """Every run under `runs_dir`, newest first (a run whose start cannot be read first of all: it needs a look);
    a runs directory that does not exist is an error (a typo in --runs-dir must not read as "no runs")."""
    if not runs_dir.is_dir():
        raise RunNotFound(f"runs directory {runs_dir} does not exist (adrank run creates it; --runs-dir names "
                          "another)" if not runs_dir.exists()
                          else f"{runs_dir} is not a directory")
    runs = [listed_run(path.parent) for path in runs_dir.glob(f"*/{RUN_FILE}")]
    newest = dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    return sorted(runs, key=lambda run: (run.started or newest, run.id), reverse=True)


def find_run(runs_dir: Path, run: str) -> Path:
    """A run by exact id, or by a unique prefix; `latest` is the newest run."""
    if run == "latest":
        readable = [listed for listed in list_runs(runs_dir) if listed.started is not None]
        if not readable:
            raise RunNotFound(f"no runs with a readable run.json under {runs_dir}")
        return runs_dir / readable[0].id
    if (runs_dir / run / RUN_FILE).exists():
        return runs_dir / run
    matches = [p.parent for p in runs_dir.glob(f"{run}*/{RUN_FILE}")]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise RunNotFound(f"no run '{run}' under {runs_dir} (see `adrank runs list`)")
    raise RunNotFound(f"'{run}' matches {len(matches)} runs: {', '.join(sorted(m.name for m in matches))}")


def format_runs_table(runs_dir: Path) -> str:
    """The runs, newest first, one row each; a run whose run.json cannot be read is a row too, its problem
    listed under the table."""
    runs = list_runs(runs_dir)
    if not runs:
        return f"no runs under {runs_dir}"
    rows = []
    problems = []
    for run in runs:
        r = run.record
        status = run.status if run.problem is None else f"{run.status} (run.json: see below)"
        if r is None:
            rows.append([run.id, "—", "—", status, "—", "—"])
        else:
            rows.append([
                run.id, f"{r.started:%Y-%m-%d %H:%M}", f"{r.config_name} ({r.config_hash})", status,
                f"{r.best_logloss:.5f}" if r.best_logloss is not None else "—", r.best_target or "—",
            ])
        if run.problem is not None:
            problems.append(f"{run.id}: {run.problem}")
    table = text_table(Table(["run", "started (UTC)", "config", "status", "best log-loss", "best target"], rows))
    return table + ("\n\nrun records this adrank cannot read:\n" + "\n".join(f"  {p}" for p in problems)
                    if problems else "")


def format_run(run_dir: Path) -> str:
    listed = listed_run(run_dir)
    if listed.record is None:
        return "\n".join([f"run:      {listed.id}", "status:   unreadable", f"problem:  {listed.problem}"]
                         + ([f"logs:     {run_dir / 'pipeline.log'}"] if (run_dir / "pipeline.log").exists()
                            else []))
    record = listed.record
    lines = [
        f"run:      {record.id}",
        f"status:   {record.status}",
        f"config:   {record.config_name} ({record.config_hash}) from {record.config_source}",
        f"started:  {record.started:%Y-%m-%d %H:%M:%S} UTC",
    ]
    if listed.problem is not None:
        lines.insert(2, f"problem:  {listed.problem} (the fields shown are those this adrank knows)")
    if record.window_end:
        lines.append(f"window:   logs before {record.window_end}")
    if record.finished:
        lines.append(f"finished: {record.finished:%Y-%m-%d %H:%M:%S} UTC "
                     f"({(record.finished - record.started).total_seconds():.0f} s)")
    if record.status == "failed":
        lines.append(f"failed at step '{record.failed_step}': {record.failure_reason}")
        lines.append(f"logs:     {run_dir / 'pipeline.log'}")
    if record.status == "interrupted":
        lines.append(f"interrupted: {record.failure_reason}")
        lines.append(f"logs:     {run_dir / 'pipeline.log'}")
    summary = _summary(run_dir)
    if summary:
        lines.append("")
        rows = []
        for t in summary.targets.values():
            rows.append([
                t.name, ", ".join(t.hardware_seen), str(t.runs), f"{t.logloss_mean:.5f}",
                f"{t.logloss_std:.5f}" if t.logloss_std is not None else "—", f"{t.auc_mean:.4f}",
                f"{t.examples_per_second_mean:,.0f}",
                f"{t.cost_per_million_examples_usd:.4f}" if t.cost_per_million_examples_usd is not None else "—",
            ])
        lines.append(text_table(Table(
            ["target", "ran on", "runs", "log-loss mean", "std", "AUC", "examples/s", "$/M examples"], rows)))
        split = time_split_table(summary)
        if split is not None:  # where each target's run time went (the examples/s above: training steps only)
            lines.append("\nwhere the time went (mean seconds per run):")
            lines.append(text_table(split))
        floor = f", Bayes floor {summary.bayes_logloss:.5f}" if summary.bayes_logloss is not None else ""
        lines.append(f"\nconstant-CTR log-loss {summary.constant_ctr_logloss:.5f}{floor}")
        lines.append(f"report: {(run_dir / 'report.html').resolve()}")
    lines += promotion_lines(run_dir)
    return "\n".join(lines)


def promotion_lines(run_dir: Path) -> list[str]:
    """The promotion decision as `runs show` prints it: the same figures as the report's Promotion section."""

    path = run_dir / DECISION_FILE
    if not path.exists():
        return []
    d = PromotionDecision.read(path)
    interval = "—" if d.difference_ci95 is None else f"{d.difference_ci95[0]:+.6f} … {d.difference_ci95[1]:+.6f}"

    def number(value: float | None) -> str:
        return "—" if value is None else f"{value:.6f}"

    return [
        "",
        f"promotion: {'promoted' if d.promoted else 'not promoted'} (version {d.version or '— not registered'})",
        f"  challenger {d.challenger_target} run {d.challenger_run_index + 1}: log-loss {number(d.challenger_logloss)}",
        f"  champion (version {d.champion_version or '—'}, {d.champion_status}): log-loss {number(d.champion_logloss)}",
        f"  difference {'—' if d.difference is None else f'{d.difference:+.6f}'}, 95% CI {interval}, "
        f"{d.eval_examples:,} eval examples",
        f"  reason: {d.reason}",
    ]


def format_comparison(run_a: Path, run_b: Path) -> str:
    """Per-target deltas (B − A) of mean log-loss and throughput for targets present in both runs."""
    a, b = _finished_summary(run_a), _finished_summary(run_b)
    rows = []
    common = [name for name in a.targets if name in b.targets]
    for name in common:
        ta, tb = a.targets[name], b.targets[name]
        delta = tb.logloss_mean - ta.logloss_mean
        rows.append([
            name, f"{ta.logloss_mean:.5f}", f"{tb.logloss_mean:.5f}", f"{delta:+.5f}",
            f"{delta / ta.logloss_mean:+.2%}", f"{ta.examples_per_second_mean:,.0f}",
            f"{tb.examples_per_second_mean:,.0f}",
            f"{tb.examples_per_second_mean / ta.examples_per_second_mean:.2f}×",
        ])
    lines = [f"A: {run_a.name}", f"B: {run_b.name}", ""]
    header = ["target", "log-loss A", "log-loss B", "Δ log-loss", "Δ %", "examples/s A", "examples/s B", "speed B/A"]
    lines.append(text_table(Table(header, rows)) if common else "no target in common")
    only = sorted(set(a.targets) ^ set(b.targets))
    if only:
        lines.append(f"\nin one run only: {', '.join(only)}")
    return "\n".join(lines)


def _summary(run_dir: Path) -> BenchmarkSummary | None:
    path = run_dir / "summary.json"
    return BenchmarkSummary.read(path) if path.exists() else None


def _finished_summary(run_dir: Path) -> BenchmarkSummary:
    summary = _summary(run_dir)
    if summary is None:
        raise RunNotFound(f"run {run_dir.name} has no summary.json (did it finish?)")
    return summary
