"""Run a compiled pipeline spec on this machine the way Vertex runs it: the DAG walk and each task's run.

    load spec ─► for each task in DAG order (one at a time):
        upstream not all succeeded ─► not run (says which upstream task and why)
        build executor input ─► stand-ins (Dataflow → DirectRunner, Model Registry → local registry)
        ─► resolve placeholders ─► custom-job launcher? ─► payload → CustomJob → one process per replica
                                  └─ otherwise ─► the container's command in the project's environment
        ─► read executor_output.json and output parameter files ─► the outputs consumers get

Tasks run one at a time (Vertex runs independent tasks side by side); a failure stops the walk and leaves
the rest not run, as a failed Vertex pipeline schedules nothing more. A task whose machines this computer
does not have (TPU; more GPUs than present) is skipped with the reason, and what consumes its outputs is not
run: the report needs every training run's summary, on Vertex as here. Caching is not applied: every task runs.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Literal

from components.logs.records import format_utc_seconds
from ops.spec_executor import custom_job, dataflow, machines, model_registry, vertex_only
from ops.spec_executor.executor_input import (
    MissingInput, TaskOutputs, build_executor_input, read_task_outputs,
)
from ops.spec_executor.job_context import PipelineJobContext
from ops.spec_executor.pipeline_spec import SpecTask, UnsupportedSpec, load_pipeline_spec
from ops.spec_executor.placeholders import BrokenPlaceholder, PlaceholderResolver
from ops.spec_executor.processes import ProcessTable
from ops.spec_executor.storage import CloudStorageRoot, NotCloudStorage

REPO_ROOT = Path(__file__).resolve().parents[2]
TASK_STARTUP = Path(__file__).resolve().parent / "task_startup"
RUN_RECORD = "spec_run.json"
VERTEX_ONLY_VARIABLES = ("TF_CONFIG", "CLUSTER_SPEC", "AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR", "AIP_TENSORBOARD_LOG_DIR")
TaskState = Literal["succeeded", "failed", "skipped", "not_run", "checked"]
TASK_ERRORS = (BrokenPlaceholder, MissingInput, custom_job.CustomJobError, dataflow.DataflowArgsError,
               NotCloudStorage)


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


@dataclass
class TaskRecord:
    task: str
    display_name: str
    state: TaskState
    reason: str = ""
    seconds: float = 0.0
    stand_ins: list[str] = field(default_factory=list)
    outputs: dict = field(default_factory=dict)  # artifact name → [{uri, metadata}]; parameters under "parameters"


@dataclass
class SpecRun:
    pipeline: str
    job_name: str
    job_uuid: str
    create_time: str
    root: str
    tasks: list[TaskRecord] = field(default_factory=list)
    task_uuids: dict[str, str] = field(default_factory=dict)  # what {{$.pipeline_task_uuid}} was per task

    @property
    def status(self) -> str:
        states = {t.state for t in self.tasks}
        if "failed" in states:
            return "failed"
        if states & {"skipped", "not_run"}:
            return "incomplete"
        return "checked" if states == {"checked"} else "succeeded"

    def task(self, name: str) -> TaskRecord:
        return next(t for t in self.tasks if t.task == name)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**asdict(self), "status": self.status}, indent=2))


def run_spec(spec_path: Path, options: RunSpecOptions, report: Callable[[str], None] = print) -> SpecRun:
    spec = load_pipeline_spec(spec_path)
    pipeline_root = options.pipeline_root or spec.pipeline_root
    if not pipeline_root or not pipeline_root.startswith("gs://"):
        raise UnsupportedSpec("the pipeline root must be a gs:// URI (the spec has none; pass one)")
    root = options.root.resolve()
    storage = CloudStorageRoot(root)
    context = PipelineJobContext(spec.name, options.project, options.location, pipeline_root, options.create_time,
                                 options.schedule_time, options.project_number)
    run = SpecRun(spec.name, context.job_name, context.job_uuid, format_utc_seconds(options.create_time), str(root))
    run_dir = root / "spec-runs" / context.job_name
    parameters = {name: definition["defaultValue"] for name, definition in spec.root_parameters.items()
                  if "defaultValue" in definition} | options.parameters
    processes = ProcessTable()
    previous = _end_processes_on_signals(processes)
    try:
        outputs: dict[str, TaskOutputs] = {}
        failed: str | None = None
        for task in spec.order():
            record = TaskRecord(task.name, task.display_name, "not_run")
            run.tasks.append(record)
            blocking = [name for name in sorted(task.upstream) if run.task(name).state not in ("succeeded", "checked")]
            if failed and not options.check_only:
                record.reason = f"the pipeline failed at '{failed}'"
            elif blocking and (not options.check_only or any(
                    run.task(name).state in ("failed", "not_run") for name in blocking)):
                record.reason = "; ".join(f"upstream '{name}' {run.task(name).state}" +
                                          (f" ({run.task(name).reason.splitlines()[0]})" if run.task(name).reason
                                           else "") for name in blocking)
            else:
                started = time.perf_counter()
                _run_task(task, record, context, storage, outputs, parameters, run_dir, options, processes)
                record.seconds = round(time.perf_counter() - started, 1)
                if blocking and record.state == "checked":  # checked against the outputs skipped tasks declare
                    record.reason = "would not run: " + ", ".join(
                        f"upstream '{name}' {run.task(name).state}" for name in blocking)
                if record.state == "failed":
                    failed = task.name
            report(_line(record))
            run.task_uuids = dict(context.task_uuids)
            run.write(run_dir / RUN_RECORD)
    finally:
        processes.close()
        _restore_signals(previous)
    run.write(run_dir / RUN_RECORD)
    return run


def _run_task(task: SpecTask, record: TaskRecord, context: PipelineJobContext, storage: CloudStorageRoot,
              outputs: dict[str, TaskOutputs], parameters: dict, run_dir: Path, options: RunSpecOptions,
              processes: ProcessTable) -> None:
    task_dir = run_dir / "tasks" / task.name
    try:
        executor_input = build_executor_input(task, context, storage, outputs, parameters, task_dir)
        _apply_stand_ins(task, executor_input, record, storage, options)
        resolver = PlaceholderResolver(
            task.name, executor_input, context.pipeline_placeholders(task.name),
            task.component.get("inputDefinitions", {}).get("parameters", {}),
            lambda uri: str(storage.local_path(uri)),
        )
        command = resolver.resolve_command(task.container.get("command", []))
        args = resolver.resolve_command(task.container.get("args", []))
        env = _task_environment(storage)
        stand_in = vertex_only.vertex_only_stand_in(task.container)
        if stand_in is not None:
            record.state = "checked" if options.check_only else "succeeded"
            record.stand_ins.append(stand_in)
        elif custom_job.is_custom_job_launcher(task.container):
            call = custom_job.parse_launcher_args(task.name, args)
            job_spec = custom_job.job_spec_from_payload(task.name, call.payload)
            custom_job.validate_custom_job(task.name, job_spec)
            absent = machines.why_not_here(job_spec["job_spec"]["worker_pool_specs"])
            if absent:
                record.state, record.reason = "skipped", absent
                if options.check_only:  # its consumers are checked against the outputs it declares
                    outputs[task.name] = read_task_outputs(executor_input)
                return
            if options.check_only:
                record.state = "checked"
            else:
                jobs = custom_job.LocalCustomJobs(task.name, storage, processes, env, storage.root,
                                                  task_dir / "replicas")
                custom_job.run_launcher(task.name, call, jobs)
                record.state = "succeeded"
        elif options.check_only:
            record.state = "checked"
        else:
            started = processes.start(task.name, command + args, env, storage.root, task_dir / "task.log")
            code = started.process.wait()
            processes.kill(started)  # whatever it left running in its group
            if code != 0:
                record.state = "failed"
                record.reason = f"exited with {code}; last lines of {started.log_path}:\n{started.log_tail()}"
                return
            record.state = "succeeded"
    except TASK_ERRORS as error:
        record.state, record.reason = "failed", str(error)
        return
    outputs[task.name] = read_task_outputs(executor_input)
    record.outputs = {**outputs[task.name].artifacts, "parameters": outputs[task.name].parameters}


def _apply_stand_ins(task: SpecTask, executor_input: dict, record: TaskRecord, storage: CloudStorageRoot,
                     options: RunSpecOptions) -> None:
    """Replace what needs a Google service by its stand-in here, and say so in the task's record."""
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


def _task_environment(storage: CloudStorageRoot) -> dict[str, str]:
    """The project's environment for a task: this Python first on PATH (the commands call `python3`), the
    project and the /gcs hook on PYTHONPATH, and none of the custom-job variables of the calling shell."""
    env = {k: v for k, v in os.environ.items() if k not in VERTEX_ONLY_VARIABLES}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TASK_STARTUP), str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env["ADRANK_SPEC_GCS_ROOT"] = storage.fuse_prefix()
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _line(record: TaskRecord) -> str:
    head = f"{record.state:<9} {record.display_name} ({record.task})"
    if record.seconds:
        head += f" {record.seconds:.1f} s"
    if record.reason:
        head += f": {record.reason.splitlines()[0]}"
    return head


def _end_processes_on_signals(processes: ProcessTable) -> dict:
    def stop(signum, frame):
        processes.close()
        raise SystemExit(128 + signum)

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
