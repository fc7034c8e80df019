"""Run the DAG on this machine with `kfp.local` and keep what it made under `runs/<run-id>/`.

Layout of a run directory:
  run.json        the run record (id, times, config hash, status, failed step and why, window end, attempts)
  .run.lock       flock'ed by the process running the run, for its whole life (`ops.run_lock`)
  config.yaml     the exact config the run used (after overrides)
  pipeline.log    everything the steps printed
  artifacts/      the kfp.local pipeline root (every step's outputs), always under the absolute runs dir
  report.html, report.md, summary.json   copies of the report step's outputs
  *.png           the report's figures, which report.md links (report.html embeds them)
"""

from __future__ import annotations

import datetime as dt
import io
import os
import re
import shutil
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import yaml

from components.progress import PROGRESS_PREFIX, QUIET_ENV, format_duration, progress_quiet
from components.registry.promotion_rule import DECISION_FILE, PromotionDecision
from components.report.promotion_section import promotion_markdown, with_promotion_section
from configs import AdrankConfig, config_hash
from configs.embedding_memory import check_local_embedding_memory
from configs.errors import ConfigError
from ops.run_directories import MAX_RUNS_PER_SECOND, RunDirectoryTaken, TooManyRunsThisSecond, create_run_directory
from ops.run_history import is_run_id
from ops.run_lock import RunBusy, RunLock
from ops.run_record import RUN_FILE, RunRecord, RunRecordError
from ops.step_processes import step_processes
from ops.step_reuse import StepReuse

if TYPE_CHECKING:
    from pipelines.ranking import PipelineKind

REPORT_FILES = {"report_html": "report.html", "report_markdown": "report.md", "summary_json": "summary.json"}
_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Exit)\w*): (.+)$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class LocalRunFailed(RuntimeError):
    def __init__(self, record: RunRecord):
        super().__init__(f"step '{record.failed_step}' failed: {record.failure_reason}")
        self.record = record

    def describe(self, runs_dir: Path) -> str:
        """What the CLI says: the run, the step that failed and why, and where its logs are."""
        record = self.record
        return (f"run {record.id} failed at step '{record.failed_step}': {record.failure_reason}\n"
                f"  logs: {Path(runs_dir) / record.id / 'pipeline.log'}")


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
    runs_dir = Path(os.path.abspath(runs_dir))  # once: every path of the run (kfp's pipeline root too) is absolute
    reuse = None
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
        reuse = StepReuse(run_dir / "artifacts", current_attempts=set())
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
        return _run_dag(config, run_dir, record, reuse, window_end, quiet)


def _locked(run_dir: Path) -> RunLock:
    try:
        return RunLock(run_dir)
    except RunBusy as error:
        raise RunIdError(str(error)) from None


def _run_dag(config: AdrankConfig, run_dir: Path, record: RunRecord, reuse: StepReuse | None, window_end: str,
             quiet: bool) -> RunRecord:
    """The DAG of one run in `run_dir` (absolute, locked by this process), its record kept up to date."""
    from kfp import local

    from pipelines.ranking import create_pipeline, training_plan

    run_id = record.id
    dag = create_pipeline(config, "local", window_end=window_end, pipeline=record.pipeline)
    display_names = {key: task.task_info.name for key, task in dag.pipeline_spec.root.dag.tasks.items()}
    log_path = run_dir / "pipeline.log"
    progress = _StepProgress()
    try:
        print(f"run {run_id}: {len(display_names)} steps, logs in {log_path}")
        for skipped in training_plan(config, "local", record.pipeline).skipped:
            print(f"skipped target {skipped.name} ({skipped.kind}): {skipped.reason}")
        with step_processes(run_id, reuse) as temp_root, _step_environment(quiet), \
                _progress_output(log_path, display_names, progress, quiet):
            workspace = temp_root / "kfp-workspace"
            workspace.mkdir()
            local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(run_dir / "artifacts"),
                       workspace_root=str(workspace))
            dag()
    except KeyboardInterrupt as interruption:  # Ctrl-C or SIGTERM: the steps' processes are already gone
        record.status = "interrupted"
        record.failure_reason = f"interrupted ({getattr(interruption, 'signal_name', 'SIGINT')})"
        record.failed_step = next((display_names.get(k, k) for k in progress.unfinished()), None)
        record.finished = dt.datetime.now(dt.timezone.utc)
        record.write(run_dir)
        raise LocalRunInterrupted(record) from interruption
    except Exception as error:  # kfp.local raises RuntimeError naming the failed task key
        record.status = "failed"
        record.failed_step = failed_step(str(error), display_names, progress)
        record.failure_reason = _last_error_line(log_path) or _exception_line(error)
        record.finished = dt.datetime.now(dt.timezone.utc)
        record.write(run_dir)
        raise LocalRunFailed(record) from error

    if reuse is not None and (reuse.reused or reuse.resumed_from_checkpoint):
        print(f"resumed: reused {', '.join(display_names.get(k, k) for k in reuse.reused) or 'no step'}"
              + (f"; continued from checkpoints: {', '.join(display_names.get(k, k) for k in reuse.resumed_from_checkpoint)}"
                 if reuse.resumed_from_checkpoint else ""))
    for output, name in REPORT_FILES.items():
        source = _find_output(run_dir / "artifacts", output)
        shutil.copyfile(source, run_dir / name)
    for figure in _find_output(run_dir / "artifacts", "report_markdown").parent.glob("*.png"):
        shutil.copyfile(figure, run_dir / figure.name)  # the figures report.md links
    attach_promotion(run_dir)
    record.status = "succeeded"
    record.finished = dt.datetime.now(dt.timezone.utc)
    record.attach_summary(run_dir / "summary.json")
    record.write(run_dir)
    return record


