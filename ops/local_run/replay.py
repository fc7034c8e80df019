"""`adrank retrain`: replay daily retraining for N days on this machine.

    day 1 … N:  window end = first window end + (day − 1) days
                └► the retraining pipeline (`run_locally(..., pipeline="retraining")`, the one a Vertex schedule
                   runs), preprocess reading only the `logs.lookback_days` before it
                └► train `retraining.target` once (warm from the champion with `training.warm_start: champion`)
                └► promote: champion and challenger on that day's eval examples, into the replay's registry
    then:       replay.json / replay.md / replay.html / replay.png in `<runs dir>/<replay id>/`

Each day is an ordinary local run (`<replay id>-day<k>`, listed by `adrank runs list`) whose record stores its
window end. Unless the config names its own `promotion.local_registry`, the replay promotes into
`<runs dir>/<replay id>/registry`, so a replay never changes the models that `adrank run` promoted.

The plan (the config after the replay's own overrides, in `config.yaml`, and every day's window end, in
`replay-plan.json`) is written before day 1, so `adrank retrain --resume <replay id>` continues an interrupted
replay: finished days are kept, the first unfinished day resumes (`adrank run --resume`, its window kept), the
days after it run.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from components.contracts.manifest import Manifest
from components.contracts.promotion_decision import DECISION_FILE, PromotionDecision
from components.contracts.run_summary import RunSummary
from components.progress import progress_quiet
from components.report.day_series import DaySeries, ReplayDay, write_reports
from configs import AdrankConfig, config_hash, load_config, with_overrides
from foundation.atomic_write import write_json_atomically
from foundation.utc_time import format_utc_seconds
from ops.local_run.directories import (
    MAX_RUNS_PER_SECOND,
    RunDirectoryTaken,
    TooManyRunsThisSecond,
    create_run_directory,
)
from ops.local_run.record import RUN_FILE, RunRecord, RunRecordError
from ops.local_run.report_files import last_job, step_outputs
from ops.local_run.run import run_locally
from ops.spec_executor.job_record import SpecRun

PLAN_FILE = "replay-plan.json"
PLAN_CONFIG_FILE = "config.yaml"


class ReplayError(ValueError):
    """The config cannot be replayed as asked (names the field or the option)."""


@dataclass(frozen=True)
class ReplayPlan:
    config: AdrankConfig
    window_ends: list[dt.datetime]
    note: str | None = None


def plan_replay(config: AdrankConfig, days: int, first_window_end: dt.date | None, registry: Path) -> ReplayPlan:
    """The config each day runs with, and each day's window end (midnight UTC).

    Synthetic logs: day 1's window ends `logs.lookback_days` after `logs.synthetic.start_date`, and the generator
    makes as many days as the replay reads (`logs.synthetic.days` grows if it is too short; the note says so).
    Own logs: `--first-day` is the first window end. `registry`: where the replay promotes, unless the config
    names its own `promotion.local_registry` (`PromotionConfig.registry_overrides`)."""
    config.retraining_target()  # ConfigError naming retraining.target when the config has no production target
    if days < 1:
        raise ReplayError(f"--days {days}: replay at least one day")
    lookback = config.logs.lookback_days
    if lookback is None:
        raise ReplayError("logs.lookback_days: must be set to replay days (each day reads only the days before "
                          "its window end), e.g. --set logs.lookback_days=3")
    if lookback <= config.split.eval_days:
        raise ReplayError(f"logs.lookback_days: {lookback} leaves no training day before the last "
                          f"split.eval_days={config.split.eval_days} eval days")
    extra: list[str] = []
    note = None
    extra += config.promotion.registry_overrides(registry)
    if config.logs.source == "synthetic":
        synthetic = config.logs.synthetic
        first = first_window_end or synthetic.start_date + dt.timedelta(days=lookback)
        needed = (first - synthetic.start_date).days + days - 1
        if needed > synthetic.days:
            extra.append(f"logs.synthetic.days={needed}")
            note = (f"replaying {days} days with a {lookback}-day lookback reads {needed} days of synthetic logs: "
                    f"logs.synthetic.days {synthetic.days} → {needed}")
    elif first_window_end is None:
        raise ReplayError("--first-day: required with logs from files or BigQuery (the first day's window end, "
                          "YYYY-MM-DD)")
    else:
        first = first_window_end
    config = with_overrides(config, extra, "the replay's config")
    start = dt.datetime.combine(first, dt.time(), dt.timezone.utc)
    return ReplayPlan(config, [start + dt.timedelta(days=day) for day in range(days)], note)


def save_plan(plan: ReplayPlan, series_dir: Path, config_source: str) -> None:
    """What `--resume` needs to replay the same days: the config each day runs and every day's window end."""
    (series_dir / PLAN_CONFIG_FILE).write_text(yaml.safe_dump(plan.config.model_dump(mode="json"), sort_keys=False))
    content = {"config_source": config_source, "config_hash": config_hash(plan.config),
               "window_ends": [format_utc_seconds(end) for end in plan.window_ends]}
    write_json_atomically(series_dir / PLAN_FILE, content)


