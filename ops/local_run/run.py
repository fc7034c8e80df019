"""Run the DAG on this machine with the spec engine (`ops.spec_executor`) and keep what it made under
`runs/<run-id>/`.

`adrank run` and `adrank retrain` compile the pipeline for the local backend to `pipeline.yaml` in the run
directory and execute that spec with the engine `adrank run-spec` uses, the run directory as its root: one task
process at a time, each in its own process group that dies with this process. A resumed run (`--resume`) is
the same spec run again: the engine's execution cache, kept in the run directory and on for every task, hands
a task that finished in an earlier attempt (with the same inputs and its output files intact) the outputs it
left, without running it; a task that failed or was interrupted runs, a training task from the checkpoints its
earlier attempt left (`ops.local_run.resume`).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from components.preprocess.input_columns import check_log_inputs
from components.progress import QUIET_ENV, progress_quiet
from configs import AdrankConfig, config_hash
from configs.embedding_memory import check_local_embedding_memory
from configs.errors import ConfigError
from configs.slices import PreprocessStepConfig
from foundation.log_lines import LEVEL_ENV
from ops.local_run.console import RunConsole
from ops.local_run.directories import (
    ARTIFACTS_DIR,
    JOBS_DIR,
    LOG_FILE,
    SPEC_FILE,
    RunIdError,
    create_run_dir,
    existing_run_dir,
)
from ops.local_run.lock import RunBusy, RunLock
from ops.local_run.record import RunRecord
from ops.local_run.report_files import keep_report
from ops.local_run.resume import resumable_run, resumed_window_end
from ops.spec_executor.job_record import SpecRun, TaskRecord
from ops.spec_executor.machines import local_device_kinds
from ops.spec_executor.pipeline_spec import load_pipeline_spec, planned_container_tasks
from ops.spec_executor.runner import RunSpecOptions, run_spec

if TYPE_CHECKING:
    from pipelines.ranking import PipelineKind

LOCAL_PROJECT, LOCAL_LOCATION = "local", "local"  # what the engine's Vertex placeholders read in a local run
_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Exit)\w*): (.+)$")
_SIGNALS = {128 + 1: "SIGHUP", 128 + 2: "SIGINT", 128 + 15: "SIGTERM"}


class LocalRunFailed(RuntimeError):
    def __init__(self, record: RunRecord, log_path: Path | None = None):
        super().__init__(f"step '{record.failed_step}' failed: {record.failure_reason}")
        self.record = record
        self.log_path = log_path

    def describe(self, runs_dir: Path) -> str:
        """What the CLI says: the run, the step that failed and why, and where its logs are."""
        record = self.record
        logs = f"{Path(runs_dir) / record.id / LOG_FILE}" + (f"; the step's own: {self.log_path}"
                                                             if self.log_path else "")
        return f"run {record.id} failed at step '{record.failed_step}': {record.failure_reason}\n  logs: {logs}"

class LocalRunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped the run; its steps' processes are gone and `run.json` says `interrupted`."""

    def __init__(self, record: RunRecord):
        super().__init__(record.failure_reason)
        self.record = record

def check_log_files(config: AdrankConfig) -> None:
    """The user's own CSV and Parquet logs have the shape and the columns the config says, checked in seconds before
    any step starts (preprocess checks them again, for the compiled spec run elsewhere); a `ConfigError` naming the
    file and the setting that fixes it."""
    logs = config.logs
    if logs.source != "files" or logs.format not in ("csv", "parquet") or logs.impressions is None:
        return
    try:
        check_log_inputs(PreprocessStepConfig.of(config), logs.impressions, logs.engagements)
    except ValueError as error:  # MalformedCsv, MissingInputColumns, an unreadable header
        raise ConfigError(f"logs: {error}") from None