def attach_promotion(run_dir: Path) -> None:
    """The promotion step's decision beside the report (`promotion.json`), and its section in report.html/.md."""

    try:
        source = _find_output(run_dir / "artifacts", "promotion", step="promote-step")
    except FileNotFoundError:
        return  # promotion disabled
    decision = PromotionDecision.read(source)
    decision.write(run_dir / DECISION_FILE)
    html_path, markdown_path = run_dir / REPORT_FILES["report_html"], run_dir / REPORT_FILES["report_markdown"]
    html_path.write_text(with_promotion_section(html_path.read_text(), decision))
    markdown_path.write_text(markdown_path.read_text().rstrip("\n") + "\n\n" + promotion_markdown(decision))


def _find_output(artifacts: Path, output_name: str, step: str = "report") -> Path:
    matches = sorted(p for p in artifacts.glob(f"*/{step}/{output_name}") if p.is_file())
    if not matches:
        raise FileNotFoundError(f"the {step} step wrote no '{output_name}' under {artifacts}")
    return matches[-1]


class _StepProgress:
    """Which tasks kfp.local started and how each ended, as read from its log lines."""

    def __init__(self):
        self.started: list[str] = []
        self.finished: dict[str, str] = {}

    def unsuccessful(self) -> list[str]:
        return [key for key, status in self.finished.items() if status != "SUCCESS"]

    def unfinished(self) -> list[str]:
        return [key for key in self.started if key not in self.finished]


def failed_step(message: str, display_names: dict[str, str], progress: _StepProgress) -> str:
    """The display name of the step that failed: the task kfp.local names, else the one that ended unsuccessfully,
    else the one that was running; an error before any step started is the DAG's own (`pipeline set-up`)."""
    match = re.search(r"Inner task failed: '?([\w-]+)", _ANSI.sub("", message))
    candidates = ([match.group(1)] if match else []) + progress.unsuccessful() + progress.unfinished()
    candidates = [key for key in candidates if key in display_names] or candidates
    if candidates:
        return display_names.get(candidates[0], candidates[0])
    next_steps = [name for key, name in display_names.items() if key not in progress.finished]
    return f"pipeline set-up, before '{next_steps[0]}'" if next_steps else "pipeline set-up"


def _exception_line(error: BaseException) -> str:
    """`KeyError: 'logs'`, not just `'logs'`."""
    text = _ANSI.sub("", str(error)).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _last_error_line(log_path: Path) -> str | None:
    """The exception line that ends the last traceback a step printed (e.g. `TooManyInvalidRecords: ...`)."""
    if not log_path.exists():
        return None
    lines = [_ANSI.sub("", line) for line in log_path.read_text(errors="replace").splitlines()]
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


@contextmanager
def _step_environment(quiet: bool) -> Iterator[None]:
    """The steps inherit this environment: TensorFlow's C++ start-up chatter kept out of the progress log, and with
    `quiet` no progress lines from the steps (`ADRANK_QUIET`)."""
    wanted = {"TF_CPP_MIN_LOG_LEVEL": "2"} | ({QUIET_ENV: "1"} if quiet else {})
    saved = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_TASK_STARTED = re.compile(r"Executing task '([\w-]+)'")
