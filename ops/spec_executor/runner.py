"""Run a compiled pipeline spec on this machine the way Vertex runs it: the DAG walk and each task's run.

    load spec ─► for each task of a DAG in order (one at a time):
        upstream not all succeeded ─► not run (says which upstream task and why), unless it is an exit
                                      handler (`ALL_UPSTREAM_TASKS_COMPLETED`): that runs after failures too
        a condition (dsl.If/Elif/Else) that is false on its inputs ─► not triggered (the branch not taken)
        a DAG component ─► walk its inner DAG with its inputs (nested pipelines, the ExitHandler group, each
                           item of a ParallelFor, a condition's branch); its outputs are the inner tasks' outputs
                           `dag.outputs` names (dsl.OneOf: the branch that ran; dsl.Collected: every iteration's)
        a container ─► build executor input ─► cache hit? take the earlier execution's outputs (`cached`)
            ─► the e-mail notification? record it (notification_email)
            ─► stand-ins (Dataflow → DirectRunner, Model Registry → local registry) ─► resolve placeholders
            ─► custom-job launcher? payload → CustomJob → one process per replica
              └─ otherwise ─► the container's command in the project's environment
            ─► failed and the retry policy allows? wait the backoff, run again (same executor input)
            ─► read executor_output.json and output parameter files ─► the outputs consumers get

Tasks run one at a time (Vertex runs independent tasks side by side); a failure stops the walk and leaves
the rest not run, as a failed Vertex pipeline schedules nothing more — except exit handlers, which then run
with the final status of the group they guard. A task whose machines this computer does not have (TPU; more
GPUs than present) is skipped with the reason, and what consumes its outputs is not run.

A task process is handed its artifacts' `gs://` URIs as the local paths they map to (`storage.for_task`); what
it reports back is recorded as `gs://` again. Every task process gets `TMPDIR` pointing at `ROOT/spec-runs/<job>/tmp` (kfp's `mktemp -d`, Beam's and
TensorFlow's temp files), removed when the run ends however it ends (after a kill -9 of the executor, by the next
run under the same root). One executor runs a job at a time (`job_lock`: a second run-spec of the same root and job
id is refused naming the first's pid), so what a job removes is its own. Each container task's executor input is kept in its task directory
(`executor_input.json`).

The pipeline root is a `gs://` URI (a compiled Vertex spec; `ROOT` stands in for the buckets) or a local
directory under `ROOT` (the local backend, `adrank run`): then artifact URIs are plain paths, which KFP's
executor uses as they are. `RunSpecOptions.events` (`task_events.TaskEvents`) hears each task start, print and
end; `environment` is added to every task's environment.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from foundation.atomic_write import write_json_atomically
from foundation.gcs_mount import GCS_ROOT_ENV
from foundation.utc_time import format_utc_seconds
from ops.spec_executor import custom_job, dataflow, machines, model_registry, notification_email, vertex_only
from ops.spec_executor.conditions import ConditionError
from ops.spec_executor.execution_cache import ExecutionCache, cache_key
from ops.spec_executor.executor_input import (
    DagScope,
    MissingInput,
    build_executor_input,
    collected_outputs,
    dag_outputs,
    input_artifacts,
    input_parameters,
    loop_items,
    read_task_outputs,
)
from ops.spec_executor.job_context import PipelineJobContext
from ops.spec_executor.job_lock import JOB_LOCK_FILE, ExclusiveLock, JobBusy, LockHeld, lock_job
from ops.spec_executor.job_record import DONE, RUN_RECORD, SpecRun, TaskRecord, left_running, mark_interrupted
from ops.spec_executor.pipeline_spec import Dag, PipelineSpec, SpecTask, UnsupportedSpec, load_pipeline_spec
from ops.spec_executor.placeholders import BrokenPlaceholder, PlaceholderResolver
from ops.spec_executor.processes import ProcessTable
from ops.spec_executor.storage import CloudStorageRoot, NotCloudStorage
from ops.spec_executor.task_code import task_code_digest
from ops.spec_executor.task_events import TaskEvents, read_task_line

__all__ = ["RUN_RECORD", "JobBusy", "RunSpecOptions", "SpecRun", "TaskRecord", "run_spec"]

REPO_ROOT = Path(__file__).resolve().parents[2]
TASK_STARTUP = Path(__file__).resolve().parent / "task_startup"
VERTEX_ONLY_VARIABLES = ("TF_CONFIG", "CLUSTER_SPEC", "AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR", "AIP_TENSORBOARD_LOG_DIR")
TASK_ERRORS = (BrokenPlaceholder, MissingInput, custom_job.CustomJobError, dataflow.DataflowArgsError,
               NotCloudStorage, notification_email.BadNotification, ConditionError)
EXECUTOR_INPUT_FILE = "executor_input.json"  # beside a task's logs: what it was started with
FINAL_STATES = {"succeeded": "SUCCEEDED", "cached": "SUCCEEDED", "checked": "SUCCEEDED", "failed": "FAILED",
                "interrupted": "CANCELLED", "not_triggered": "CANCELLED"}
ENDED_WELL = ("succeeded", "cached", "checked", "not_triggered")  # what lets a downstream task start
WOULD_NOT_RUN = "would not run: "  # --check: a task checked although a task it needs would not end well
ITEM_LABEL = "display_name"  # a dict loop item's field that names its iteration in display names
CacheChoice = Literal["on", "off", "default"]


@dataclass
class RunSpecOptions:
    root: Path
    project: str
    location: str
    pipeline_root: str | None = None  # default: the spec's defaultPipelineRoot
    create_time: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))
    schedule_time: dt.datetime | None = None
    project_number: str = "0"
    parameters: dict = field(default_factory=dict)
    direct_running_mode: str = "multi_processing"
    direct_num_workers: int = 0
    check_only: bool = False  # resolve every task, start nothing
    cache: CacheChoice = "default"  # as PipelineJob(enable_caching=True|False|None): on, off, each task's option
    max_backoff_seconds: float = 60.0  # a retry waits its policy's backoff, never longer than this here
    sleep: Callable[[float], None] = time.sleep  # how retries wait (tests pass a recorder)
    events: TaskEvents = field(default_factory=TaskEvents)  # told of each task's start, output lines and end
    environment: dict[str, str] = field(default_factory=dict)  # added to every task's environment
    verify_cached_files: bool = False  # a cache hit only while its output files are intact (execution_cache)


def run_spec(spec_path: Path, options: RunSpecOptions, report: Callable[[str], None] = print) -> SpecRun:
    spec = load_pipeline_spec(spec_path)
    pipeline_root = options.pipeline_root or spec.pipeline_root
    root = options.root.resolve()
    if not pipeline_root or not (pipeline_root.startswith("gs://") or _under(pipeline_root, root)):
        raise UnsupportedSpec("the pipeline root must be a gs:// URI or a directory under the root (the spec has "
                              "none; pass one)")
    context = PipelineJobContext(spec.name, options.project, options.location, pipeline_root, options.create_time,
                                 options.schedule_time, options.project_number)
    job_dir = root / "spec-runs" / context.job_name
    with lock_job(job_dir, root):  # one executor per job: a second is refused here, before it touches anything
        _clean_up_killed_jobs(root, job_dir, report)
        run = SpecRun(spec.name, context.job_name, context.job_uuid, format_utc_seconds(options.create_time),
                      str(root))
        return _JobWalk(spec, options, context, CloudStorageRoot(root), run, job_dir, report).run()


def _clean_up_killed_jobs(root: Path, own_job_dir: Path, report: Callable[[str], None]) -> None:
    """Jobs under `root` whose executor was killed outright (their record still says `running`): recorded as
    interrupted and their `tmp` removed, each while holding that job's lock, so a job some live executor holds
    (its own record's pid notwithstanding) is never touched. This job's own lock is held already."""
    for stale in left_running(root):
        job_dir = stale.parent
        try:
            lock = contextlib.nullcontext() if job_dir == own_job_dir else ExclusiveLock(job_dir / JOB_LOCK_FILE)
        except LockHeld:
            continue
        with lock:
            mark_interrupted(stale)
            shutil.rmtree(job_dir / "tmp", ignore_errors=True)  # what its killed tasks left in their TMPDIR
        report(f"note: {job_dir.name} was left running by an executor that is gone; recorded as interrupted")


def _under(path: str, root: Path) -> bool:
    return Path(path).is_absolute() and Path(path).resolve().is_relative_to(root)


@dataclass
class _JobWalk:
    """One pipeline job: the walk over its DAGs, each task's run, and the record kept as it goes.

        run            the root DAG walked; interrupted or not, processes ended, `tmp` removed, record saved
        walk           each task of a DAG in order: run_or_hold (run it, or say what holds it back), task_done
        run_task       a DAG task (run_dag: its inner DAG, once per loop item) or a container (run_container)
        run_container  executor input ─► notify | take_cached | prepare ─► execute ─► keep_outputs
        with_retries   an attempt (process_attempt, custom_job_attempt) until it succeeds or the policy is spent
    """

    spec: PipelineSpec
    options: RunSpecOptions
    context: PipelineJobContext
    storage: CloudStorageRoot
    record: SpecRun
    run_dir: Path
    report: Callable[[str], None]
    processes: ProcessTable = field(default_factory=ProcessTable)
    failed_at: str | None = None
    dag_paths: set[str] = field(default_factory=set)
    display_names: dict[str, str] = field(default_factory=dict)  # task path → display name, for output lines

    @property
    def cloud(self) -> bool:
        """A `gs://` pipeline root (a compiled Vertex spec): tasks get local paths for its URIs (storage)."""
        return self.context.pipeline_root.startswith("gs://")

    @functools.cached_property
    def task_code(self) -> str:
        """The digest of the code every task of this job runs (`task_code`), computed once, when a key needs it."""
        return task_code_digest(REPO_ROOT)

    @functools.cached_property
    def cache(self) -> ExecutionCache:
        """The execution cache under the root, for this pipeline's name."""
        return ExecutionCache(self.storage.root, self.spec.name)

    @property
    def tmp_dir(self) -> Path:
        return self.run_dir / "tmp"

    def run(self) -> SpecRun:
        """The job: its processes' output routed to the events, the root DAG walked with the pipeline's parameters,
        and whatever ends the walk, its processes ended, its `tmp` removed and its record saved."""
        parameters = {name: definition["defaultValue"] for name, definition in self.spec.root_parameters.items()
                      if "defaultValue" in definition} | self.options.parameters
        self.processes.on_line = self.task_output_line
        previous = _end_processes_on_signals(self.processes)
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.walk(self.spec.root, DagScope(parameters=parameters), prefix="")
            self.record.finished = True
        except BaseException:  # SIGTERM/SIGINT arrive as SystemExit; anything else ends the run too
            self.record_interruption()
            raise
        finally:
            self.processes.close()
            _restore_signals(previous)
            shutil.rmtree(self.tmp_dir, ignore_errors=True)
            self.save()
        return self.record

    def task_output_line(self, path: str, line: str) -> None:
        """One line a task's process printed, routed (`task_events.read_task_line`) under its display name."""
        read_task_line(self.options.events, path, self.display_names.get(path, path), line)

    def record_interruption(self) -> None:
        """The walk was stopped: the job and every task still running are recorded as interrupted."""
        self.record.interrupted = True
        for task in self.record.tasks:
            if task.state == "running":
                task.state, task.reason = "interrupted", "the executor was stopped while the task ran"
                self.report(_line(task))
                self.options.events.task_ended(task)
        self.report(f"{self.record.job_name}: interrupted; record: {self.run_dir / RUN_RECORD}")

    def save(self) -> None:
        self.record.task_uuids = dict(self.context.task_uuids)
        self.record.write(self.run_dir / RUN_RECORD)

    # -- the walk -------------------------------------------------------------------------------------------

    def walk(self, dag: Dag, scope: DagScope, prefix: str, label: str = "") -> list[TaskRecord]:
        """Run the tasks of `dag` in order; returns their records (those of nested tasks are in the run record too).
        `label`: what names the loop iteration the DAG runs in, added to its tasks' display names. Each task:
        a record for it, then run it or say what holds it back (`run_or_hold`), then its end told (`task_done`)."""
        records: dict[str, TaskRecord] = {}
        for task in dag.order():
            path = prefix + task.name
            record = TaskRecord(path, f"{task.display_name} · {label}" if label else task.display_name, "not_run")
            records[task.name] = record
            self.record.tasks.append(record)
            self.run_or_hold(task, path, record, scope, label, records)
            self.task_done(task, path, record, scope)
        return list(records.values())

    def run_or_hold(self, task: SpecTask, path: str, record: TaskRecord, scope: DagScope, label: str,
                    records: dict[str, TaskRecord]) -> None:
        """Run the task, or leave it not run with the reason: the pipeline failed earlier, an upstream task did not
        end well, or its condition is false. An exit handler runs whatever happened before it."""
        check_only = self.options.check_only
        blocking = [name for name in sorted(task.upstream) if records[name].state not in ENDED_WELL]
        if task.runs_after_failures:
            self.run_task(task, path, record, scope)
        elif self.failed_at and not check_only:
            record.reason = f"the pipeline failed at '{self.failed_at}'"
        elif blocking and (not check_only or any(records[name].state in ("failed", "not_run") for name in blocking)):
            record.reason = "; ".join(f"upstream '{name}' {records[name].state}" +
                                      (f" ({_summary(records[name].reason)})" if records[name].reason else "")
                                      for name in blocking)
        elif task.condition is not None and not self.triggered(task, path, record, scope):
            pass  # not triggered (the condition is false), or failed evaluating it: the record says which
        else:
            self.run_task(task, path, record, scope, label)
            if record.state == "checked":
                _name_what_holds_back(task, record, records, blocking)

    def task_done(self, task: SpecTask, path: str, record: TaskRecord, scope: DagScope) -> None:
        """The task's final status for an exit handler, its line, its `task_ended` event, and the record saved."""
        scope.final_status[task.name] = self.final_status(task.name, path, record)
        self.report(_line(record))
        self.options.events.task_ended(record)
        self.save()

    def triggered(self, task: SpecTask, path: str, record: TaskRecord, scope: DagScope) -> bool:
        """Whether the task's `dsl.If` condition holds on its input values (as the driver evaluates
        `triggerPolicy.condition` before the task starts). False: the record is `not_triggered`, or `failed`
        naming the expression when it cannot be evaluated on these inputs."""
        assert task.condition is not None
        try:
            parameters = input_parameters(task, self.context.pipeline_placeholders(path), scope)
            if task.condition.holds(parameters):
                return True
        except TASK_ERRORS as error:
            record.state, record.reason = "failed", str(error)
            if self.failed_at is None:
                self.failed_at = path
            return False
        record.state = "not_triggered"
        record.reason = f"condition {task.condition.expression} is false"
        return False

    def run_task(self, task: SpecTask, path: str, record: TaskRecord, scope: DagScope, label: str = "") -> None:
        started = time.perf_counter()
        record.state = "running"
        self.display_names[path] = record.display_name
        self.options.events.task_started(path, record.display_name)
        self.save()
        if task.dag is not None:
            self.dag_paths.add(path)
            self.run_dag(task, path, record, scope, label)
        else:
            self.run_container(task, path, record, scope)
        record.seconds = round(time.perf_counter() - started, 1)
        if record.state == "failed" and self.failed_at is None:
            self.failed_at = path

    def run_dag(self, task: SpecTask, path: str, record: TaskRecord, scope: DagScope, label: str = "") -> None:
        """A nested pipeline, an ExitHandler group, a condition's branch or a ParallelFor: its inner DAG with
        inputs mapped from this DAG (once per item for a loop, each iteration's tasks under
        `<loop>/iteration-<i>/`, their display names followed by the item's `display_name` field when it has
        one)."""
        assert task.dag is not None
        try:
            given = (task.loop.item_input,) if task.loop else ()
            parameters = input_parameters(task, self.context.pipeline_placeholders(path), scope, given)
            artifacts = input_artifacts(task, scope)
            items = loop_items(task, parameters) if task.loop else None
        except TASK_ERRORS as error:
            record.state, record.reason = "failed", str(error)
            return
        inner_records: list[TaskRecord] = []
        iterations: list[DagScope] = []
        for index, item in enumerate(items if items is not None else [None]):
            inner = DagScope(parameters=dict(parameters), artifacts=artifacts)
            prefix, inner_label = path + "/", label
            if task.loop is not None:
                inner.parameters[task.loop.item_input] = item
                prefix += f"iteration-{index}/"
                inner_label = " · ".join(part for part in (label, _item_label(item)) if part)
            iterations.append(inner)
            inner_records += self.walk(task.dag, inner, prefix=prefix, label=inner_label)
            if self.failed_at and not self.options.check_only:
                break  # a failed iteration stops the pipeline: later iterations are not started
        states = {r.state for r in inner_records}
        failed = [r for r in inner_records if r.state == "failed"]
        not_done = [r for r in inner_records if r.state in ("skipped", "not_run")]
        if failed:
            record.state = "failed"
            record.reason = f"inner task '{failed[0].task}' failed: {_summary(failed[0].reason)}"
            return
        if not_done and not self.options.check_only:
            record.state = "skipped"
            record.reason = "; ".join(f"inner task '{r.task}' {r.state}" +
                                      (f" ({_summary(r.reason)})" if r.reason else "") for r in not_done)
            return
        record.state = "checked" if self.options.check_only and not states <= {*DONE, "not_triggered"} \
            else "succeeded"
        held = [r for r in inner_records if r in not_done or r.reason.startswith(WOULD_NOT_RUN)]
        if held and self.options.check_only:  # checked, but on Vertex as here it would not end well
            first = held[0]
            record.reason = first.reason if first.reason.startswith(WOULD_NOT_RUN) else \
                f"{WOULD_NOT_RUN}inner task '{first.task}' {first.state}"
        try:
            outputs = collected_outputs(task, iterations) if task.loop else dag_outputs(task, iterations[0])
        except TASK_ERRORS as error:
            record.state, record.reason = "failed", str(error)
            return
        scope.outputs[task.name] = outputs
        record.outputs = {**outputs.artifacts, "parameters": outputs.parameters}
        if task.loop is not None:
            record.stand_ins.append(f"{len(iterations)} iteration(s), one after another (Vertex runs them side by "
                                    "side)")

    def final_status(self, name: str, path: str, record: TaskRecord) -> dict:
        """The `PipelineTaskFinalStatus` an exit handler receives for this task (kfp's executor reads `state`,
        `error.code`, `error.message`, `pipelineJobResourceName`, `pipelineTaskName`). A task not run here
        (skipped, not run) reads FAILED: Vertex has no such end state (assumed)."""
        status: dict = {"state": FINAL_STATES.get(record.state, "FAILED"),
                        "pipelineJobResourceName": self.context.resource_name, "pipelineTaskName": name}
        if status["state"] != "SUCCEEDED":
            status["error"] = {"message": f"{path} {record.state}" +
                               (f": {_summary(record.reason)}" if record.reason else "")}
        return status

    # -- one container task ------------------------------------------------------------------------------------

    def uses_cache(self, task: SpecTask) -> bool:
        choice = self.options.cache
        return not self.options.check_only and (choice == "on" or (choice == "default" and task.enable_cache))

    def run_container(self, task: SpecTask, path: str, record: TaskRecord, scope: DagScope) -> None:
        """One container task, in named steps: its executor input; the e-mail notification recorded, or a cache hit
        taken; else the stand-ins and placeholders resolved (`prepare`), the task run (`execute`), and its outputs
        read for its consumers and the cache (`keep_outputs`)."""
        assert task.container is not None
        task_dir = self.run_dir / "tasks" / path
        try:
            executor_input = build_executor_input(task, path, self.context, self.storage, scope, task_dir)
            if notification_email.is_notification_email(task.container):
                self.notify(path, record, executor_input)
                return
            # paths under the root in their portable form: a moved or copied root keeps its keys
            key = cache_key(self.spec.name, task, self.storage.portable(executor_input), self.task_code) \
                if self.uses_cache(task) else None
            if key is not None and self.take_cached(key, task, record, scope):
                return
            command, args, env = self.prepare(task, path, record, executor_input, task_dir)
            if not self.execute(task, path, record, scope, executor_input, command, args, env, task_dir):
                return
        except TASK_ERRORS as error:
            record.state, record.reason = "failed", str(error)
            return
        self.keep_outputs(task, path, record, scope, executor_input, key)

    def take_cached(self, key: str, task: SpecTask, record: TaskRecord, scope: DagScope) -> bool:
        """Whether an earlier execution with this key left outputs to reuse; if so the task is `cached` with them."""
        hit = self.cache.lookup(key, self.cached_file_check())
        if hit is None:
            return False
        record.state, record.cached_from = "cached", {"job": hit.job_name, "task": hit.task}
        scope.outputs[task.name] = hit.outputs
        record.outputs = {**hit.outputs.artifacts, "parameters": hit.outputs.parameters}
        return True

    def prepare(self, task: SpecTask, path: str, record: TaskRecord, executor_input: dict,
                task_dir: Path) -> tuple[list[str], list[str], dict[str, str]]:
        """The stand-ins applied (Dataflow, Model Registry), the command and args with their placeholders resolved,
        the task's environment; unless checking, the executor input kept in the task directory and `before_start`
        told. Returns (command, args, environment)."""
        assert task.container is not None
        _apply_stand_ins(task, executor_input, record, self.storage, self.options)
        resolver = PlaceholderResolver(
            task.name, self.storage.for_task(executor_input), self.context.pipeline_placeholders(path),
            task.component.get("inputDefinitions", {}).get("parameters", {}),
            lambda uri: str(self.storage.local_path(uri)),
        )
        command = resolver.resolve_command(task.container.get("command", []))
        args = resolver.resolve_command(task.container.get("args", []))
        env = _task_environment(self.storage, self.tmp_dir, self.cloud) | self.options.environment
        if not self.options.check_only:
            task_dir.mkdir(parents=True, exist_ok=True)
            write_json_atomically(task_dir / EXECUTOR_INPUT_FILE, self.storage.portable(executor_input), indent=1)
            self.options.events.before_start(path, executor_input)
        return command, args, env

    def execute(self, task: SpecTask, path: str, record: TaskRecord, scope: DagScope, executor_input: dict,
                command: list[str], args: list[str], env: dict[str, str], task_dir: Path) -> bool:
        """Run the task as what it is: a Vertex-only step (a stand-in), GCPC's custom-job launcher (a process per
        replica, or skipped when this computer lacks its machines), or the container's command; with its retry
        policy, or only `checked` with `check_only`. Whether it ended with outputs to read."""
        assert task.container is not None
        stand_in = vertex_only.vertex_only_stand_in(task.container)
        if stand_in is not None:
            record.state = "checked" if self.options.check_only else "succeeded"
            record.stand_ins.append(stand_in)
        elif custom_job.is_custom_job_launcher(task.container):
            call = custom_job.parse_launcher_args(task.name, args)
            job_spec = custom_job.job_spec_from_payload(task.name, call.payload)
            custom_job.validate_custom_job(task.name, job_spec)
            absent = machines.why_not_here(job_spec["job_spec"]["worker_pool_specs"])
            if absent:
                record.state, record.reason = "skipped", absent
                if self.options.check_only:  # its consumers are checked against the outputs it declares
                    scope.outputs[task.name] = read_task_outputs(executor_input)
                return False
            if self.options.check_only:
                record.state = "checked"
            else:
                self.with_retries(task, path, record, executor_input,
                                  self.custom_job_attempt(task, call, env, task_dir))
        elif self.options.check_only:
            record.state = "checked"
        else:
            self.with_retries(task, path, record, executor_input,
                              self.process_attempt(path, command + args, env, task_dir))
        return record.state != "failed"

    def keep_outputs(self, task: SpecTask, path: str, record: TaskRecord, scope: DagScope, executor_input: dict,
                     key: str | None) -> None:
        """What the task left (executor_output.json, output parameter files) as its consumers' inputs and its
        record's outputs; a succeeded task's outputs in the cache under `key`. A checked task wrote no output
        parameters: its consumers get a stand-in value."""
        outputs = read_task_outputs(executor_input, lambda uri: self.storage.from_task(uri, self.cloud))
        if self.options.check_only:
            for name in task.component.get("outputDefinitions", {}).get("parameters", {}):
                outputs.parameters.setdefault(name, f"checked-{task.name}-{name}".lower())
        scope.outputs[task.name] = outputs
        record.outputs = {**outputs.artifacts, "parameters": outputs.parameters}
        if key is not None and record.state == "succeeded":
            self.cache.record(key, self.context.job_name, path, outputs, self.cached_file_check())

    def cached_file_check(self) -> Callable[[str], Path] | None:
        """How the cache finds an artifact's files to check them (`verify_cached_files`), else None."""
        return self.storage.local_path if self.options.verify_cached_files else None

    def custom_job_attempt(self, task: SpecTask, call: custom_job.LauncherCall, env: dict[str, str],
                           task_dir: Path) -> Callable[[int], str | None]:
        """One attempt of a custom-job task: the launcher creates the whole job again from the same payload."""
        def attempt(number: int) -> str | None:
            replicas = task_dir / ("replicas" if number == 1 else f"replicas-attempt{number}")
            jobs = custom_job.LocalCustomJobs(task.name, self.storage, self.processes, env, self.storage.root,
                                              replicas)
            try:
                custom_job.run_launcher(task.name, call, jobs)
            except custom_job.CustomJobError as error:
                return str(error)
            return None

        return attempt

    def process_attempt(self, path: str, argv: list[str], env: dict[str, str],
                        task_dir: Path) -> Callable[[int], str | None]:
        """One attempt of a container task: its resolved command, in its own process group and log."""
        def attempt(number: int) -> str | None:
            log = task_dir / ("task.log" if number == 1 else f"task.attempt{number}.log")
            started = self.processes.start(path, argv, env, self.storage.root, log)
            code = started.exit_code()
            self.processes.kill(started)  # whatever it left running in its group
            if code != 0:
                return f"exited with {code}; last lines of {started.log_path}:\n{started.log_tail()}"
            return None

        return attempt

    def with_retries(self, task: SpecTask, path: str, record: TaskRecord, executor_input: dict,
                     attempt: Callable[[int], str | None]) -> None:
        """Run `attempt` until it succeeds or the task's retry policy is spent. Every attempt gets the same
        executor input (so the same output URIs and, for a custom job, the same baseOutputDirectory: a
        retried training job finds its checkpoints under the same AIP_CHECKPOINT_DIR)."""
        allowed = 1 + (task.retry.max_retry_count if task.retry else 0)
        for number in range(1, allowed + 1):
            record.attempts = number
            problem = attempt(number)
            if problem is None:
                record.state = "succeeded"
                return
            if number == allowed:
                record.state = "failed"
                record.reason = problem if allowed == 1 else f"attempt {number} of {allowed}: {problem}"
                return
            assert task.retry is not None
            wait = min(task.retry.backoff_before(number), self.options.max_backoff_seconds)
            self.report(f"retrying {record.display_name} ({path}): attempt {number} of {allowed} failed "
                        f"({_summary(problem)}); attempt {number + 1} in {wait:g} s")
            _forget_outputs(executor_input)
            self.options.sleep(wait)

    def notify(self, path: str, record: TaskRecord, executor_input: dict) -> None:
        """The e-mail notification task: checked, and recorded instead of sent."""
        failed = [{"task": t.task, "reason": _summary(t.reason)}
                  for t in self.record.tasks if t.state == "failed" and t.task not in self.dag_paths]
        notice = notification_email.notification(path, executor_input, failed)
        if self.options.check_only:
            record.state = "checked"
            return
        written = notification_email.write_notification(notice, self.run_dir / "notifications")
        self.record.notifications.append(notice)
        record.state = "succeeded"
        record.attempts = 1
        record.stand_ins.append(f"VertexNotificationEmailOp: not sent (only Vertex sends e-mail); recorded the "
                                f"{notice['state']} notification to {', '.join(notice['recipients'])} in {written}")


def _name_what_holds_back(task: SpecTask, record: TaskRecord, records: dict[str, TaskRecord],
                           blocking: list[str]) -> None:
    """--check: a task checked against the outputs of upstream tasks that would not end well says which (its own
    blocking upstream tasks, and what held back an upstream task that was checked so)."""
    held_back = [name for name in sorted(task.upstream) if records[name].reason.startswith(WOULD_NOT_RUN)]
    if blocking or held_back:
        record.reason = WOULD_NOT_RUN + ", ".join(
            [f"upstream '{name}' {records[name].state}" for name in blocking]
            + [records[name].reason[len(WOULD_NOT_RUN):] for name in held_back])


def _item_label(item) -> str:
    """What names a loop iteration in its tasks' display names: a dict item's `display_name` field (adrank's
    training runs: `cpu · run 1`); other items name none (the task path has the iteration's index)."""
    if isinstance(item, dict) and isinstance(item.get(ITEM_LABEL), str):
        return item[ITEM_LABEL]
    return ""


def _forget_outputs(executor_input: dict) -> None:
    """Before a retry: remove what the failed attempt reported (executor_output.json, output parameter files),
    so the outputs read afterwards are the successful attempt's. Artifact directories (checkpoints) stay."""
    outputs = executor_input["outputs"]
    for path in [outputs["outputFile"], *(spec["outputFile"] for spec in outputs.get("parameters", {}).values())]:
        Path(path).unlink(missing_ok=True)


def _apply_stand_ins(task: SpecTask, executor_input: dict, record: TaskRecord, storage: CloudStorageRoot,
                     options: RunSpecOptions) -> None:
    """Replace what needs a Google service by its stand-in here, and say so in the task's record."""
    assert task.container is not None
    values = executor_input["inputs"]["parameterValues"]
    for name, value in list(values.items()):
        argv = dataflow.beam_argv(value)
        if argv is not None:
            dataflow.check_gcp_resources_output(task.name, executor_input)
            local = dataflow.direct_runner_argv(task.name, argv, storage, options.direct_running_mode,
                                                options.direct_num_workers)
            values[name] = json.dumps(local)
            record.stand_ins.append(f"{name}: DataflowRunner checked, DirectRunner runs it ({' '.join(local)})")
    if model_registry.is_promotion(task.container):
        registry = storage.root / "model-registry"
        replaced = model_registry.local_registry_parameters(values, registry)
        if replaced is not None:
            values.update(replaced)
            record.stand_ins.append(f"Vertex Model Registry → local registry {registry}")


def _task_environment(storage: CloudStorageRoot, tmp_dir: Path | None = None, gcs: bool = True) -> dict[str, str]:
    """The project's environment for a task: this Python first on PATH (the commands call `python3`), the
    project and the start-up hook (task_startup: die with the executor) on PYTHONPATH, the run's own TMPDIR,
    with a `gs://` root `ADRANK_SPEC_GCS_ROOT` (where adrank's own code finds a `/gcs/` path:
    foundation.gcs_mount), and none of the custom-job variables of the calling shell."""
    env = {k: v for k, v in os.environ.items() if k not in VERTEX_ONLY_VARIABLES}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TASK_STARTUP), str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env["ADRANK_SPEC_TASK"] = "1"  # task_startup: die with the executor
    if gcs:  # adrank's /gcs/ paths → the root (a local pipeline root has plain paths)
        env[GCS_ROOT_ENV] = storage.fuse_prefix()
    else:
        env.pop(GCS_ROOT_ENV, None)
    env["PYTHONUNBUFFERED"] = "1"
    if tmp_dir is not None:
        env["TMPDIR"] = str(tmp_dir)
    return env


def _summary(reason: str) -> str:
    """A reason on one line: its first line, and when a log tail follows, the tail's last line (the error)."""
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    if not lines:
        return ""
    if len(lines) == 1 or lines[-1] in lines[0]:
        return lines[0]
    return f"{lines[0]} … {lines[-1]}"


def _line(record: TaskRecord) -> str:
    head = f"{record.state:<9} {record.display_name} ({record.task})"
    if record.seconds:
        head += f" {record.seconds:.1f} s"
    if record.attempts > 1:
        head += f" after {record.attempts} attempts"
    if record.cached_from:
        head += f": reused {record.cached_from['task']} of {record.cached_from['job']}"
    if record.reason:
        head += f": {_summary(record.reason)}"
    return head


def _end_processes_on_signals(processes: ProcessTable) -> dict:
    def stop(signum, frame):
        processes.stop_on_signal(signum)

    previous = {}
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            previous[sig] = signal.signal(sig, stop)
        except ValueError:  # not the main thread: the caller owns signal handling
            pass
    return previous


def _restore_signals(previous: dict) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
