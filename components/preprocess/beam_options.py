"""Beam pipeline options from config: DirectRunner locally, DataflowRunner at scale.

`beam_pipeline_args` is pure (config in, argv out) so the compile step and tests can assert on it.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from typing import Any, TypeVar

from apache_beam.options.pipeline_options import PipelineOptions

from configs.schema import AdrankConfig
from configs.slices import PreprocessStepConfig
from foundation.utc_time import format_utc_seconds

JOB_NAME_FLAG = "--job_name="
LOCAL_RUNNER = "FnApiRunner"  # the DirectRunner's batch runner (`runner: DirectRunner` in the config)


def dataflow_job_name(pipeline_name: str, run_id: str = "") -> str:
    """`<pipeline>-preprocess[-<run id>]` in Dataflow's alphabet ([a-z][-a-z0-9]*[a-z0-9]): Dataflow refuses
    a second active job of one name, and a job's logs are found by it, so each pipeline run gets its own."""
    raw = "-".join(part for part in (pipeline_name, "preprocess", run_id) if part).lower()
    return re.sub(r"[^a-z0-9-]+", "-", raw).strip("-")[:200].rstrip("-")


def launch_suffix(now: dt.datetime | None = None) -> str:
    """A Dataflow job name suffix made when the preprocess step starts: its UTC second and 4 random hex digits.
    (Not the pipeline job id: as a step input it would keep Vertex's cache from ever matching.)"""
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{now.astimezone(dt.timezone.utc):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def run_window_end(window_end: str, scheduled_time: str, vertex: bool, now: dt.datetime | None = None) -> str:
    """Where this run's window ends (RFC 3339), "" for no window (read every log).

    `window_end` when given (a local replay's day; on Vertex what `adrank submit` passes). Else on Vertex the
    run's scheduled time; a run nobody scheduled (started from the console, or a submit that passed no window end)
    may get it empty or unresolved, and then the window ends when this step starts (≈ the run's create time).
    Locally, without a window end, "" (read every log)."""
    if window_end:
        return window_end
    if not vertex:
        return ""
    if scheduled_time and not scheduled_time.startswith("{{"):
        return scheduled_time
    return format_utc_seconds(now or dt.datetime.now(dt.timezone.utc))


def with_run_job_name(args: list[str], pipeline_name: str, run_id: str) -> list[str]:
    """`args` with the Dataflow job name made unique by `run_id` (`launch_suffix`, made at run time)."""
    if not run_id:
        return list(args)
    return [f"{JOB_NAME_FLAG}{dataflow_job_name(pipeline_name, run_id)}" if arg.startswith(JOB_NAME_FLAG) else arg
            for arg in args]


def beam_pipeline_args(config: PreprocessStepConfig, job_name: str | None = None,
                       dataflow_kms_key: str | None = None) -> list[str]:
    """The Beam argv. On Dataflow the job name is `<name>-preprocess` here; the preprocess step appends a suffix
    made at run time (`with_run_job_name`, `launch_suffix`). With a CMEK key (`dataflow_kms_key`: the DAG passes
    `vertex.encryption_spec_key_name` when it compiles this argv), Dataflow encrypts its state and temp data
    with it (`--dataflow_kms_key`)."""
    pre = config.preprocess
    if pre.runner == "DirectRunner":
        # Beam's DirectRunner tries its Prism runner first (downloading it where the machine can, falling back where
        # not): FnApiRunner is the DirectRunner's own batch runner, what the preprocess figures are measured on
        args = [f"--runner={LOCAL_RUNNER}", f"--direct_running_mode={pre.direct_running_mode}"]
        if pre.direct_running_mode == "in_memory":
            args.append("--direct_num_workers=1")  # one worker in this process, whatever direct_num_workers says
        elif pre.direct_num_workers:
            args.append(f"--direct_num_workers={pre.direct_num_workers}")
        else:
            args.append("--direct_num_workers=0")  # Beam: one worker per core
        return args
    flow = pre.dataflow
    assert flow is not None  # the config validator guarantees it
    args = [
        "--runner=DataflowRunner",
        f"--project={flow.project}",
        f"--region={flow.region}",
        f"--temp_location={flow.temp_location}",
        f"--staging_location={flow.staging_location or flow.temp_location.rstrip('/') + '/staging'}",
        f"--worker_machine_type={flow.machine_type}",
        f"--max_num_workers={flow.max_workers}",
        f"{JOB_NAME_FLAG}{job_name or dataflow_job_name(config.name)}",
    ]
    if dataflow_kms_key:
        args.append(f"--dataflow_kms_key={dataflow_kms_key}")
    if flow.worker_image:
        args += [f"--sdk_container_image={flow.worker_image}", "--experiments=use_runner_v2"]
    if flow.num_workers:
        args.append(f"--num_workers={flow.num_workers}")
    if flow.service_account:
        args.append(f"--service_account_email={flow.service_account}")
    if flow.network:
        args.append(f"--network={flow.network}")
    if flow.subnetwork:
        args.append(f"--subnetwork={flow.subnetwork}")
    if not flow.use_public_ips:
        args.append("--no_use_public_ips")
    if flow.disk_size_gb:
        args.append(f"--disk_size_gb={flow.disk_size_gb}")
    return args


def compiled_beam_args(config: AdrankConfig) -> list[str]:
    """The argv the Vertex DAG compiles into its preprocess step: the step's slice of the config, and the Vertex
    section's CMEK key (`vertex.encryption_spec_key_name`), which the slice does not carry."""
    vertex = config.vertex
    return beam_pipeline_args(PreprocessStepConfig.of(config),
                              dataflow_kms_key=vertex.encryption_spec_key_name if vertex is not None else None)


OptionsView = TypeVar("OptionsView", bound=PipelineOptions)


class StepPipelineOptions(PipelineOptions):
    """Beam's `PipelineOptions`, with one view per options class.

    Beam's `view_as(cls)` builds a new view at every call: an argparse parser holding every option of `cls`,
    then a parse of the argv. Beam asks for a view at each transform it applies, each type check and each name
    it infers, ~1,800 times while the preprocess pipeline is built and handed to the runner: about 1 s of a 5 s
    step at 10^4 impressions (docs/input.md). Views share one dict of values (Beam's design: a value set through
    any view is read through every other), so the view kept for a class reads and writes exactly what a new one
    would; what it saves is the parser.

    Pickled without the kept views: Beam's `__getstate__` blanks `impersonate_service_account` in what it
    pickles, and a kept view would carry the unblanked dict along."""

    def view_as(self, cls: type[OptionsView]) -> OptionsView:
        views = self.__dict__.setdefault("_views", {})  # PipelineOptions.__setattr__ refuses unknown names
        view = views.get(cls)
        if view is None:
            view = views[cls] = super().view_as(cls)
        return view

    def __getstate__(self) -> dict[str, Any]:
        state = dict(super().__getstate__())
        state.pop("_views", None)
        return state


def step_pipeline_options(args: list[str]) -> StepPipelineOptions:
    return StepPipelineOptions(list(args))


def beam_pipeline_options(config: PreprocessStepConfig, job_name: str | None = None,
                          extra_args: list[str] | None = None) -> StepPipelineOptions:
    return step_pipeline_options(beam_pipeline_args(config, job_name) + list(extra_args or ()))


def runs_on_dataflow(options: PipelineOptions) -> bool:
    from apache_beam.options.pipeline_options import StandardOptions

    return options.view_as(StandardOptions).runner == "DataflowRunner"


def temp_location(options: PipelineOptions, local_fallback: str) -> str:
    """Where tf.Transform stages analyzer output: on Dataflow under the job's temp_location, else locally."""
    if runs_on_dataflow(options):
        from apache_beam.options.pipeline_options import GoogleCloudOptions

        return options.view_as(GoogleCloudOptions).temp_location.rstrip("/") + "/tft"
    return local_fallback
