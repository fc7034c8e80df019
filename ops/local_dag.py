"""Run the DAG on this machine with the spec engine (`ops.spec_executor`) and keep what it made under
`runs/<run-id>/`.

`adrank run` and `adrank retrain` compile the pipeline for the local backend to `pipeline.yaml` in the run
directory and execute that spec with the engine `adrank run-spec` uses, the run directory as its root: one task
process at a time, each in its own process group that dies with this process. A resumed run (`--resume`) is
the same spec run again: the engine's execution cache, kept in the run directory and on for every task, hands
a task that finished in an earlier attempt (with the same inputs and its output files intact) the outputs it
left, without running it; a task that failed or was interrupted runs, a training task from the checkpoints its
earlier attempt left (`ops.resumed_training`).

Layout of a run directory:
  run.json        the run record (id, times, config hash, status, failed step and why, window end, attempts)
  .run.lock       flock'ed by the process running the run, for its whole life (`ops.run_lock`)
  config.yaml     the exact config the run used (after overrides)
  pipeline.yaml   the compiled pipeline spec the engine ran (local backend)
  pipeline.log    everything the steps printed, each step's lines after a `task started: <task>` line
  artifacts/      the pipeline root: every step's outputs (`0/<job>/<task>_<id>/<output>`)
  spec-runs/<job>/   one engine job per attempt: spec_run.json (task states), tasks/<task>/task.log
  spec-cache/     the run's execution cache (what a resume reuses)
  report.html, report.md, summary.json   copies of the report step's outputs
  *.png           the report's figures, which report.md links (report.html embeds them)
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TextIO

import yaml

from components.contracts.promotion_decision import DECISION_FILE, PromotionDecision
from components.preprocess.input_columns import check_log_inputs
from components.progress import QUIET_ENV, format_duration, progress_quiet
from components.report.promotion_section import promotion_markdown, with_promotion_section
from configs import AdrankConfig, config_hash
from configs.embedding_memory import check_local_embedding_memory
from configs.errors import ConfigError
from configs.slices import PreprocessStepConfig
from foundation.log_lines import LEVEL_ENV, record_fields
from ops.console_log import ConsoleFilter, from_step
from ops.resumed_training import restore_checkpoints
from ops.run_directories import MAX_RUNS_PER_SECOND, RunDirectoryTaken, TooManyRunsThisSecond, create_run_directory
from ops.run_history import is_run_id
from ops.run_lock import RunBusy, RunLock
from ops.run_record import RUN_FILE, RunRecord, RunRecordError
from ops.spec_executor.job_record import RUN_RECORD, SpecRun, TaskRecord
from ops.spec_executor.machines import local_device_kinds
from ops.spec_executor.pipeline_spec import load_pipeline_spec, planned_container_tasks
from ops.spec_executor.runner import RunSpecOptions, run_spec
from ops.spec_executor.task_events import TaskEvents

if TYPE_CHECKING:
    from pipelines.ranking import PipelineKind

REPORT_FILES = {"report_html": "report.html", "report_markdown": "report.md", "summary_json": "summary.json"}
REPORT_STEP, PROMOTION_STEP = "report", "promote model"  # display names (pipelines.ranking)
SPEC_FILE, LOG_FILE, ARTIFACTS_DIR, JOBS_DIR = "pipeline.yaml", "pipeline.log", "artifacts", "spec-runs"
TASK_STARTED = "task started: "  # pipeline.log: the line before a task's own lines
LOCAL_PROJECT, LOCAL_LOCATION = "local", "local"  # what the engine's Vertex placeholders read in a local run
_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Exit)\w*): (.+)$")
_SIGNALS = {128 + 1: "SIGHUP", 128 + 2: "SIGINT", 128 + 15: "SIGTERM"}
# A step line carrying one of these prefixes is meant for the person running adrank (components.progress)


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


class RunIdError(ValueError):
    """A --run-id that is taken or is not one plain directory name; a --resume of a run that cannot resume."""


def resumable_run(runs_dir: Path, run_id: str, config: AdrankConfig) -> Path:
    """The directory of a run that may resume: it exists, did not succeed, no live process runs it, and `config`
    is the config it ran with (`config.yaml` in it). The caller holds the run's lock (`ops.run_lock`)."""
    run_dir = existing_run_dir(runs_dir, run_id)
    try:
        record = RunRecord.read(run_dir)
    except RunRecordError as error:
        raise RunIdError(f"run {run_id} cannot resume: {error}") from None
    if record.status == "succeeded":
        raise RunIdError(f"run {run_id} already succeeded; its report: {(run_dir / 'report.html').resolve()}")
    if record.status == "running":
        raise RunIdError(f"run {run_id} is still running (pid {record.pid} on {record.host})")
    if config_hash(config) != record.config_hash:
        raise RunIdError(f"run {run_id} ran config {record.config_hash}, not {config_hash(config)}: a resumed run "
                         "keeps its config (it is read from the run's config.yaml)")
    return run_dir