def run_locally(config: AdrankConfig, runs_dir: Path, config_source: str, run_id: str | None = None, *,
                window_end: str = "", resume: bool = False, quiet: bool | None = None,
                pipeline: PipelineKind = "benchmark") -> RunRecord:
    """Run every step of the DAG in subprocesses of this interpreter; raise `LocalRunFailed` naming the step.

    `window_end` (RFC 3339): read only the `logs.lookback_days` before it, as a scheduled run does (`adrank
    retrain`); "" reads every log. `resume`: run `run_id` again in its own directory (see `resumable_run`): steps
    that finished in an earlier attempt and whose outputs are intact are reused, an interrupted training step
    continues from its checkpoints, and the run reads the window and runs the pipeline its first attempt recorded.
    Only one process runs a run at a time (`ops.local_run.lock`): a second resume of it is a `RunIdError`. `pipeline`: the
    benchmark (`adrank run`) or the retraining pipeline (`adrank retrain`, one day). `quiet`: the terminal shows no
    progress (steps starting and ending, their progress lines), only warnings, failures and what the run made;
    None: quiet when `ADRANK_QUIET` is set."""
    quiet = progress_quiet() if quiet is None else quiet
    try:
        check_local_embedding_memory(config)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    check_log_files(config)
    runs_dir = Path(os.path.abspath(runs_dir))  # once: every path of the run (the pipeline root too) is absolute
    if resume:
        if run_id is None:
            raise RunIdError("resuming needs the id of the run")
        lock = _locked(existing_run_dir(runs_dir, run_id))
        try:
            run_dir = resumable_run(runs_dir, run_id, config)
            record = RunRecord.read(run_dir)
            window_end = resumed_window_end(record, window_end)
        except BaseException:
            lock.release()
            raise
        record.status, record.failed_step, record.failure_reason, record.finished = "running", None, None, None
        record.attempts += 1
    else:
        run_dir = create_run_dir(runs_dir, run_id, config)
        lock = _locked(run_dir)
        run_id = run_dir.name
        (run_dir / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
        record = RunRecord(
            id=run_id, config_name=config.name, config_source=config_source, config_hash=config_hash(config),
            started=dt.datetime.now(dt.timezone.utc), status="running", window_end=window_end, pipeline=pipeline,
        )
    with lock:
        record.claim_process()
        record.write(run_dir)
        return _run_dag(config, run_dir, record, resume, window_end, quiet)

def _locked(run_dir: Path) -> RunLock:
    try:
        return RunLock(run_dir)
    except RunBusy as error:
        raise RunIdError(str(error)) from None

def _run_dag(config: AdrankConfig, run_dir: Path, record: RunRecord, resume: bool, window_end: str,
             quiet: bool) -> RunRecord:
    """The DAG of one run in `run_dir` (absolute, locked by this process), its record kept up to date."""
    from kfp import compiler

    from pipelines.ranking import create_pipeline, training_plan

    log_path = run_dir / LOG_FILE
    spec_path = run_dir / SPEC_FILE
    create_time = _free_job_time(run_dir)
    job: SpecRun | None = None
    with log_path.open("a") as log:
        console = RunConsole(sys.stdout, log, quiet)
        console.resumed_jobs = run_dir / JOBS_DIR if resume else None
        options = RunSpecOptions(
            root=run_dir, project=LOCAL_PROJECT, location=LOCAL_LOCATION, pipeline_root=str(run_dir / ARTIFACTS_DIR),
            create_time=create_time, cache="on", verify_cached_files=True, events=console,
            environment=_step_environment(quiet),
        )
        try:
            devices = local_device_kinds()  # nvidia-smi: this process imports no TensorFlow (a quiet console)
            dag = create_pipeline(config, "local", devices, window_end=window_end, pipeline=record.pipeline)
            compiler.Compiler().compile(dag, str(spec_path))
            console.say(f"run {record.id}: {_container_count(spec_path)} steps, logs in {log_path}", progress=False)
            for skipped in training_plan(config, "local", record.pipeline, devices).skipped:
                console.say(f"skipped target {skipped.name} ({skipped.kind}): {skipped.reason}", progress=False)
            with console.running():
                job = run_spec(spec_path, options, report=console.engine_line)
        except (KeyboardInterrupt, SystemExit) as interruption:  # the engine ended its tasks' processes first
            code = interruption.code if isinstance(interruption, SystemExit) else 128 + 2
            record.status = "interrupted"
            record.failure_reason = f"interrupted ({_SIGNALS.get(code if isinstance(code, int) else 0, 'SIGINT')})"
            record.failed_step = console.interrupted_step
            record.finished = dt.datetime.now(dt.timezone.utc)
            record.write(run_dir)
            raise LocalRunInterrupted(record) from interruption
        except Exception as error:  # noqa: BLE001  the DAG could not be built, compiled or read: no step ran
            return _failed(run_dir, record, "pipeline set-up", _exception_line(error), None, error)

    assert job is not None  # run_spec returned
    if job.status != "succeeded":
        task = _failed_task(job)
        task_log = _task_log(run_dir / JOBS_DIR / job.job_name, task) if task else None
        reason = (_last_error_line(task_log) if task_log else None) or _summary(task.reason if task else job.status)
        return _failed(run_dir, record, task.display_name if task else "pipeline", reason, task_log, None)
    if resume and (console.reused or console.resumed_from_checkpoint):
        console.say(f"resumed: reused {', '.join(console.reused) or 'no step'}"
                    + (f"; continued from checkpoints: {', '.join(console.resumed_from_checkpoint)}"
                       if console.resumed_from_checkpoint else ""), progress=False)
    keep_report(run_dir, job)
    record.status = "succeeded"
    record.finished = dt.datetime.now(dt.timezone.utc)
    record.attach_summary(run_dir / "summary.json")
    record.write(run_dir)
    return record

def _failed(run_dir: Path, record: RunRecord, step: str, reason: str, task_log: Path | None,
            cause: BaseException | None) -> RunRecord:
    record.status, record.failed_step, record.failure_reason = "failed", step, reason
    record.finished = dt.datetime.now(dt.timezone.utc)
    record.write(run_dir)
    raise LocalRunFailed(record, task_log) from cause

def _free_job_time(run_dir: Path) -> dt.datetime:
    """Now, or a later second when an attempt of this run already has a job of that second (job names are
    `<pipeline>-<YYYYmmddHHMMSS>` of the create time)."""
    moment = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    while list((run_dir / JOBS_DIR).glob(f"*-{moment:%Y%m%d%H%M%S}")):
        moment += dt.timedelta(seconds=1)
    return moment

def _container_count(spec_path: Path) -> int:
    return planned_container_tasks(load_pipeline_spec(spec_path))

def _step_environment(quiet: bool) -> dict[str, str]:
    """What every step's environment adds: TensorFlow's C++ start-up chatter kept out of the log, the level the
    steps log at (`ADRANK_LOG_LEVEL`), and with `quiet` no progress lines from the steps (`ADRANK_QUIET`)."""
    level = "WARNING" if quiet else os.environ.get(LEVEL_ENV, "").strip() or "INFO"  # -v: the CLI set DEBUG
    return {"TF_CPP_MIN_LOG_LEVEL": "2", LEVEL_ENV: level} | ({QUIET_ENV: "1"} if quiet else {})

def _failed_task(job: SpecRun) -> TaskRecord | None:
    """The container task that failed (or was left not run or skipped), not the DAG around it."""
    candidates = [t for t in job.tasks if t.state in ("failed", "interrupted") and not t.reason.startswith("inner task")]
    candidates += [t for t in job.tasks if t.state in ("skipped", "not_run")]
    return candidates[0] if candidates else None

def _task_log(job_dir: Path, task: TaskRecord) -> Path | None:
    logs = sorted((job_dir / "tasks" / task.task).glob("task*.log"), key=lambda p: p.stat().st_mtime)
    return logs[-1] if logs else None

def _exception_line(error: BaseException) -> str:
    """`KeyError: 'logs'`, not just `'logs'`."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__

def _summary(reason: str) -> str:
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    return lines[0] if lines else reason

def _last_error_line(log_path: Path) -> str | None:
    """The exception line that ends the last Python traceback in a step's log (e.g. `TooManyInvalidRecords:
    ...`), else the last line that looks like one."""
    if not log_path.exists():
        return None
    lines = log_path.read_text(errors="replace").splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == "Traceback (most recent call last):"]
    if starts:
        base = _indent(lines[starts[-1]])
        for line in lines[starts[-1] + 1:]:
            if line.strip() and _indent(line) <= base:
                name, sep, message = line.strip().partition(": ")
                return f"{name.rsplit('.', 1)[-1]}{sep}{message}"
    found = None
    for line in lines:
        match = _ERROR_LINE.match(line.strip())
        if match:
            found = f"{match.group(1)}: {match.group(2)}"
    return found

def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