def saved_plan(runs_dir: Path, replay_id: str) -> tuple[ReplayPlan, Path, str]:
    """The plan, directory and config source of replay `replay_id` under `runs_dir`, as `save_plan` wrote them."""
    series_dir = runs_dir / replay_id
    if not (series_dir / PLAN_FILE).exists():
        what = ("was started by an adrank that recorded no plan" if series_dir.is_dir()
                else f"is not under {runs_dir}")
        raise ReplayError(f"--resume {replay_id}: replay {replay_id} {what}; resume needs its {PLAN_FILE}")
    try:
        content = json.loads((series_dir / PLAN_FILE).read_text())
        window_ends = [dt.datetime.fromisoformat(end.replace("Z", "+00:00")) for end in content["window_ends"]]
        config_source = str(content["config_source"])
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ReplayError(f"{series_dir / PLAN_FILE}: not a replay plan ({type(error).__name__}: {error})") from None
    config = load_config(str(series_dir / PLAN_CONFIG_FILE))
    if config_hash(config) != content.get("config_hash"):
        raise ReplayError(f"{series_dir / PLAN_CONFIG_FILE}: changed since the replay started (config "
                          f"{config_hash(config)}, the plan ran {content.get('config_hash')})")
    return ReplayPlan(config, window_ends), series_dir, config_source


def create_replay_dir(runs_dir: Path, replay_id: str | None, config_name: str) -> Path:
    """`<runs dir>/<UTC second>-<config name>-replay` (or `replay_id`), new and empty (`ops.local_run.directories`)."""
    try:
        return create_run_directory(runs_dir, replay_id or None, f"{config_name}-replay")
    except RunDirectoryTaken:
        raise ReplayError(f"--replay-id {replay_id}: already taken under {runs_dir}") from None
    except TooManyRunsThisSecond as error:
        raise ReplayError(f"{MAX_RUNS_PER_SECOND} replays named '{error.base}*' under {runs_dir} this second; "
                          "pass --replay-id") from None


def replay(plan: ReplayPlan, series_dir: Path, runs_dir: Path, config_source: str, echo=print,
           quiet: bool | None = None, resume: bool = False) -> DaySeries:
    """Run every day of the plan in order; the day-series reports are rewritten after each day. `quiet`: no
    progress lines (which day starts, the steps of its run), only each day's decision; None: `ADRANK_QUIET`.
    `resume`: a day whose run succeeded is kept as it is, a day with an unfinished run resumes it (its window
    kept), the others run."""
    quiet = progress_quiet() if quiet is None else quiet
    config = plan.config
    if not resume:
        save_plan(plan, series_dir, config_source)
    series = DaySeries(replay_id=series_dir.name, config_name=config.name, config_hash=config_hash(config),
                       lookback_days=config.logs.lookback_days or 0, registry=config.promotion.local_registry, days=[])
    for index, window_end in enumerate(plan.window_ends, start=1):
        stamp = format_utc_seconds(window_end)
        run_id = f"{series_dir.name}-day{index}"
        earlier = _earlier_day(runs_dir / run_id, stamp) if resume else None
        if earlier is not None and earlier.status == "succeeded":
            record = earlier
            echo(f"day {index}/{len(plan.window_ends)}: finished in an earlier attempt (run {run_id})")
        else:
            if not quiet:
                resuming = " (resuming its run)" if earlier is not None else ""
                echo(f"day {index}/{len(plan.window_ends)}: window end {stamp}{resuming}")
            record = run_locally(config, runs_dir, config_source, run_id, window_end=stamp, quiet=quiet,
                                 resume=earlier is not None, pipeline="retraining")
        day = _day_result(index, stamp, runs_dir / record.id, record)
        series.days.append(day)
        write_reports(series, series_dir)
        decision = day.decision
        echo(f"day {index}: {'promoted' if decision.promoted else 'not promoted'} — {decision.reason}")
    return series


def _earlier_day(run_dir: Path, window_end: str) -> RunRecord | None:
    """The record of a day's run from an earlier attempt of the replay; None when the day never started."""
    if not (run_dir / RUN_FILE).exists():
        return None
    try:
        record = RunRecord.read(run_dir)
    except RunRecordError as error:
        raise ReplayError(f"day run {run_dir.name}: {error}") from None
    if record.window_end not in (None, window_end):
        raise ReplayError(f"day run {run_dir.name} read the window ending {record.window_end}, not the plan's "
                          f"{window_end}")
    return record


def _day_result(index: int, window_end: str, run_dir: Path, record) -> ReplayDay:
    decision_path = run_dir / DECISION_FILE
    if not decision_path.exists():
        raise ReplayError("promotion.enabled: must be true to replay daily retraining (no decision was taken)")
    decision = PromotionDecision.read(decision_path)
    job = last_job(run_dir)
    manifest = Manifest.read(step_outputs(job, "preprocess")["examples"])
    eval_split = manifest.splits["eval"]
    task = decision.primary_task
    warm = [s.warm_start for s in _run_summaries(job) if s.warm_start is not None]
    best = warm[0] if warm else None
    seconds = (record.finished - record.started).total_seconds() if record.finished else 0.0
    return ReplayDay(
        day=index, window_end=window_end, window_start=manifest.window.start if manifest.window else None, run_id=record.id,
        seconds=seconds, eval_examples=eval_split.examples, eval_positive_rate=eval_split.label_rates.get(task, 0.0),
        bayes_logloss=(eval_split.bayes_logloss or {}).get(task), warm_start=bool(warm),
        rows_copied=best.rows_copied if best else None,
        rows_new=best.rows_new if best else None,
        decision=decision,
    )


def _run_summaries(job: SpecRun) -> list[RunSummary]:
    """Every training run's summary, in the DAG's order."""
    return [RunSummary.read(step_outputs(job, task.display_name)["summary"]) for task in job.tasks
            if task.display_name.startswith("train ") and task.state in ("succeeded", "cached")]