def existing_run_dir(runs_dir: Path, run_id: str) -> Path:
    """`runs_dir/run_id` when it holds a run record, else a `RunIdError` naming the runs dir."""
    if not is_run_id(run_id) or not (runs_dir / run_id / RUN_FILE).exists():
        raise RunIdError(f"--resume {run_id!r}: no run '{run_id}' under {runs_dir} (see `adrank runs list`)")
    return runs_dir / run_id


def resumed_window_end(record: RunRecord, window_end: str) -> str:
    """The window a resumed run reads: the one its first attempt recorded ("" : every log). Asking for another is
    an error (the reused steps read that window). A record from before windows were recorded reads `window_end`."""
    recorded = record.window_end
    if recorded is None:
        return window_end
    if window_end and window_end != recorded:
        raise RunIdError(f"run {record.id} read the window ending {recorded or '(no window: every log)'}; a resume "
                         f"keeps it, not {window_end}")
    return recorded


def create_run_dir(runs_dir: Path, run_id: str | None, config: AdrankConfig) -> Path:
    """A new, empty run directory (`ops.run_directories`): a given id must be free; the default id is the UTC
    second and the config name."""
    if run_id is not None and not is_run_id(run_id):
        raise RunIdError(f"--run-id {run_id!r}: use letters, digits, '_', '-' and '.' (one directory under {runs_dir})")
    try:
        return create_run_directory(runs_dir, run_id, config.name)
    except RunDirectoryTaken:
        raise RunIdError(f"run id '{run_id}' is already taken under {runs_dir}; choose another --run-id") from None
    except TooManyRunsThisSecond as error:
        raise RunIdError(f"{MAX_RUNS_PER_SECOND} runs named '{error.base}*' under {runs_dir} this second; "
                         "pass --run-id") from None


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
    Only one process runs a run at a time (`ops.run_lock`): a second resume of it is a `RunIdError`. `pipeline`: the
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
    report = step_outputs(job, REPORT_STEP)
    for output, name in REPORT_FILES.items():
        shutil.copyfile(report[output], run_dir / name)
    for figure in report["report_markdown"].parent.glob("*.png"):
        shutil.copyfile(figure, run_dir / figure.name)  # the figures report.md links
    promotion = step_outputs(job, PROMOTION_STEP).get("promotion") if _has_step(job, PROMOTION_STEP) else None
    attach_promotion(run_dir, promotion)
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


def _has_step(job: SpecRun, display_name: str) -> bool:
    return any(t.display_name == display_name for t in job.tasks)