# A step line carrying this prefix is meant for the person running adrank (components.progress.CONSOLE_WARNING,
# ops.step_processes.CONSOLE_NOTE).
_CONSOLE_WARNING = re.compile(r"adrank (?:warning|note): (.+)$")
_STEP_PROGRESS = re.compile(re.escape(PROGRESS_PREFIX) + r"(.+)$")
_TASK_FINISHED = re.compile(r"Task '([\w-]+)' finished with status (\w+)")
STILL_RUNNING_SECONDS = 60.0


class _RunConsole:
    """What the terminal shows of a run, from the lines of the steps' log: one line when a step starts and one
    when it ends (with its duration), the progress lines of the running step (`components.progress`), a "still
    running" line when the terminal has been silent for `still_running_seconds`, and the warnings steps address
    to the user. `quiet`: only warnings and failed steps reach the terminal."""

    def __init__(self, terminal, display_names: dict[str, str], progress: _StepProgress, quiet: bool = False,
                 still_running_seconds: float = STILL_RUNNING_SECONDS, clock: Callable[[], float] = time.monotonic):
        self._terminal, self._names, self._progress_seen = terminal, display_names, progress
        self._quiet, self._still_running_seconds, self._clock = quiet, still_running_seconds, clock
        self._started: dict[str, float] = {}
        self._last_terminal_line = clock()
        self._lock = threading.RLock()

    def line(self, line: str) -> None:
        with self._lock:
            self._line(_ANSI.sub("", line))
            self._terminal.flush()

    def _say(self, line: str, progress: bool = True) -> None:
        if progress and self._quiet:
            return
        self._terminal.write(line + "\n")
        self._last_terminal_line = self._clock()

    def _line(self, line: str) -> None:
        warning = _CONSOLE_WARNING.search(line)
        if warning:
            self._say(f"  ! {warning.group(1)}", progress=False)
        step_progress = _STEP_PROGRESS.search(line)
        if step_progress:
            self._say(f"      {step_progress.group(1)}")
        started = _TASK_STARTED.search(line)
        if started:
            key = started.group(1)
            self._started[key] = self._clock()
            self._progress_seen.started.append(key)
            self._say(f"  ▶ {self._names.get(key, key)}")
        finished = _TASK_FINISHED.search(line)
        if finished:
            key, status = finished.groups()
            self._progress_seen.finished[key] = status
            seconds = self._clock() - self._started.get(key, self._clock())
            mark = "✓" if status == "SUCCESS" else "✗"
            self._say(f"  {mark} {self._names.get(key, key)}: {status.lower()} ({seconds:.0f} s)",
                      progress=status == "SUCCESS")

    def still_running(self) -> None:
        """`still running: <step> (m:ss)` when a step runs and the terminal has said nothing for a while."""
        with self._lock:
            now = self._clock()
            running = [key for key in self._progress_seen.unfinished() if key in self._started]
            if not running or now - self._last_terminal_line < self._still_running_seconds:
                return
            key = running[-1]
            self._say(f"  … still running: {self._names.get(key, key)} ({format_duration(now - self._started[key])})")
            self._terminal.flush()

    def flush(self) -> None:
        with self._lock:
            self._terminal.flush()


class _ProgressStream(io.TextIOBase):
    """One of this process's output streams during a run: everything goes to the log file, each whole line to
    the run's console."""

    def __init__(self, log, console: _RunConsole):
        self._log, self._console = log, console
        self._pending = ""

    def write(self, text: str) -> int:
        self._log.write(text)
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._console.line(line)
        return len(text)

    def flush(self) -> None:
        self._log.flush()
        self._console.flush()


@contextmanager
def _progress_output(path: Path, display_names: dict[str, str], progress: _StepProgress,
                     quiet: bool = False) -> Iterator[None]:
    """kfp.local prints each step's output through this process's stdout and its own status to stderr; a timer
    thread says which step is still running when the terminal has been silent for a while."""
    with path.open("a") as log:
        saved_out, saved_err = sys.stdout, sys.stderr
        console = _RunConsole(saved_out, display_names, progress, quiet)
        sys.stdout, sys.stderr = _ProgressStream(log, console), _ProgressStream(log, console)
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(STILL_RUNNING_SECONDS / 6):
                console.still_running()

        ticker = threading.Thread(target=tick, name="adrank-still-running", daemon=True)
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join()
            sys.stdout, sys.stderr = saved_out, saved_err
