"""Dataflow, on this machine: a task whose Beam argv says `--runner=DataflowRunner` runs with the DirectRunner.

The compiled argv is checked first, so what would fail on Dataflow fails here:
  * every flag must be one Beam knows (a typo would be dropped by Beam with only a warning, then the job runs
    without it);
  * each flag must be a Dataflow setting this module knows (`DATAFLOW_ONLY`: checked, then not passed on,
    since the DirectRunner has no workers, network or images) or one the DirectRunner honours too
    (`KEPT`); any other flag is an error rather than silently dropped;
  * the values Dataflow validates at submission: project and region present, temp/staging locations
    `gs://bucket/...`, a job name in Dataflow's alphabet, positive worker counts and disk size.
Beam's own `PipelineOptionsValidator` is not used: it asks Google for credentials, which a machine without a
project cannot answer. `--temp_location` is passed on as the local directory its gs:// URI maps to.
"""

from __future__ import annotations

import json
import re

from ops.spec_executor.storage import CloudStorageRoot

RUNNER_FLAG = "--runner"
DATAFLOW_ONLY = {
    "project", "region", "staging_location", "worker_machine_type", "machine_type", "max_num_workers",
    "num_workers", "dataflow_kms_key", "sdk_container_image", "experiments", "service_account_email",
    "subnetwork", "network", "use_public_ips", "no_use_public_ips", "disk_size_gb", "worker_region",
    "worker_zone", "autoscaling_algorithm", "labels", "save_main_session", "setup_file", "requirements_file",
}
KEPT = {"job_name"}
# The output parameter a step that launches Dataflow writes its job to, in GCPC's GcpResources JSON: the Vertex
# console links the job from it (components.preprocess.dataflow_job writes it).
GCP_RESOURCES_OUTPUT = "gcp_resources"
JOB_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
GCS_PATH = re.compile(r"^gs://[a-z0-9][-_.a-z0-9]*[a-z0-9](/.*)?$")


class DataflowArgsError(ValueError):
    """The compiled Beam argv would fail on Dataflow, or has a flag this stand-in cannot honour."""


def beam_argv(value) -> list[str] | None:
    """The argv when `value` is a JSON list of Beam flags for the DataflowRunner, else None."""
    if not isinstance(value, str) or not value.startswith("["):
        return None
    try:
        argv = json.loads(value)
    except json.JSONDecodeError:
        return None
    if not isinstance(argv, list) or not all(isinstance(a, str) and a.startswith("--") for a in argv):
        return None
    return argv if "--runner=DataflowRunner" in argv else None


def check_gcp_resources_output(task: str, executor_input: dict) -> None:
    """A task that launches a Dataflow job must declare the `gcp_resources` output parameter, or the Vertex console
    shows no link to the job."""
    if GCP_RESOURCES_OUTPUT not in executor_input.get("outputs", {}).get("parameters", {}):
        raise DataflowArgsError(f"task '{task}' launches a Dataflow job but has no '{GCP_RESOURCES_OUTPUT}' output "
                                "parameter: the Vertex console could not link the job")


def _flag_name(arg: str) -> str:
    return arg[2:].split("=", 1)[0]


def _beam_parser():
    from apache_beam.options.pipeline_options import PipelineOptions, _BeamArgumentParser

    parser = _BeamArgumentParser(allow_abbrev=False)
    for options_class in {str(c): c for c in PipelineOptions.__subclasses__()}.values():
        options_class._add_argparse_args(parser)
    return parser


def direct_runner_argv(task: str, argv: list[str], storage: CloudStorageRoot, running_mode: str,
                       num_workers: int) -> list[str]:
    """The DirectRunner argv standing in for the Dataflow one, after checking the Dataflow one."""
    known, unknown = _beam_parser().parse_known_args(argv)
    if unknown:
        raise DataflowArgsError(f"task '{task}': Beam does not know {unknown} (Beam would drop them silently)")
    problems = []
    for arg in argv:
        name = _flag_name(arg)
        if name not in DATAFLOW_ONLY | KEPT | {"runner", "temp_location"}:
            problems.append(f"{arg}: not a Dataflow setting this executor checks, and the DirectRunner "
                            "would not honour it")
    if not known.project:
        problems.append("--project is missing")
    if not known.region:
        problems.append("--region is missing (Dataflow needs a regional endpoint)")
    for name in ("temp_location", "staging_location"):
        value = getattr(known, name, None)
        if name == "temp_location" and not value:
            problems.append("--temp_location is missing")
        elif value and not GCS_PATH.match(value):
            problems.append(f"--{name}={value}: Dataflow needs a gs://bucket/path")
    if known.job_name and not JOB_NAME.match(known.job_name):
        problems.append(f"--job_name={known.job_name}: Dataflow job names match {JOB_NAME.pattern}")
    for name in ("num_workers", "max_num_workers", "disk_size_gb"):
        value = getattr(known, name, None)
        if value is not None and value < 1:
            problems.append(f"--{name}={value}: must be positive")
    if problems:
        raise DataflowArgsError(f"task '{task}': the Dataflow options would fail: " + "; ".join(problems))
    local = ["--runner=DirectRunner", f"--direct_running_mode={running_mode}",
             f"--direct_num_workers={num_workers}",
             f"--temp_location={storage.local_path(known.temp_location)}"]
    local += [arg for arg in argv if _flag_name(arg) in KEPT]
    return local