def step_outputs(job: SpecRun, display_name: str) -> dict[str, Path]:
    """The local paths of a finished step's output artifacts (by output name), from the engine's record."""
    task = next((t for t in job.tasks if t.display_name == display_name and t.state in ("succeeded", "cached")), None)
    if task is None:
        raise FileNotFoundError(f"the run has no finished step '{display_name}'")
    return {name: Path(artifacts[0]["uri"]) for name, artifacts in task.outputs.items()
            if name != "parameters" and artifacts}


def last_job(run_dir: Path) -> SpecRun:
    """The engine's record of the run's latest attempt (`spec-runs/<job>/spec_run.json`)."""
    import json

    records = sorted((run_dir / JOBS_DIR).glob(f"*/{RUN_RECORD}"), key=lambda p: p.stat().st_mtime)
    if not records:
        raise FileNotFoundError(f"{run_dir}: no engine record under {JOBS_DIR}/")
    data = json.loads(records[-1].read_text())
    tasks = [TaskRecord(**{k: v for k, v in t.items() if k in TaskRecord.__dataclass_fields__})
             for t in data.get("tasks", [])]
    fields = {k: v for k, v in data.items() if k in SpecRun.__dataclass_fields__ and k != "tasks"}
    return SpecRun(**fields, tasks=tasks)


def attach_promotion(run_dir: Path, source: Path | None) -> None:
    """The promotion step's decision beside the report (`promotion.json`), and its section in report.html/.md;
    nothing when the run had no promotion step (`source` None)."""
    if source is None:
        return
    decision = PromotionDecision.read(source)
    decision.write(run_dir / DECISION_FILE)
    html_path, markdown_path = run_dir / REPORT_FILES["report_html"], run_dir / REPORT_FILES["report_markdown"]
    html_path.write_text(with_promotion_section(html_path.read_text(), decision))
    markdown_path.write_text(markdown_path.read_text().rstrip("\n") + "\n\n" + promotion_markdown(decision))


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


STILL_RUNNING_SECONDS = 60.0


class RunConsole(TaskEvents):
    """What the terminal shows of a run, from the engine's task events: one line when a step starts and one when
    it ends (with its duration), what the running step logs at INFO (its progress) and WARNING, a "still running"
    line when the terminal has been silent for `still_running_seconds`. `quiet`: only warnings and failed steps
    reach the terminal. Every line a step prints goes to `log` (pipeline.log) after a `task started:` line.

    A step's log records reach the terminal through `logging` (`task_events.read_task_line`), rendered by the
    handler `running()` installs; the console never reads a step's text."""

    def __init__(self, terminal: TextIO, log: TextIO, quiet: bool = False,
                 still_running_seconds: float = STILL_RUNNING_SECONDS, clock: Callable[[], float] = time.monotonic):
        self._terminal, self._log, self._quiet = terminal, log, quiet
        self._still_running_seconds, self._clock = still_running_seconds, clock
        self._started: dict[str, float] = {}
        self._running: list[tuple[str, str]] = []  # (path, display name) of container steps now running
        self._last_terminal_line = clock()
        self._lock = threading.RLock()
        self.resumed_jobs: Path | None = None  # a resumed run's spec-runs/: where earlier checkpoints are
        self.reused: list[str] = []
        self.resumed_from_checkpoint: list[str] = []
        self.interrupted_step: str | None = None
        self._job_name = ""

    def say(self, line: str, progress: bool = True) -> None:
        with self._lock:
            if progress and self._quiet:
                return
            self._terminal.write(line + "\n")
            self._terminal.flush()
            self._last_terminal_line = self._clock()

    def engine_line(self, line: str) -> None:
        """The engine's own one line per finished task (`run-spec`'s output): the log only."""
        with self._lock:
            self._log.write(line + "\n")
            self._log.flush()

    # -- task events -----------------------------------------------------------------------------------------

    def task_started(self, path: str, display_name: str) -> None:
        with self._lock:
            self._log.write(f"{TASK_STARTED}{path} ({display_name})\n")
            self._log.flush()
            self._started[path] = self._clock()
            self._running.append((path, display_name))

    def before_start(self, path: str, executor_input: dict) -> None:
        self.say(f"  ▶ {self._name(path)}")
        if self.resumed_jobs is None:
            return
        job = Path(executor_input["outputs"]["outputFile"]).parent.parent.name
        restored = restore_checkpoints(self.resumed_jobs, job, path, executor_input)
        if restored is not None:
            self.resumed_from_checkpoint.append(self._name(path))
            self.say(f"      continues from the checkpoints of an earlier attempt ({restored})")

    def task_line(self, path: str, display_name: str, line: str, record: logging.LogRecord | None) -> None:
        with self._lock:
            self._log.write(line + "\n")
            self._log.flush()
        # A log record is rendered by the handler `running()` installs; any other line stays in the log.

    def task_ended(self, record: TaskRecord) -> None:
        with self._lock:
            self._running = [(p, n) for p, n in self._running if p != record.task]
            seconds = self._clock() - self._started.pop(record.task, self._clock())
            if record.state == "interrupted" and record.attempts:  # a container step, not the DAG around it
                self.interrupted_step = record.display_name
        if record.state == "cached":
            self.reused.append(record.display_name)
            self.say(f"  ✓ {record.display_name}: reused from an earlier attempt")
        elif record.state == "succeeded" and record.attempts:  # a container step (a DAG group has no attempts)
            self.say(f"  ✓ {record.display_name}: success ({seconds:.0f} s)")
        elif record.state in ("failed", "interrupted") and not record.reason.startswith("inner task"):
            self.say(f"  ✗ {record.display_name}: {record.state} ({seconds:.0f} s)", progress=False)

    def _name(self, path: str) -> str:
        return next((name for p, name in self._running if p == path), path)

    # -- records and the still-running line ------------------------------------------------------------------

    def render(self, record: logging.LogRecord) -> None:
        """A step's log record: WARNING and above as `  ! …` (also when quiet), INFO as a progress line."""
        if record.levelno >= logging.WARNING:
            self.say(f"  ! {record.getMessage()}", progress=False)
        elif record.levelno >= logging.INFO or record_fields(record).get("progress"):
            self.say(f"      {record.getMessage()}")

    def still_running(self) -> None:
        """`still running: <step> (m:ss)` when a step runs and the terminal has said nothing for a while."""
        with self._lock:
            now = self._clock()
            running = [(p, n) for p, n in self._running if p in self._started]
            if not running or now - self._last_terminal_line < self._still_running_seconds:
                return
            path, name = running[-1]
        self.say(f"  … still running: {name} ({format_duration(now - self._started[path])})")

    def running(self) -> _Running:
        """For the length of a run: the record handler on the root logger and the still-running timer."""
        return _Running(self)


class _StepRecords(logging.Handler):
    """Renders the log records the engine read from a step's output (they carry the step's name): adrank's from
    INFO (DEBUG with -v), other libraries' (TensorFlow, kfp, Beam) only from ERROR (WARNING with -v), as the
    command line's console does (`ops.console_log.ConsoleFilter`)."""

    def __init__(self, console: RunConsole):
        super().__init__(logging.DEBUG)
        self._console = console
        self.addFilter(from_step)
        self.addFilter(ConsoleFilter(min(logging.INFO, logging.getLogger().getEffectiveLevel())))

    def emit(self, record: logging.LogRecord) -> None:
        self._console.render(record)


class _Running:
    def __init__(self, console: RunConsole):
        self._console = console
        self._handler = _StepRecords(console)
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="adrank-still-running", daemon=True)

    def _tick(self) -> None:
        while not self._stop.wait(STILL_RUNNING_SECONDS / 6):
            self._console.still_running()

    def __enter__(self) -> RunConsole:
        logging.getLogger().addHandler(self._handler)
        self._ticker.start()
        return self._console

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._ticker.join()
        logging.getLogger().removeHandler(self._handler)
